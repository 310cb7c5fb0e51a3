"""What is read out of a file, kept by the file's stat for the next run.

An entry is the file's (device, inode, size, mtime, ctime) when it was read and what was read:
it is believed while the file's stat is still that one. Writing, truncating, renaming over or
linking a file moves its ctime, so a changed file is read again even with the same size and
mtime; a file changed within a timestamp's granularity (`RACY_NS`) of its read may change again
without its stat moving: it is not kept (git's "racy" index entries). The cache is one JSON
file in its own folder under `dtkguard.util.cache_dir.cache_root`: one that is not ours, or
unreadable, or holds an entry of the wrong shape, is a miss, never an error; writing it is best
effort.
"""

from __future__ import annotations

import os

from dtkguard.util.text import dumps, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, TypeVar

    from dtkguard.util.json_types import JSON

    T = TypeVar("T")

#: a file changed this recently (ns) may change again within its timestamp's granularity
#: without its stat changing: what was read of it is not kept
RACY_NS = 2_000_000_000


def stamp(st: os.stat_result) -> list[int]:
    """What an entry keeps of a file's stat: device, inode, size, mtime and ctime (a rewrite in
    place with the mtime put back still moves the ctime; nothing sets it back)."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def settled(st: os.stat_result, now: int | None = None) -> bool:
    """May what was read of the file of stat ``st`` be kept: its ctime is `RACY_NS` old.
    ``now``: `time.time_ns` taken once for many files."""
    import time

    return (time.time_ns() if now is None else now) - st.st_ctime_ns >= RACY_NS


def cache_file(name: str, scope: Iterable[str], sources: Iterable[str]) -> str:
    """The cache file ``name`` of ``scope`` (the site folders it is about), as read by the code
    of ``sources`` (`dtkguard.util.memo.code_stamp`: another release or an edited checkout
    reads into another file, never an answer of other code):
    ``<cache root>/<name>/<sha256 of both, 32 hex digits>.json``."""
    from dtkguard.util.cache_dir import cache_root_text
    from dtkguard.util.memo import code_stamp
    from dtkguard.util.sha import sha256_hex

    key = dumps([sorted(scope), code_stamp(sources)]).encode("utf-8", "surrogateescape")
    return os.path.join(cache_root_text(), name, sha256_hex(key)[:32] + ".json")


def load(path: str) -> dict[str, Any]:
    """The table of the cache file ``path``; {} when it cannot be believed or read (absent,
    unreadable, not JSON, no table, or in a folder another user could write: checked before
    opening it, as there a FIFO could hang us)."""
    from dtkguard.util.cache_dir import trusted_text

    if not trusted_text(os.path.dirname(path)):
        return {}
    try:
        with open(path, "rb") as fh:
            data = loads(fh.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def keep(path: str, table: dict[str, Any]) -> None:
    """Write the table of the cache file ``path`` (0600 in a 0700 folder); best effort (a
    cache that cannot be written is read again)."""
    import contextlib

    from dtkguard.util.atomic import atomic_write_text
    from dtkguard.util.cache_dir import private_dir_text
    from dtkguard.util.purepath import pure_path

    with contextlib.suppress(OSError, ValueError, TypeError):
        private_dir_text(pure_path(os.path.dirname(path)))
        atomic_write_text(
            path, dumps(table, separators=(",", ":")), 0o600, through=False, durable=False
        )


def kept(
    name: str,
    scope: Iterable[str],
    files: Iterable[str],
    read: Callable[[str], T],
    check: Callable[[JSON], T | None],
    sources: Iterable[str],
) -> dict[str, T]:
    """{file: ``read(file)``} of each of ``files``, from the cache ``name`` (one per ``scope``,
    the site folders it is about, and ``sources``, the code ``read`` runs: `cache_file`) where
    the file's stat is the one it was read at, else read (and kept for the next run when it is
    `settled`). ``check``: a kept value (JSON: what
    ``read`` returns is kept as is), or None when it is not one (a miss). A file that is no
    regular file is read every time."""
    import stat
    import time

    path = cache_file(name, scope, sources)
    old = load(path)
    new: dict[str, JSON] = {}
    out: dict[str, T] = {}
    now = time.time_ns()
    for file in files:
        try:
            st = os.lstat(file)
        except OSError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            out[file] = read(file)
            continue
        key = stamp(st)
        hit = old.get(file)
        value = None
        if isinstance(hit, list) and len(hit) == 2 and hit[0] == key:
            value = check(hit[1])
        if value is None:
            value = read(file)
        out[file] = value
        if settled(st, now):
            new[file] = [key, value]
    if new != old:
        keep(path, new)
    return out
