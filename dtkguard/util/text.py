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
    hooks.setdefault("parse_int", _parse_int)
    hooks.setdefault("parse_constant", _reject_constant)
    try:
        return loads(text, **hooks)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


#: the keywords of `json.loads` that `loads` passes to the C scanner itself
_SCANNER_HOOKS = frozenset(
    ("object_hook", "object_pairs_hook", "parse_float", "parse_int", "parse_constant")
)
_WHITESPACE = " \t\n\r"  # json.decoder's WHITESPACE pattern


class _Context:
    """What ``_json.make_scanner`` reads of a `json.JSONDecoder`: its defaults and hooks."""

    def __init__(self, hooks: dict[str, Any]) -> None:
        self.strict = True
        self.object_hook = hooks.get("object_hook")
        self.object_pairs_hook = hooks.get("object_pairs_hook")
        self.parse_float = hooks.get("parse_float") or float
        self.parse_int = hooks.get("parse_int") or int
        self.parse_constant = hooks.get("parse_constant") or _CONSTANTS.__getitem__


_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


def loads(text: str | bytes, **hooks: Any) -> Any:
    """`json.loads`, the same values and the same errors, without importing `json` (and `re`,
    which json's decoder compiles its patterns with): the C scanner json itself uses, given a
    str or UTF-8 bytes; anything else (another encoding, other keywords, no C scanner) is
    json's own."""
    try:
        import _json

        make_scanner: Any = _json.make_scanner  # a class in typeshed, a factory here
    except (ImportError, AttributeError):
        make_scanner = None
    if (
        isinstance(text, bytes)
        and text[:1] not in (b"", b"\x00", b"\xef", b"\xfe", b"\xff")
        and (text[1:2] != b"\x00" or len(text) == 3)  # json.detect_encoding: UTF-8
    ):
        text = text.decode("utf-8", "surrogatepass")
    if (
        make_scanner is None
        or not isinstance(text, str)
        or text.startswith("\ufeff")
        or not _SCANNER_HOOKS.issuperset(hooks)
    ):
        import json

        return json.loads(text, **hooks)
    scan = make_scanner(_Context(hooks))
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = scan(text, start)
    except StopIteration as err:
        from json import JSONDecodeError

        raise JSONDecodeError("Expecting value", text, err.value) from None
    except SystemError:
        # the scanner raises its JSONDecodeError from json.decoder only when json is imported
        # (it reads sys.modules, imports nothing): without it, json's own says what is wrong
        import json

        return json.loads(text, **hooks)
    if end != len(text):
        end += len(text) - end - len(text[end:].lstrip(_WHITESPACE))
        if end != len(text):
            from json import JSONDecodeError

            raise JSONDecodeError("Extra data", text, end)
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def dumps(
    value: Any,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    default: Any = None,
) -> str:
    """`json.dumps` with these keywords, the same text and the same errors, without importing
    `json` (and `re`, which json's encoder compiles its patterns with): the C encoder json
    itself uses where json uses it (no ``indent``), else the same layout written here; json's
    own when there is no C encoder."""
    try:
        import _json

        make_encoder: Any = _json.make_encoder
        quote: Any = _json.encode_basestring_ascii
    except (ImportError, AttributeError):
        import json

        return json.dumps(
            value, indent=indent, sort_keys=sort_keys, separators=separators, default=default
        )
    item_sep, key_sep = separators or ((",", ": ") if indent is not None else (", ", ": "))
    fallback = default if default is not None else _not_serializable
    if indent is None:
        encode = make_encoder({}, fallback, quote, None, key_sep, item_sep, sort_keys, False, True)
        return "".join(encode(value, 0))
    out: list[str] = []
    _Writer(out, " " * indent, item_sep, key_sep, sort_keys, fallback, quote).value(value, 0)
    return "".join(out)


def _not_serializable(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


class _Writer:
    """json's indented layout (`json.encoder`'s pure-Python path) into ``out``."""

    def __init__(
        self,
        out: list[str],
        step: str,
        item_sep: str,
        key_sep: str,
        sort_keys: bool,
        default: Any,
        quote: Any,
    ) -> None:
        self.out, self.step, self.item_sep, self.key_sep = out, step, item_sep, key_sep
        self.sort_keys, self.default, self.quote = sort_keys, default, quote
        self.open: set[int] = set()  # the containers being written: a cycle is an error

    def value(self, value: Any, level: int) -> None:
        out = self.out
        if isinstance(value, str):
            out.append(self.quote(value))
        elif value is None:
            out.append("null")
        elif value is True:
            out.append("true")
        elif value is False:
            out.append("false")
        elif isinstance(value, int):
            out.append(int.__repr__(value))
        elif isinstance(value, float):
            out.append(_float(value))
        elif isinstance(value, (list, tuple)):
            self._enter(value)
            self._array(value, level)
            self.open.discard(id(value))
        elif isinstance(value, dict):
            self._enter(value)
            self._object(value, level)
            self.open.discard(id(value))
        else:
            self._enter(value)
            self.value(self.default(value), level)
            self.open.discard(id(value))

    def _enter(self, value: Any) -> None:
        if id(value) in self.open:
            raise ValueError("Circular reference detected")
        self.open.add(id(value))

    def _array(self, items: list[Any] | tuple[Any, ...], level: int) -> None:
        if not items:
            self.out.append("[]")
            return
        inner = "\n" + self.step * (level + 1)
        self.out.append("[" + inner)
        for i, item in enumerate(items):
            if i:
                self.out.append(self.item_sep + inner)
            self.value(item, level + 1)
        self.out.append("\n" + self.step * level + "]")

    def _object(self, table: dict[Any, Any], level: int) -> None:
        if not table:
            self.out.append("{}")
            return
        inner = "\n" + self.step * (level + 1)
        self.out.append("{" + inner)
        pairs = sorted(table.items()) if self.sort_keys else table.items()
        for i, (key, item) in enumerate(pairs):
            if i:
                self.out.append(self.item_sep + inner)
            self.out.append(self.quote(_key(key)) + self.key_sep)
            self.value(item, level + 1)
        self.out.append("\n" + self.step * level + "}")


def _key(key: Any) -> str:
    """A key as json writes it: str as it is, float, int, bool and None as their JSON text."""
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")
