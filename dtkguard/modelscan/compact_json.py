"""The fast path of safetensors headers, for the compact JSON their writers emit.

`header_tensors` takes a header the strict reader has already bounded and decoded, and returns
what the scan needs, or None when it cannot vouch for the text; the reader then runs its full
parse, which accepts it or gives the error. A header is vouched for only when no string in it
holds a backslash or a control character: then every ``"`` delimits a string, and the text
splits into its strings and what lies between them. The pieces between are checked exactly,
and every number goes through the json module itself, so what the fast path accepts, the full
parse accepts with the same result (tests/modelscan/test_compact_json.py holds the two equal).
"""

from __future__ import annotations

import json
from functools import lru_cache
from operator import gt, itemgetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: bytes that no JSON string may hold raw (and that a compact header has nowhere else)
_CONTROL = bytes(range(32))
_META = '{"__metadata__":'
#: what lies between the strings of a tensor entry: ``"NAME":{"dtype":"DT","shape":[S],
#: "data_offsets":[B,E]},`` splits on ``"`` into 10 pieces, these at the fixed places
_ENTRY_FIXED = ((2, ":{"), (3, "dtype"), (4, ":"), (6, ","), (7, "shape"), (9, "data_offsets"))
_INNER_SHAPE = itemgetter(slice(2, -2))


def _reject_constant(name: str) -> object:
    raise ValueError(name)


def number_decoder() -> json.JSONDecoder:
    """The decoder of `header_tensors`' numbers: integers as the full parse reads them."""
    from dtkguard.util.text import parse_int_checked_after

    return _numbers_with(parse_int_checked_after())


@lru_cache(maxsize=2)
def _numbers_with(parse_int: Any) -> json.JSONDecoder:
    return json.JSONDecoder(parse_int=parse_int, parse_constant=_reject_constant)


def _ints(parts: list[str], max_int: int) -> list[int] | None:
    """The integers of comma-separated ``parts``, parsed as one JSON list; None unless every
    value is an integer in ``[0, max_int]``."""
    joined = ",".join(parts)
    if any(c in joined for c in "[]{}"):
        return None
    try:
        values = number_decoder().decode(f"[{joined}]")
    except ValueError:
        return None
    if values and (set(map(type, values)) != {int} or min(values) < 0 or max(values) > max_int):
        return None
    ints: list[int] = values
    return ints


def _metadata(body: str, decoder: json.JSONDecoder) -> tuple[dict[str, str] | None, int] | None:
    """``(metadata, where the tensors begin)``; None if ``__metadata__`` is not a first object
    of strings followed by a tensor."""
    if not body.startswith(_META):
        return None, 1
    try:
        meta, end = decoder.raw_decode(body, len(_META))
    except (ValueError, RecursionError):
        return None
    if type(meta) is not dict or body[end : end + 1] != ",":
        return None
    if not all(type(k) is str and type(v) is str for k, v in meta.items()):
        return None
    return meta, end + 1


def header_tensors(
    raw: bytes, text: str, buffer_len: int, decoder: json.JSONDecoder, max_int: int
) -> tuple[dict[str, str] | None, list[str], list[str]] | None:
    """``(metadata, names, dtypes)`` of a compact safetensors header (as the Rust and Python
    writers emit it, space-padded), or None. ``decoder`` parses ``__metadata__`` as the full
    parse does; offsets must lie in ``buffer_len``, integers in ``[0, max_int]``."""
    body = text.rstrip(" ")
    if body[-1:] != "}":
        return None
    got = _metadata(body, decoder)
    if got is None:
        return None
    meta, start = got
    region = body[start:-1] + ","
    if "\\" in region:
        return None
    pieces = region.split('"')
    n, rem = divmod(len(pieces) - 1, 10)
    if rem or pieces[0] or not n:
        return None
    if any(pieces[i::10].count(want) != n for i, want in _ENTRY_FIXED):
        return None
    names, dtypes = pieces[1::10], pieces[5::10]
    distinct = set(names)
    if "" in dtypes or len(distinct) != n or "__metadata__" in distinct:
        return None
    # control characters only where a string may hold them: every other piece is checked
    # exactly, or parsed by json (shapes, whose whitespace the full parse accepts too)
    strings = ("".join(names) + "".join(set(dtypes))).encode()
    if len(strings.translate(None, _CONTROL)) != len(strings):
        return None
    if not _shapes_ok(set(pieces[8::10]), max_int):
        return None
    offsets = pieces[10::10]
    del pieces
    if not _offsets_ok(offsets, buffer_len, max_int):
        return None
    return meta, names, dtypes


def _offsets_ok(offsets: list[str], buffer_len: int, max_int: int) -> bool:
    """Every piece is ``:[B,E]},`` with integers ``0 <= B <= E <= buffer_len, max_int``."""
    # without its digits each piece is ":[,]},"; a digit anywhere but inside the brackets
    # breaks a "]},:[" between two pieces, or the first ":[" or the last "]},", and leaves a
    # bracket behind: what is left inside holds digits and commas only
    joined = "".join(offsets)
    if joined.encode().translate(None, b"0123456789") != b":[,]}," * len(offsets):
        return False
    if not (joined.startswith(":[") and joined.endswith("]},")):
        return False
    inner = joined[2:-3].replace("]},:[", ",")
    if "[" in inner or "]" in inner or ":" in inner or "}" in inner:
        return False
    try:  # digits and commas only: integers, or an error (a leading zero, an empty one)
        values = number_decoder().decode(f"[{inner}]")
    except ValueError:
        return False
    if len(values) != 2 * len(offsets):
        return False
    begins, ends = values[0::2], values[1::2]
    # begin <= end <= buffer_len bounds every value by buffer_len: max_int only past it
    return (
        max(ends) <= buffer_len
        and (buffer_len <= max_int or max(values) <= max_int)
        and not any(map(gt, begins, ends))
    )


def _shapes_ok(shapes: set[str], max_int: int) -> bool:
    """Every distinct ``:[d,...],`` piece holds integers in ``[0, max_int]``."""
    if not all(s.startswith(":[") and s.endswith("],") for s in shapes):
        return False
    return _ints([i for i in map(_INNER_SHAPE, shapes) if i], max_int) is not None
