"""GGUF header: the tensor types, read without touching tensor data.

Layout: ``GGUF`` magic, u32 version, u64 tensor count, u64 key/value count, the key/values,
then per tensor: name, u32 n_dims, u64 dims, u32 type, u64 offset. All little-endian.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from dataclasses import dataclass, field

from dtkguard.modelscan.dtypes import GGML_TYPES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.util.safe_read import CountingReader

MAX_TENSORS = 1_000_000
MAX_KV = 100_000
MAX_STRING = 16 * 1024 * 1024
MAX_ARRAY = 10_000_000
#: fixed-size key/value types: u8 i8 u16 i16 u32 i32 f32 bool . . u64 i64 f64
_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9


class GgufError(ValueError):
    """Not a readable GGUF header (one line)."""


@dataclass
class GgufHeader:
    path: str
    version: int
    types: Counter[str] = field(default_factory=Counter)
    architecture: str | None = None
    #: bytes read: magic, counts, key/values (arrays of fixed-size values are skipped, not
    #: read) and the tensor infos; never tensor data
    bytes_read: int = 0


def _read(fh: CountingReader, n: int) -> bytes:
    data = fh.read(n)
    if len(data) != n:
        raise GgufError("truncated header")
    return data


def _u32(fh: CountingReader) -> int:
    value: int = struct.unpack("<I", _read(fh, 4))[0]
    return value


def _u64(fh: CountingReader) -> int:
    value: int = struct.unpack("<Q", _read(fh, 8))[0]
    return value


def _string(fh: CountingReader, size: int) -> bytes:
    n = _u64(fh)
    if n > MAX_STRING or n > size:
        raise GgufError(f"string of {n} bytes")
    return _read(fh, n)


def _skip_value(fh: CountingReader, vtype: int, size: int, depth: int = 0) -> bytes | None:
    if vtype in _SIZES:
        _read(fh, _SIZES[vtype])
        return None
    if vtype == _STRING:
        return _string(fh, size)
    if vtype == _ARRAY and depth < 2:
        etype, count = _u32(fh), _u64(fh)
        if count > MAX_ARRAY:
            raise GgufError(f"array of {count} values")
        if etype in _SIZES:
            skip = _SIZES[etype] * count
            if fh.tell() + skip > size:
                raise GgufError("array runs past the end of the file")
            fh.seek(skip, os.SEEK_CUR)
        else:
            for _ in range(count):
                _skip_value(fh, etype, size, depth + 1)
        return None
    raise GgufError(f"unknown value type {vtype}")


def read_gguf(path: str | os.PathLike[str]) -> GgufHeader:
    """Tensor type histogram of a GGUF file."""
    from dtkguard.util.safe_read import CountingReader, open_regular

    with open_regular(path, buffering=-1) as raw:
        fh = CountingReader(raw)
        size = os.fstat(raw.fileno()).st_size
        if _read(fh, 4) != b"GGUF":
            raise GgufError("no GGUF magic")
        version = _u32(fh)
        if version not in (2, 3):
            raise GgufError(f"unsupported GGUF version {version}")
        n_tensors, n_kv = _u64(fh), _u64(fh)
        if n_tensors > MAX_TENSORS or n_kv > MAX_KV:
            raise GgufError(f"implausible counts: {n_tensors} tensors, {n_kv} keys")
        out = GgufHeader(path=str(path), version=version)
        for _ in range(n_kv):
            key = _string(fh, size)
            value = _skip_value(fh, _u32(fh), size)
            if key == b"general.architecture" and value is not None:
                out.architecture = value.decode("utf-8", "replace")
        for _ in range(n_tensors):
            _string(fh, size)
            n_dims = _u32(fh)
            if n_dims > 8:
                raise GgufError(f"tensor with {n_dims} dimensions")
            _read(fh, 8 * n_dims)
            ttype = _u32(fh)
            _u64(fh)
            out.types[GGML_TYPES.get(ttype, f"type{ttype}")] += 1
        out.bytes_read = fh.count
    return out
