"""Core metadata of a wheel on an index without PEP 658 files, at a bounded memory cost.

As pip's lazy wheel and uv do: ask for the last bytes of the file (``Range: bytes=-N``), where a
zip keeps its central directory, and read ``*.dist-info/METADATA`` through a file object that
fetches only the ranges :mod:`zipfile` seeks to. A server that ignores ranges (200) has the
body streamed to a temporary file, hashed on the way, then read and deleted. Either way no body
stays in memory: peak use does not grow with the wheel.
"""

from __future__ import annotations

import hashlib
import io
import re
import tempfile
import zipfile
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from dtkguard.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.resolve.http import Fetcher, Streamed


class _Link(Protocol):
    """What is read and filled of a `dtkguard.resolve.sources.FileLink` (named here, not
    imported: sources imports this module)."""

    url: str | None
    filename: str
    hashes: dict[str, str]
    size: int | None


#: the first request: the tail, where the central directory and (often) METADATA are
TAIL = 64 << 10
#: a later request fetches at least this much
CHUNK = 64 << 10
_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")
_METADATA = re.compile(r"[^/]+\.dist-info/METADATA")


def read_zip_metadata(data: bytes | Path | BinaryIO | io.RawIOBase) -> bytes:
    """The ``*.dist-info/METADATA`` of a wheel given as bytes, a path or a seekable file."""
    src = io.BytesIO(data) if isinstance(data, bytes) else data
    with zipfile.ZipFile(src) as zf:
        names = [n for n in zf.namelist() if _METADATA.fullmatch(n)]
        if len(names) != 1:
            raise ValueError("expected exactly one .dist-info/METADATA")
        return zf.read(names[0])


class _Ranges(io.RawIOBase):
    """A read-only, seekable view of a remote file, fetched range by range (kept: what
    :mod:`zipfile` read, a few hundred KiB at most for core metadata)."""

    def __init__(self, fetcher: Fetcher, url: str, size: int, first: tuple[int, bytes]) -> None:
        self._fetcher, self._url, self._size = fetcher, url, size
        self._pos = 0
        self._pieces: list[tuple[int, bytes]] = [first]
        self.requests = 1

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def _have(self, start: int, end: int) -> bytes | None:
        for at, data in self._pieces:
            if at <= start and end <= at + len(data):
                return data[start - at : end - at]
        return None

    def read(self, n: int = -1) -> bytes:
        end = self._size if n is None or n < 0 else min(self._size, self._pos + n)
        if end <= self._pos:
            return b""
        data = self._have(self._pos, end)
        if data is None:
            stop = min(self._size, max(end, self._pos + CHUNK))
            self._pieces.append((self._pos, self._get(self._pos, stop)))
            data = self._have(self._pos, end) or b""
        self._pos += len(data)
        return data

    def readinto(self, buf: Any) -> int:
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)

    def _get(self, start: int, stop: int) -> bytes:
        self.requests += 1
        with self._fetcher.stream(self._url, Range=f"bytes={start}-{stop - 1}") as resp:
            if resp.status != 206:
                raise InputError(f"range request answered HTTP {resp.status}", self._url)
            return resp.read(stop - start)


def read_metadata(fetcher: Fetcher, link: _Link) -> bytes:
    """METADATA of the wheel ``link`` (fills ``link.size``, and ``link.hashes`` when a full
    download was needed and the listing had no sha256)."""
    url = link.url
    assert url is not None  # a `sources.SimpleIndex` link (it asserts so too)
    with fetcher.stream(url, Range=f"bytes=-{TAIL}") as resp:
        if resp.status == 206:
            m = _RANGE.fullmatch(resp.headers.get("content-range", ""))
            if m is None:
                raise InputError("range answer without a valid Content-Range", url)
            start, size = int(m.group(1)), int(m.group(3))
            first = (start, resp.read(size - start))
        elif resp.status == 200:
            return _from_full_body(resp, link)
        else:
            raise InputError(f"cannot download {link.filename}: HTTP {resp.status}", url)
    link.size = link.size or size
    return read_zip_metadata(_Ranges(fetcher, url, size, first))


def _from_full_body(resp: Streamed, link: _Link) -> bytes:
    digest = hashlib.sha256()
    size = 0
    with tempfile.TemporaryFile(prefix="dtkguard-wheel-") as tmp:
        for chunk in iter(lambda: resp.read(1 << 20), b""):
            digest.update(chunk)
            tmp.write(chunk)
            size += len(chunk)
        tmp.seek(0)
        raw = read_zip_metadata(tmp)
    link.size = link.size or size
    if not link.hashes.get("sha256"):
        link.hashes["sha256"] = digest.hexdigest()
    return raw


def sha256_of(fetcher: Fetcher, link: _Link) -> tuple[str, int]:
    """(sha256, size) of the file at ``link.url``, streamed (never held in memory)."""
    digest = hashlib.sha256()
    size = 0
    assert link.url is not None  # a `sources.SimpleIndex` link (its `complete`)
    with fetcher.stream(link.url) as resp:
        if resp.status != 200:
            raise InputError(f"cannot download {link.filename}: HTTP {resp.status}", link.url)
        for chunk in iter(lambda: resp.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size
