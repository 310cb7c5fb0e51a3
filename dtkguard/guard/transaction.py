"""All or nothing for `guard install`: check every target path is writable before the first
write, and put back what was written when a later write fails anyway (a full disk, a race)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from dtkguard.errors import TargetError


def _unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be replaced atomically (written beside, renamed over); None if it can."""
    if os.path.lexists(path) and not (path.is_file() or path.is_symlink()):
        return "exists and is not a regular file"
    if path.exists() and not os.access(path, os.W_OK):
        return "not writable"
    folder = path.parent
    while not folder.exists():  # the nearest folder that exists is where mkdir starts
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):  # EROFS on a read-only mount, even for root
        return f"folder {folder} is not writable"
    return None


def require_writable(
    paths: Iterable[Path], doing: str = "cannot guard", done: str = "nothing was written"
) -> None:
    """`TargetError` (exit 3) naming the first path that cannot be written; nothing is written."""
    for path in paths:
        why = _unwritable(path)
        if why:
            raise TargetError(f"{doing}: {path}: {why}; {done}")


def _holds(path: Path, text: str) -> bool:
    try:
        return path.read_bytes() == text.encode("utf-8")
    except OSError:
        return False


def _overwrite(path: Path, text: str) -> None:
    """Write ``text`` over ``path`` in place: on a full disk there is no room for the file
    beside it an atomic write needs, but the blocks of the file itself are there."""
    with open(path, "r+b") as fh:
        fh.write(text.encode("utf-8"))
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


def roll_back(written: list[tuple[Path, str | None]]) -> list[str]:
    """Restore each written path to its previous content (None: remove it), newest first;
    returns the paths that could not be restored. A path that holds its previous content
    already (its write failed) is left alone; on a full disk a file is restored in place."""
    import errno

    from dtkguard.util.atomic import atomic_write_text

    failed = []
    for path, before in reversed(written):
        try:
            if before is None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            elif not _holds(path, before):
                try:
                    atomic_write_text(path, before)
                except OSError as exc:
                    if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or not path.is_file():
                        raise
                    _overwrite(path, before)
        except OSError:
            failed.append(str(path))
    return failed
