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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import TypeVar

    from dtkguard.util.json_types import JSON

    T = TypeVar("T")

#: a file changed this recently (ns) may change again within its timestamp's granularity
#: without its stat changing: what was read of it is not kept
RACY_NS = 2_000_000_000


def kept(
    name: str,
    scope: Iterable[str],
    files: Iterable[str],
    read: Callable[[str], T],
    check: Callable[[JSON], T | None],
) -> dict[str, T]:
    """{file: ``read(file)``} of each of ``files``, from the cache ``name`` (one per ``scope``:
    the site folders it is about) where the file's stat is the one it was read at, else read
    (and kept for the next run when its stat is older than `RACY_NS`). ``check``: a kept value
    (JSON: what ``read`` returns is kept as is), or None when it is not one (a miss). A
    file that is no regular file is read every time."""
    import json
    import stat
    import time

    from dtkguard.util.cache_dir import cache_root_text, trusted_text
    from dtkguard.util.sha import sha256_hex

    folder = os.path.join(cache_root_text(), name)
    path = os.path.join(folder, sha256_hex("\0".join(sorted(scope)).encode())[:32] + ".json")
    old = {}
    if trusted_text(folder):  # before opening: in a folder of others', a FIFO could hang us
        try:
            with open(path, "rb") as fh:
                old = json.loads(fh.read())
        except (OSError, ValueError):
            old = {}
    if not isinstance(old, dict):
        old = {}
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
        stamp = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        hit = old.get(file)
        value = None
        if isinstance(hit, list) and len(hit) == 2 and hit[0] == stamp:
            value = check(hit[1])
        if value is None:
            value = read(file)
        out[file] = value
        if now - st.st_ctime_ns >= RACY_NS:
            new[file] = [stamp, value]
    if new != old:
        _keep(folder, path, new)
    return out


def _keep(folder: str, path: str, entries: dict[str, JSON]) -> None:
    """Write the cache; best effort (a cache that cannot be written is read again)."""
    import contextlib
    import json
    from pathlib import Path

    from dtkguard.util.atomic import atomic_write_text
    from dtkguard.util.cache_dir import private_dir

    with contextlib.suppress(OSError, ValueError):
        private_dir(Path(folder))
        atomic_write_text(path, json.dumps(entries, separators=(",", ":")), 0o600, through=False)
