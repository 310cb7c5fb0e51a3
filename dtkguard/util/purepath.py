"""Paths as text the way pathlib spells and tests them, for the paths that run most (dtkuv's
and dtkpip's satisfied answer, a cached `check`): importing pathlib imports `re`,
`urllib.parse`, `ipaddress` and `fnmatch`, more than such an answer costs. Each helper gives
what the pathlib expression it names gives (`tests/test_hand_parsers.py` runs both)."""

from __future__ import annotations

import errno
import os


def path_mode(path: str) -> int | None:
    """The mode ``os.stat`` gives, None where pathlib's ``exists`` says False (no such file,
    not a folder on the way, a symlink loop, a bad descriptor, a NUL in it); any other error
    (a folder that may not be read) is raised as pathlib raises it."""
    try:
        return os.stat(path).st_mode
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return None
        raise
    except ValueError:
        return None


def pure_path(value: str) -> str:
    """``str(pathlib.PurePosixPath(value))`` without importing pathlib (with `re`, `urllib`,
    `ipaddress`): empty and ``.`` parts and a trailing slash dropped, ``//`` kept as a root,
    ``..`` kept; ``.`` for nothing."""
    if value.startswith("/"):
        root = "//" if value.startswith("//") and not value.startswith("///") else "/"
    else:
        root = ""
    parts = [part for part in value.split("/") if part and part != "."]
    return root + "/".join(parts) or "."


def home() -> str:
    """``str(pathlib.Path.home())``: ``~`` expanded, `RuntimeError` when it cannot be."""
    path = os.path.expanduser("~")
    if path[:1] == "~":
        raise RuntimeError("Could not determine home directory.")
    return pure_path(path)


def is_dir(path: str) -> bool:
    """``pathlib.Path(path).is_dir()``: False where `path_mode` is None, errors as pathlib's."""
    import stat

    mode = path_mode(path)
    return mode is not None and stat.S_ISDIR(mode)


def is_file(path: str) -> bool:
    """``pathlib.Path(path).is_file()``."""
    import stat

    mode = path_mode(path)
    return mode is not None and stat.S_ISREG(mode)


def exists(path: str) -> bool:
    """``pathlib.Path(path).exists()``."""
    return path_mode(path) is not None


def resolve(path: str) -> str:
    """``str(pathlib.Path(path).resolve())``: its realpath; before Python 3.13 a symlink loop
    is pathlib's `RuntimeError`."""
    import sys

    real = pure_path(os.path.realpath(path))
    if sys.version_info < (3, 13):
        try:
            os.stat(real)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise RuntimeError(f"Symlink loop from {real!r}") from None
    return real


def join(base: str, *names: str) -> str:
    """``str(pathlib.PurePosixPath(base, *names))``: an absolute name starts again."""
    return pure_path(os.path.join(base, *names))


def parent(path: str) -> str:
    """``str(pathlib.PurePosixPath(path).parent)`` of a path `pure_path` spelled."""
    head, sep, _ = path.rpartition("/")
    if not sep:
        return "."
    return head if head.strip("/") else head + "/" if head else "/"


def name(path: str) -> str:
    """``pathlib.PurePosixPath(path).name`` of a path `pure_path` spelled (``""`` for a root
    or ``.``)."""
    last = path.rpartition("/")[2]
    return "" if last == "." else last


def stem(path: str) -> str:
    """``pathlib.PurePosixPath(path).stem``."""
    last = name(path)
    dot = last.rfind(".")
    return last[:dot] if 0 < dot < len(last) - 1 else last


def parts(value: str) -> tuple[str, ...]:
    """``pathlib.PurePosixPath(value).parts``: the root (``/``, ``//``) first, then the names."""
    path = pure_path(value)
    if path == ".":
        return ()
    root = "//" if path.startswith("//") else "/" if path.startswith("/") else ""
    names = path[len(root) :].split("/") if path != root else []
    return (root, *names) if root else tuple(names)


def name_matches(name: str, pattern: str) -> bool:
    """``fnmatch.fnmatchcase(name, pattern)``; ``fnmatch`` (with ``re``) is imported only for
    a pattern with ``?`` or ``[``: ``*`` alone is matched by hand."""
    if "?" in pattern or "[" in pattern:
        import fnmatch

        return fnmatch.fnmatchcase(name, pattern)
    pieces = pattern.split("*")
    if len(pieces) == 1:
        return name == pattern
    first, *middle, last = pieces
    if len(name) < len(first) + len(last) or not name.startswith(first):
        return False
    if not name.endswith(last):
        return False
    at, end = len(first), len(name) - len(last)
    for piece in middle:
        found = name.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return True
