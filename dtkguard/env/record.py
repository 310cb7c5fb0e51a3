"""RECORD files: their rows, their digests, and hashing an installed file without following a
FIFO or a device (`dtkguard.audit.verify` checks installs with them, the guard's baseline
records and compares vendor builds with them)."""

from __future__ import annotations

import base64
import binascii
import csv
import errno
import hashlib
import os
import stat
from collections.abc import Iterator

CHUNK = 1 << 20


def rows_of(text: str) -> Iterator[list[str] | None]:
    """RECORD's CSV rows, one per line; None for a line that is not CSV (binary garbage)."""
    for line in text.replace("\0", "").splitlines():
        if not line.strip():
            continue
        try:
            yield next(csv.reader([line]))
        except (csv.Error, StopIteration):
            yield None


def decode_digest(algo: str, value: str) -> tuple[bytes, bool] | None:
    """The raw digest of a RECORD hash value, and whether it was (nonconforming) hex."""
    size = hashlib.new(algo).digest_size
    if len(value) == size * 2:
        try:
            return bytes.fromhex(value), True
        except ValueError:
            pass
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return None
    return (raw, False) if len(raw) == size else None


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
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "notfile", b"", 0, b""
        h = hashlib.new(algo)
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        total = 0
        head = b""
        with os.fdopen(fd, "rb", buffering=0, closefd=False) as f:
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                if total == 0 and buf[:2] == b"#!":
                    head = bytes(view[: min(n, 512)])
                h.update(view[:n])
                total += n
        return "ok", h.digest(), total, head
    except OSError as exc:
        return f"error:{exc.strerror}", b"", 0, b""
    finally:
        os.close(fd)
