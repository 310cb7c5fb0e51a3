"""Atomic file writes: write a temporary file beside the target, fsync, rename (a cache,
validated on use, skips the fsync).

Only regular files are replaced: a symlink is followed to the file it names, and a device,
FIFO or socket (``-o /dev/null``, ``-o /dev/stdout``, a pipe) is written through, never
replaced by a regular file.
"""

from __future__ import annotations

import contextlib
import os
import stat

from dtkguard.util.purepath import name, parent, pure_path


def temp_file(folder: str | os.PathLike[str], prefix: str, suffix: str = "") -> tuple[int, str]:
    """(descriptor, path) of a new file in ``folder``, mode 0600, made as `tempfile.mkstemp`
    makes one (``O_EXCL``, no symlink followed) without importing tempfile (and shutil, bz2,
    lzma, random) on every command that writes a file."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        path = os.path.join(os.fspath(folder), f"{prefix}{os.urandom(8).hex()}{suffix}")
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {os.fspath(folder)}")


def atomic_write_bytes(
    path: str | os.PathLike[str],
    data: bytes,
    mode: int | None = None,
    *,
    through: bool = True,
    durable: bool = True,
) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half.

    ``through=False`` (files dtkguard owns, such as caches) replaces whatever is at ``path``,
    a symlink, FIFO or device included, instead of writing through it. ``durable=False`` (a
    cache, validated on use): no fsync, so a power loss may leave the old file or an empty
    one, which its reader takes as a miss (an fsync costs milliseconds on some disks, 10 ms on
    this project's CI machines, and a `dtkpip install` rewrites two caches).
    """
    target = pure_path(os.path.realpath(path) if through else os.path.abspath(path))
    try:
        current = os.stat(target) if through else os.lstat(target)
    except FileNotFoundError:
        current = None
    if current is not None and not stat.S_ISREG(current.st_mode) and through:
        with open(target, "wb") as fh:  # a device or pipe: there is nothing to replace
            fh.write(data)
        return
    fd, tmp = temp_file(parent(target), f".{name(target)}.", ".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif current is not None and stat.S_ISREG(current.st_mode):
            os.chmod(tmp, current.st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(
    path: str | os.PathLike[str],
    text: str,
    mode: int | None = None,
    *,
    through: bool = True,
    durable: bool = True,
) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode, through=through, durable=durable)
