"""Read the JSON header of a safetensors file, and nothing else.

Layout: 8 bytes little-endian header length N, N bytes of UTF-8 JSON, then the tensor buffer.
The length is checked against the file size and a cap before anything is allocated; the JSON
is parsed strictly (duplicate keys rejected); offsets must lie inside the buffer. A compact
header (what the writers emit) takes `compact_json.header_tensors`, which accepts only what
the strict parse accepts, with the same result; anything else takes the strict parse.
"""

from __future__ import annotations

import json
import os
import struct
from collections import namedtuple
from functools import lru_cache
from itertools import chain
from operator import gt, itemgetter

from dtkguard.lightclass import field, record
from dtkguard.util.text import json_loads, parse_int_checked_after

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple

#: the largest header we accept (the Hub uses 25 MB; the Rust reader 100 MB)
#: a header larger than this is refused (one of 10,000 tensors is about 1 MB)
MAX_HEADER = 16 << 20
#: the schema limits shapes and offsets to 48-bit integers
MAX_INT = (1 << 48) - 1


class HeaderError(ValueError):
    """The file is not a readable safetensors file. ``str()`` is one line."""


if TYPE_CHECKING:

    class TensorInfo(NamedTuple):
        dtype: str
        shape: list[int]
        begin: int
        end: int

else:  # the same named tuple, without importing typing (milliseconds of every scan-model)
    TensorInfo = namedtuple("TensorInfo", ("dtype", "shape", "begin", "end"))


@record
class SafetensorsHeader:
    path: str
    header_len: int
    file_size: int
    #: tensor names in header order, and the dtype of each (the verdict needs no more)
    names: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def bytes_read(self) -> int:
        return 8 + self.header_len


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise HeaderError(f"duplicate key {key!r} in header")
            seen.add(key)
    return out


def _reject_constant(name: str) -> object:
    raise HeaderError(f"non-standard JSON constant {name} in header")


def _read_exact(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_header(path: str | os.PathLike[str], cap: int = MAX_HEADER) -> SafetensorsHeader:
    """Parse the header of ``path``. Raises :class:`HeaderError` (or OSError) on bad input."""
    from dtkguard.util.safe_read import regular_fd

    fd, size = regular_fd(path)  # a descriptor, no file object: read exactly the header bytes
    try:
        head = _read_exact(fd, 8)
        if len(head) != 8:
            raise HeaderError(f"truncated: {size} bytes, no 8-byte header length")
        (n,) = struct.unpack("<Q", head)
        if n < 2:
            raise HeaderError(f"header length {n} is too small")
        if n > cap:
            raise HeaderError(f"header length {n} exceeds the cap of {cap} bytes")
        if 8 + n > size:
            raise HeaderError(f"header length {n} runs past the end of the {size}-byte file")
        raw = _read_exact(fd, n)
    finally:
        os.close(fd)
    if len(raw) != n:
        raise HeaderError("truncated header")
    return parse_header(str(path), raw, size)


def parse_header(path: str, raw: bytes, size: int, fast: bool = True) -> SafetensorsHeader:
    """The header ``raw`` (its N bytes) of the ``size``-byte file ``path``; ``fast=False``
    skips the compact fast path (the tests hold the two equal)."""
    from dtkguard.modelscan.compact_json import header_tensors

    n = len(raw)
    if raw[:1] != b"{":
        raise HeaderError("header does not start with '{'")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HeaderError("header is not UTF-8") from None
    if fast:
        got = header_tensors(raw, text, size - 8 - n, _strict_decoder(), MAX_INT)
        if got is not None:
            meta, names, dtypes = got
            return SafetensorsHeader(path, n, size, names, dtypes, meta or {})
    return _validate(path, n, size, _strict_json(text))


def _hooks() -> dict[str, Any]:
    return {
        "object_pairs_hook": _no_duplicates,
        "parse_constant": _reject_constant,
        "parse_int": parse_int_checked_after(),  # `_validate` bounds every integer to 48 bits
    }


def _strict_decoder() -> json.JSONDecoder:
    return _decoder_with(parse_int_checked_after())


@lru_cache(maxsize=2)
def _decoder_with(parse_int: Any) -> json.JSONDecoder:
    return json.JSONDecoder(**{**_hooks(), "parse_int": parse_int})


def _strict_json(text: str) -> dict[str, Any]:
    try:
        data = json_loads(text, **_hooks())
    except json.JSONDecodeError as exc:
        raise HeaderError(f"header is not JSON: {exc.msg} at byte {exc.pos}") from None
    except ValueError as exc:  # nested too deeply, an integer of thousands of digits
        raise HeaderError(f"header is not usable JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HeaderError("header is not a JSON object")
    return data


def _validate(path: str, n: int, size: int, data: dict[str, Any]) -> SafetensorsHeader:
    buffer_len = size - 8 - n
    out = SafetensorsHeader(path=path, header_len=n, file_size=size)
    meta = data.pop("__metadata__", None)
    if meta is not None:
        if not isinstance(meta, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in meta.items()
        ):
            raise HeaderError("__metadata__ must map strings to strings")
        out.metadata = meta
    # structural checks per tensor (one pass that also builds the records); the integer and
    # offset checks run once over all values at C speed, naming a tensor only on failure
    tensors: dict[str, TensorInfo] = {}
    for name, info in data.items():
        if type(info) is not dict:
            raise HeaderError(f"tensor {name!r}: entry is not an object")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if type(dtype) is not str or not dtype:
            raise HeaderError(f"tensor {name!r}: missing dtype")
        if type(shape) is not list:
            raise HeaderError(f"tensor {name!r}: shape must be a list of non-negative integers")
        if type(offsets) is not list or len(offsets) != 2:
            raise HeaderError(f"tensor {name!r}: data_offsets must be two non-negative integers")
        tensors[name] = _new(TensorInfo, (dtype, shape, *offsets))  # TensorInfo(), in C
    records = list(tensors.values())
    shapes = chain.from_iterable(map(_SHAPE, records))
    begins, ends = list(map(_BEGIN, records)), list(map(_END, records))
    values = [*shapes, *begins, *ends]
    if values and (set(map(type, values)) != {int} or min(values) < 0 or max(values) > MAX_INT):
        for name, t in tensors.items():
            if not all(map(_is_int, chain(t.shape, (t.begin, t.end)))):
                raise HeaderError(
                    f"tensor {name!r}: shape and data_offsets must be non-negative integers"
                )
    if ends and (max(ends) > buffer_len or any(map(gt, begins, ends))):
        for name, t in tensors.items():
            if t.begin > t.end or t.end > buffer_len:
                raise HeaderError(
                    f"tensor {name!r}: data_offsets [{t.begin}, {t.end}] outside the "
                    f"{buffer_len}-byte buffer"
                )
    out.names = list(tensors)
    out.dtypes = list(map(_DTYPE, records))
    return out


_new = tuple.__new__
_DTYPE, _SHAPE, _BEGIN, _END = itemgetter(0), itemgetter(1), itemgetter(2), itemgetter(3)


def _is_int(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_INT
