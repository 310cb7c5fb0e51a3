"""Open and read files that may be hostile: FIFOs, devices, sockets, huge files.

Every file dtkguard reads from a user, an image or a node goes through here. A path is opened
non-blocking (a FIFO without a writer does not hang the open), anything that is not a regular
file is refused (``/dev/zero`` reports ``st_size`` 0 and never ends), and reads are capped by the
bytes actually read, never by ``st_size``.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing costs ~2 ms at start-up (dtkpip, check); annotations are lazy
if TYPE_CHECKING:
    from typing import Any, BinaryIO

#: how a non-regular file is named in errors
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFile(OSError):
    """The path names a FIFO, device, socket or directory."""


class TooLarge(OSError):
    """The file holds more than the limit allows; ``limit`` is that limit in bytes."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


def human_bytes(n: int) -> str:
    """``1048576`` -> ``1 MiB`` (exact units only; otherwise bytes)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(
    path: str | os.PathLike[str],
    *,
    follow: bool = True,
    buffering: int = 0,
    root: object | None = None,
) -> BinaryIO:
    """A binary file object of a regular file; `NotRegularFile` for anything else.

    ``follow=False`` refuses a final symlink (``O_NOFOLLOW``), for paths already resolved by hand
    inside a root. ``buffering`` as for `open` (0: unbuffered, the default; -1: buffered).
    ``root``: a `dtkguard.env.root.Root` whose ``open`` opens ``path`` confined to it.
    """
    fd, _ = _regular_fd(path, follow, root)
    try:
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def regular_fd(
    path: str | os.PathLike[str], *, follow: bool = True, root: object | None = None
) -> tuple[int, int]:
    """(descriptor, fstat size) of a regular file, opened as `open_regular` opens it, without
    a file object (the caller closes the descriptor); `NotRegularFile` for anything else."""
    fd, st = _regular_fd(path, follow, root)
    return fd, st.st_size


def _regular_fd(
    path: str | os.PathLike[str], follow: bool, root: Any
) -> tuple[int, os.stat_result]:
    """(descriptor, fstat) of a regular file, opened as `open_regular` opens it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if root is not None:
        fd = root.open(path, flags, follow=follow)
    else:
        fd = os.open(path, flags | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"not a regular file ({_kind(st.st_mode)})")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _read_fd(fd: int, limit: int, size: int) -> bytes:
    """Up to ``limit`` bytes from ``fd``, counting what was actually read. Each read asks for
    what fstat's ``size`` says is left and one byte more, in one read however large (a read
    allocates what it asks for: a megabyte for a 1 KB file cost more than reading it, and 1 MiB
    chunks joined cost an 8 MiB index more than its parse), then a megabyte at a time past
    ``size`` (a file that grew, a /proc file of size 0); a short read that ends at ``size`` is
    the end (no read call to be told so)."""
    chunks = []
    left, total = limit, 0
    while left > 0:
        want = min(left, size - total + 1 if total < size else 1 << 20)
        chunk = os.read(fd, want)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
        total += len(chunk)
        if len(chunk) < want and total == size:
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_at_most(fh: BinaryIO, limit: int) -> bytes:
    """Up to ``limit`` bytes from ``fh``, counting what was actually read."""
    chunks = []
    left = limit
    while left > 0:
        chunk = fh.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_head(
    path: str | os.PathLike[str], limit: int, *, follow: bool = True, root: object | None = None
) -> bytes:
    """The first ``limit`` bytes of a regular file (the rest, if any, is not read)."""
    return read_head_stat(path, limit, follow=follow, root=root)[0]


def read_head_stat(
    path: str | os.PathLike[str], limit: int, *, follow: bool = True, root: object | None = None
) -> tuple[bytes, os.stat_result]:
    """`read_head`, with the fstat of the very file read (a stat-keyed cache's key)."""
    fd, st = _regular_fd(path, follow, root)
    try:
        return _read_fd(fd, limit, st.st_size), st
    finally:
        os.close(fd)


def read_capped(
    path: str | os.PathLike[str],
    limit: int,
    *,
    what: str = "file",
    follow: bool = True,
    root: object | None = None,
) -> bytes:
    """The whole of a regular file of at most ``limit`` bytes; `TooLarge` names the limit."""
    fd, st = _regular_fd(path, follow, root)
    try:
        data = _read_fd(fd, limit + 1, st.st_size)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise TooLarge(f"{what} larger than the limit of {human_bytes(limit)}", limit)
    return data


def read_text(
    path: str | os.PathLike[str], limit: int, *, what: str = "file", follow: bool = True
) -> str:
    """`read_capped` decoded as UTF-8 (`UnicodeDecodeError` propagates)."""
    return read_capped(path, limit, what=what, follow=follow).decode("utf-8")


def reason(exc: OSError) -> str:
    """A short reason for an error of this module or of the OS."""
    if isinstance(exc, (NotRegularFile, TooLarge)):
        return str(exc)
    return exc.strerror or str(exc)


class CountingReader:
    """A binary file object that counts the bytes its reads returned (``count``).

    Parsers that seek past data (zip members, GGUF arrays) report what they really read, not
    how far they got. Every other attribute is the wrapped file's.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.count = 0

    def _took(self, data: bytes) -> bytes:
        self.count += len(data)
        return data

    def read(self, n: int = -1) -> bytes:
        return self._took(self._raw.read(n))

    def read1(self, n: int = -1) -> bytes:
        # the raw file is buffered (`open_regular`); BinaryIO does not declare read1/readinto
        return self._took(self._raw.read1(n))  # type: ignore[attr-defined]

    def readline(self, limit: int = -1) -> bytes:
        return self._took(self._raw.readline(limit))

    def readinto(self, buffer: bytearray | memoryview) -> int:
        n = self._raw.readinto(buffer) or 0  # type: ignore[attr-defined]  # as read1 above
        self.count += n
        return n

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


#: the guard's JSON state files (manifest, record, txn.json, protected list, vault index, stat
#: cache) hold at most a few MiB; the baseline has its own limit
MAX_STATE_JSON = 16 << 20


def read_json(path: str | os.PathLike[str], limit: int = MAX_STATE_JSON, what: str = "file") -> Any:
    """A JSON state file read as `read_capped` reads (a regular file, never blocking, at most
    ``limit`` bytes) and parsed without RecursionError: `OSError` when it cannot be read (a
    FIFO, a folder, too large), `ValueError` when it is not JSON (nesting, huge integers)."""
    from dtkguard.util.text import json_loads

    return json_loads(read_capped(path, limit, what=what))
