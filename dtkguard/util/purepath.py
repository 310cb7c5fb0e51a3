"""Paths as text the way pathlib spells and tests them, for the paths that run most (dtkuv's
and dtkpip's satisfied answer): importing pathlib imports `re`, `urllib.parse`, `ipaddress`
and `fnmatch`, more than such an answer costs."""

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
