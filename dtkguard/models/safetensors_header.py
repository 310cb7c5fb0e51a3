"""Read the JSON header of a safetensors file, and nothing else.

Layout: 8 bytes little-endian header length N, N bytes of UTF-8 JSON, then the tensor buffer.
The length is checked against the file size and a cap before anything is allocated; the JSON
is parsed strictly (duplicate keys rejected); offsets must lie inside the buffer.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field

#: the largest header we accept (the Hub uses 25 MB; the Rust reader 100 MB)
MAX_HEADER = 100_000_000
#: the schema limits shapes and offsets to 48-bit integers
MAX_INT = (1 << 48) - 1


class HeaderError(ValueError):
    """The file is not a readable safetensors file. ``str()`` is one line."""


@dataclass(frozen=True)
class TensorInfo:
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass
class SafetensorsHeader:
    path: str
    header_len: int
    file_size: int
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def bytes_read(self) -> int:
        return 8 + self.header_len


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise HeaderError(f"duplicate key {key!r} in header")
        out[key] = value
    return out


def _reject_constant(name: str) -> object:
    raise HeaderError(f"non-standard JSON constant {name} in header")


def read_header(path: str | os.PathLike[str], cap: int = MAX_HEADER) -> SafetensorsHeader:
    """Parse the header of ``path``. Raises :class:`HeaderError` (or OSError) on bad input."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(8)
        if len(head) != 8:
            raise HeaderError(f"truncated: {size} bytes, no 8-byte header length")
        (n,) = struct.unpack("<Q", head)
        if n < 2:
            raise HeaderError(f"header length {n} is too small")
        if n > cap:
            raise HeaderError(f"header length {n} exceeds the cap of {cap} bytes")
        if 8 + n > size:
            raise HeaderError(f"header length {n} runs past the end of the {size}-byte file")
        raw = fh.read(n)
    if len(raw) != n:
        raise HeaderError("truncated header")
    if raw[:1] != b"{":
        raise HeaderError("header does not start with '{'")
    try:
        text = raw.decode("utf-8")
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise HeaderError("header is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise HeaderError(f"header is not JSON: {exc.msg} at byte {exc.pos}") from None
    if not isinstance(data, dict):
        raise HeaderError("header is not a JSON object")
    return _validate(str(path), n, size, data)


def _validate(path: str, n: int, size: int, data: dict) -> SafetensorsHeader:
    buffer_len = size - 8 - n
    out = SafetensorsHeader(path=path, header_len=n, file_size=size)
    meta = data.pop("__metadata__", None)
    if meta is not None:
        if not isinstance(meta, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in meta.items()
        ):
            raise HeaderError("__metadata__ must map strings to strings")
        out.metadata = meta
    for name, info in data.items():
        if not isinstance(info, dict):
            raise HeaderError(f"tensor {name!r}: entry is not an object")
        dtype = info.get("dtype")
        shape = info.get("shape")
        offsets = info.get("data_offsets")
        if not isinstance(dtype, str) or not dtype:
            raise HeaderError(f"tensor {name!r}: missing dtype")
        if not isinstance(shape, list) or not all(_is_int(d) for d in shape):
            raise HeaderError(f"tensor {name!r}: shape must be a list of non-negative integers")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(_is_int(o) for o in offsets)
        ):
            raise HeaderError(f"tensor {name!r}: data_offsets must be two non-negative integers")
        begin, end = offsets
        if begin > end or end > buffer_len:
            raise HeaderError(
                f"tensor {name!r}: data_offsets [{begin}, {end}] outside the "
                f"{buffer_len}-byte buffer"
            )
        out.tensors[name] = TensorInfo(dtype, tuple(shape), begin, end)
    return out


def _is_int(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_INT
