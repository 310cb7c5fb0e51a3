"""Hashing an installed file without following a FIFO or a device (`dtkguard.audit.verify`
checks installs with it against RECORD, the guard's baseline records and compares vendor
builds with it); RECORD's rows and digests are `dtkguard.records`'."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CHUNK = 1 << 20
#: files smaller than this are read in one read of their size (no buffer, no loop)
SMALL = 64 << 10

#: one read buffer per thread, reused for every file (allocating 1 MiB per file cost more
#: than hashing a small file); made on the first hash (threading is not imported before)
_LOCAL: Any = None
_CONSTRUCTORS: dict[str, Callable[[], Any]] = {}


def hash_file(host: str, algo: str, confined: bool | str) -> tuple[str, bytes, int, bytes]:
    """(status, digest, size, first bytes of a ``#!`` file); never blocks on FIFOs or devices.

    ``confined``: a final symlink is not followed (status ``symlink``); a string is the root
    the file is opened confined to (`dtkguard.env.root.open_in`)."""
    flags = os.O_RDONLY | os.O_NONBLOCK
    try:
        if isinstance(confined, str) and confined:
            from dtkguard.env.root import open_in

            fd = open_in(confined, host, flags, follow=False)
        else:
            fd = os.open(host, flags | (getattr(os, "O_NOFOLLOW", 0) if confined else 0))
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return "missing", b"", 0, b""
        if exc.errno == errno.ELOOP:
            return "symlink", b"", 0, b""
        return f"error:{exc.strerror}", b"", 0, b""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "notfile", b"", 0, b""
        h = _new_hash(algo)
        if st.st_size < SMALL:  # one read of the size and a byte more, hashed in one call
            data = os.read(fd, st.st_size + 1)
            h.update(data)
            head = data[:512] if data[:2] == b"#!" else b""
            if len(data) == st.st_size:  # a short read of the size fstat gave is the end
                return "ok", h.digest(), len(data), head
            return _rest(fd, h, len(data), st.st_size, head)
        buf = _buffer()
        view = memoryview(buf)
        n = os.readv(fd, (buf,))
        head = bytes(view[: min(n, 512)]) if n >= 2 and buf[0] == 0x23 and buf[1] == 0x21 else b""
        total = 0
        while n:
            h.update(view[:n])
            total += n
            # a short read of the size fstat gave is the end: no read call to be told so
            n = 0 if total == st.st_size and n < len(buf) else os.readv(fd, (buf,))
        return "ok", h.digest(), total, head
    except OSError as exc:
        return f"error:{exc.strerror}", b"", 0, b""
    finally:
        os.close(fd)


def _rest(fd: int, h: Any, total: int, size: int, head: bytes) -> tuple[str, bytes, int, bytes]:
    """The small-file read of `hash_file` went on past the size fstat gave (the file grew) or
    stopped short of it: the rest, read as a large file's."""
    buf = _buffer()
    view = memoryview(buf)
    n = os.readv(fd, (buf,)) if total else 0
    while n:
        h.update(view[:n])
        total += n
        n = 0 if total == size and n < len(buf) else os.readv(fd, (buf,))
    return "ok", h.digest(), total, head


def _buffer() -> bytearray:
    global _LOCAL
    if _LOCAL is None:
        import threading

        _LOCAL = threading.local()
    buf = getattr(_LOCAL, "buf", None)
    if buf is None:
        buf = _LOCAL.buf = bytearray(CHUNK)
    return buf


def _new_hash(algo: str) -> Any:
    make = _CONSTRUCTORS.get(algo)
    if make is None:
        import hashlib  # here: a check that hashes no file loads no OpenSSL

        make = getattr(hashlib, algo, None) or (lambda: hashlib.new(algo))
        _CONSTRUCTORS[algo] = make
    return make()
