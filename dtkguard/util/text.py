"""Decoding untrusted bytes and JSON with positions and limits, for one-line errors."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: integers in any JSON dtkguard reads are offsets, sizes or counts: far below this many digits
MAX_INT_DIGITS = 64


def position(data: bytes | str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of ``offset``; columns count bytes in bytes, characters in str."""
    nl = b"\n" if isinstance(data, bytes) else "\n"
    # ``nl`` has ``data``'s type, which mypy cannot tie to the isinstance above
    line = data.count(nl, 0, offset) + 1  # type: ignore[arg-type]
    col = offset - (data.rfind(nl, 0, offset) + 1) + 1  # type: ignore[arg-type]
    return line, col


class Undecodable(ValueError):
    """Bytes that are not UTF-8; ``line``/``col`` point at the first bad byte."""

    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(message)
        self.line, self.col = line, col


def decode_utf8(data: bytes) -> str:
    """``data`` as UTF-8 text; `Undecodable` says where the first bad byte is."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = position(data, exc.start)
        raise Undecodable(f"not UTF-8 text (byte {exc.start})", line, col) from None


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"integer of {len(text)} digits (the limit is {MAX_INT_DIGITS})")
    return int(text)


def parse_int_checked_after() -> Any:
    """A ``parse_int`` for JSON whose integers the caller range-checks after parsing: ``int``
    (the C parser's own path, several times faster) when this interpreter bounds the digits
    it converts (``sys.get_int_max_str_digits``, 3.10.7+, not disabled), else the 64-digit
    check of `json_loads`."""
    import sys

    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return int if 0 < limit <= 5000 else _parse_int


def json_loads(text: str | bytes, **hooks: Any) -> Any:
    """`json.loads` that fails with `ValueError` (never `RecursionError`) on hostile input.

    Integers longer than `MAX_INT_DIGITS` and nesting deeper than the interpreter's recursion
    limit are refused; ``NaN``/``Infinity`` are not JSON and are refused too.
    """
    import json

    hooks.setdefault("parse_int", _parse_int)
    hooks.setdefault("parse_constant", _reject_constant)
    try:
        return json.loads(text, **hooks)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
