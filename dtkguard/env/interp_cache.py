"""What an interpreter reported about itself, kept while the interpreter is the same file.

`describe_python` runs a short snippet in the target (``-I -S``: no site, no ``.pth``, none of
the target's code) for its prefix and the sys.path without site; that answer depends only on
the interpreter and its ``pyvenv.cfg``, so it is kept in ``<cache root>/interpreters/`` (one
file per interpreter path) with a stamp: the path, ``lstat`` of the interpreter and ``stat`` of
what it resolves to (inode, size, mtime, ctime: ``os.utime`` cannot set a ctime back), the
``pyvenv.cfg`` files ``site`` would read, and the variables and ids the user site depends on.
The stamp is taken again on every use: any difference is a miss, and the interpreter is asked.
The ``.pth`` files are never cached (`dtkguard.env.pth` reads them on every run).
"""

from __future__ import annotations

import os

from dtkguard.util.sha import sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

FORMAT = "dtkguard-interpreter/1"


def _stat(path: str, follow: bool) -> list[int] | None:
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def stamp(python: str) -> list[object]:
    """What the interpreter's answer depends on, as it is now."""
    exe = os.path.abspath(python)
    bindir = os.path.dirname(exe)
    cfgs = [os.path.join(bindir, "pyvenv.cfg"), os.path.join(os.path.dirname(bindir), "pyvenv.cfg")]
    env = [os.environ.get(k) for k in ("PYTHONNOUSERSITE", "PYTHONUSERBASE", "HOME")]
    ids = [os.getuid(), os.geteuid(), os.getgid(), os.getegid()]
    return [
        exe,
        _stat(exe, False),
        os.path.realpath(exe),
        _stat(exe, True),
        [_stat(c, True) for c in cfgs],
        env,
        ids,
    ]


def _file(python: str, question: str = "") -> str:
    from dtkguard.util.cache_dir import cache_root_text

    key = sha256_hex(os.fsencode(os.path.abspath(python)))
    name = f"{key}{'.' + question if question else ''}.json"
    return os.path.join(cache_root_text(), "interpreters", name)


def cached(python: str, ask: Callable[[], list[str]], question: str = "") -> list[str]:
    """``ask()`` (the interpreter's answer, a list of strings), or the kept answer when the
    stamp is the same as when it was kept; ``question`` names what ``ask`` asks when it is
    not the sys.path of `dtkguard.env.environment.describe_python` (one file per question)."""
    now = stamp(python)
    path = _file(python, question)
    from dtkguard.util.cache_dir import trusted_text
    from dtkguard.util.text import loads

    try:
        if not trusted_text(os.path.dirname(path)):
            raise OSError("the cache folder is writable by others")
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            entry = loads(fh.read())
        if (
            isinstance(entry, dict)
            and entry.get("format") == FORMAT
            and entry.get("stamp") == now
            and isinstance(entry.get("facts"), list)
            and all(isinstance(v, str) for v in entry["facts"])
        ):
            kept: list[str] = entry["facts"]  # checked above: a list of str
            return kept
    except (OSError, ValueError):
        pass
    facts = ask()
    if now[1] is not None and now == stamp(python):  # unchanged while it was asked
        import contextlib

        from dtkguard.util.atomic import atomic_write_text
        from dtkguard.util.cache_dir import private_dir_text
        from dtkguard.util.text import dumps

        with contextlib.suppress(OSError, ValueError, UnicodeError):
            private_dir_text(os.path.dirname(path))
            text = dumps({"format": FORMAT, "stamp": now, "facts": facts})
            atomic_write_text(path, text, 0o600, through=False, durable=False)
    return facts
