"""A persistent cache of wheel core metadata (``METADATA`` bytes), shared by every run.

Entries live in ``<cache root>/metadata-v1/`` (see :mod:`dtkguard.util.cache_dir`), one file
each, named by the sha256 of their key:

- a find-links wheel: the sha256 of its bytes (size, mtime and inode are not trusted: a wheel
  rewritten in place with all three kept is a new key);
- an index wheel: the sha256 of its metadata file when the index lists one, else the sha256 of
  the wheel (content addressed; an index that lists neither is not cached).

Safe by construction rather than by trust: an entry is written to a temporary file and renamed
into place (concurrent runs see the old entry, the new one or none); on reading it must be a
regular file (not followed through a symlink), small, start with this module's header, repeat
its full key and match the sha256 it records, and the index's sha256 when there is one.
Anything else (corrupt, truncated, hostile, foreign) is a miss, and the metadata is read from
the source again. A cache folder that other users may write is not used at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
from pathlib import Path

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from typing import Any

MAGIC = b"dtkguard-metadata 1\n"
#: an entry larger than this is not read (core metadata is a few KiB; a README may make it more)
MAX_ENTRY = 8 << 20


def link_key(link: Any) -> tuple[str, str | None] | None:
    """(key, expected sha256 of the metadata or None) for a link, or None: do not cache.
    An sdist is keyed by its own sha256 (what its built metadata follows from)."""
    if getattr(link, "is_sdist", False):
        sha = link.hashes.get("sha256")
        if not sha and link.path is not None:
            got = _sha256_and_size(link.path)
            if got is None:
                return None
            sha = got[0]
        return (f"sdist-sha256\0{sha.lower()}", None) if sha else None
    if link.path is not None:
        digest = link.hashes.get("sha256")
        if not digest:
            got = _sha256_and_size(link.path)
            if got is None:
                return None
            # the lock needs the same digest: the bytes are read once per run
            digest, size = got
            link.hashes, link.size = {"sha256": digest}, size
        return f"wheel-sha256\0{digest}", None
    want = (link.metadata_hashes or {}).get("sha256") if link.metadata_url else None
    if want:
        return f"metadata-sha256\0{want.lower()}", want.lower()
    wheel = link.hashes.get("sha256")
    if wheel:
        return f"wheel-sha256\0{wheel.lower()}", None
    return None


def file_sha256(path: str | os.PathLike[str]) -> str | None:
    """Hex sha256 of a local wheel's bytes (the lock hashes it anyway): a wheel rewritten in
    place with the same size, mtime and inode is another key. None when it cannot be read."""
    got = _sha256_and_size(path)
    return None if got is None else got[0]


def _sha256_and_size(path: str | os.PathLike[str]) -> tuple[str, int] | None:
    from dtkguard.util.safe_read import open_regular

    h = hashlib.sha256()
    size = 0
    try:
        with open_regular(path) as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
                size += len(chunk)
    except OSError:
        return None
    return h.hexdigest(), size


class MetadataCache:
    """``get``/``put`` METADATA bytes by key; every failure is a miss, never an error.

    The same checked entry store holds other caches in their own folders (``FOLDER``): index
    pages (:mod:`.pagecache`) and whole resolutions (:mod:`dtkguard.lock.rescache`)."""

    FOLDER = "metadata-v1"

    def __init__(self, root: Path | None = None) -> None:
        if root is None:
            from dtkguard.util.cache_dir import cache_root

            root = cache_root()
        self.dir = Path(root) / self.FOLDER
        self.enabled = self._prepare()
        #: counts, kept under a lock: the resolver's warming threads ask too
        self.hits = 0
        self.misses = 0
        self._count_lock = threading.Lock()
        #: entries `put` while deferred (`defer`), by file, written by `flush`
        self._pending: dict[Path, bytes] | None = None
        self._pending_lock = threading.Lock()

    def _prepare(self) -> bool:
        try:
            from dtkguard.util.cache_dir import private_dir

            private_dir(self.dir)
            st = os.lstat(self.dir)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            return False  # a symlink or a file where the folder should be
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return False
        return not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)

    def _path(self, key: str) -> Path:
        """The entry's file: one folder for all of them (no fan-out: on a cold run making
        ~100 subfolders cost more system time than writing the entries)."""
        digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()
        return self.dir / digest

    def get(self, key: str, want_sha256: str | None = None) -> bytes | None:
        if not self.enabled:
            return None
        data = self._read(self._path(key))
        body = _unpack(data, key) if data is not None else None
        if body is not None and want_sha256 and hashlib.sha256(body).hexdigest() != want_sha256:
            body = None
        with self._count_lock:
            if body is None:
                self.misses += 1
            else:
                self.hits += 1
        return body

    def defer(self) -> None:
        """Keep what `put` gets in memory until `flush` (`get` reads it back, checked as an
        entry on disk is): a lock run's fetch and warming threads then create no files while
        they compete for the interpreter, and `flush` writes them one after the other."""
        with self._pending_lock:
            if self._pending is None:
                self._pending = {}

    def flush(self) -> None:
        """Write the deferred entries; a `put` after this writes at once again."""
        with self._pending_lock:
            pending, self._pending = self._pending, None
        for path, data in (pending or {}).items():
            self._write(path, data)

    def _read(self, path: Path) -> bytes | None:
        pending = self._pending
        if pending is not None:
            with self._pending_lock:
                data = pending.get(path)
            if data is not None:
                return data
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(path, flags)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY:
                return None
            with os.fdopen(fd, "rb", closefd=False) as fh:
                return fh.read(MAX_ENTRY + 1)
        except OSError:
            return None
        finally:
            os.close(fd)

    def put(self, key: str, body: bytes) -> None:
        if not self.enabled or len(body) > MAX_ENTRY - 4096:
            return
        path = self._path(key)
        digest = hashlib.sha256(body).hexdigest().encode()
        data = MAGIC + digest + b"\n" + key.encode("utf-8", "surrogateescape") + b"\n" + body
        with self._pending_lock:
            pending = self._pending
            if pending is not None:
                pending[path] = data
                return
        self._write(path, data)

    def _write(self, path: Path, data: bytes) -> None:
        from dtkguard.util.atomic import temp_file

        try:
            fd, tmp = temp_file(self.dir, ".tmp-")
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _unpack(data: bytes, key: str) -> bytes | None:
    """The body of an entry if its header, key and checksum all hold."""
    if not data.startswith(MAGIC) or len(data) > MAX_ENTRY:
        return None
    rest = data[len(MAGIC) :]
    digest, sep, rest = rest.partition(b"\n")
    if not sep:
        return None
    stored_key, sep, body = rest.partition(b"\n")
    if not sep or stored_key != key.encode("utf-8", "surrogateescape"):
        return None
    if hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    return body
