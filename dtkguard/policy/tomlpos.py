"""Where each key of a TOML document stands (line, column), for error messages.

tomlkit round-trips text but does not expose positions; this small scanner walks the lines
once, tracking table headers, arrays of tables, and multi-line strings and arrays.
"""

from __future__ import annotations

import re
from typing import Any

from dtkguard.errors import InputError

Path = tuple[object, ...]
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _split_key(text: str) -> tuple[list[str], int]:
    """Parse a dotted key at the start of ``text``; return the parts and the length consumed."""
    parts: list[str] = []
    i = 0
    while i < len(text):
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] in "\"'":
            quote = text[i]
            end = text.find(quote, i + 1)
            if end < 0:
                break
            parts.append(text[i + 1 : end])
            i = end + 1
        else:
            m = _BARE.match(text, i)
            if not m:
                break
            parts.append(m.group())
            i = m.end()
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] == ".":
            i += 1
            continue
        break
    return parts, i


def _depth_change(line: str, in_string: str | None) -> tuple[int, str | None]:
    """Bracket depth change of a line outside strings; tracks open multi-line strings."""
    depth = 0
    i = 0
    while i < len(line):
        if in_string:
            end = line.find(in_string, i)
            if end < 0:
                return depth, in_string
            i = end + len(in_string)
            in_string = None
            continue
        ch = line[i]
        if ch == "#":
            break
        if line.startswith('"""', i) or line.startswith("'''", i):
            in_string = line[i : i + 3]
            i += 3
            continue
        if ch in "\"'":
            end = line.find(ch, i + 1)
            while end > 0 and ch == '"' and line[end - 1] == "\\":
                end = line.find(ch, end + 1)
            i = (end + 1) if end > 0 else len(line)
            continue
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        i += 1
    return depth, in_string


def key_positions(
    text: str, duplicates: list[tuple[Path, int, int]] | None = None
) -> dict[Path, tuple[int, int]]:
    """Map every key path (``("vendor", "torch")``, ``("deny", 2, "reason")``) to (line, col).

    A key assigned twice in one table is appended to ``duplicates`` with its second position.
    """
    positions: dict[Path, tuple[int, int]] = {}
    assigned: set[Path] = set()
    counters: dict[tuple[object, ...], int] = {}
    table: tuple[object, ...] = ()
    depth = 0
    in_string: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip()
        indent = len(raw) - len(line)
        if depth == 0 and in_string is None and line and not line.startswith("#"):
            if line.startswith("[["):
                parts, _ = _split_key(line[2:])
                index = counters.get(tuple(parts), -1) + 1
                counters[tuple(parts)] = index
                table = (*parts, index)
                positions.setdefault(tuple(parts), (number, indent + 1))
                positions[table] = (number, indent + 1)
                continue
            if line.startswith("["):
                parts, _ = _split_key(line[1:])
                table = tuple(parts)
                positions.setdefault(table, (number, indent + 1))
                continue
            parts, used = _split_key(line)
            if parts and line[used : used + 1] == "=":
                key = (*table, *parts)
                positions.setdefault(key, (number, indent + 1))
                if key in assigned and duplicates is not None:
                    duplicates.append((key, number, indent + 1))
                assigned.add(key)
        change, in_string = _depth_change(raw, in_string)
        depth = max(0, depth + change)
    return positions


def parse_toml(text: str, file: str, error: type[InputError] = InputError) -> dict[str, Any]:
    """Parse TOML text into plain values; any problem is one ``error`` with line and column."""
    import tomlkit
    from tomlkit.exceptions import KeyAlreadyPresent, ParseError, TOMLKitError

    try:
        return tomlkit.parse(text).unwrap()
    except (ParseError, KeyAlreadyPresent) as exc:
        # a key given twice is said alike whichever error tomlkit raises for it (its releases
        # differ: KeyAlreadyPresent, or a ParseError "Key ... already exists")
        found: list[tuple[Path, int, int]] = []
        key_positions(text, found)
        if found or not isinstance(exc, ParseError):
            key, line, col = found[0] if found else ((), 1, 1)
            field = ".".join(map(str, (k for k in key if not isinstance(k, int)))) or None
            raise error("invalid TOML: key defined twice", file, line, col, field) from None
        message = str(exc).split(" at line ")[0]  # tomlkit counts columns from 0
        raise error(f"invalid TOML: {message}", file, exc.line, exc.col + 1) from None
    except (TOMLKitError, ValueError, RecursionError) as exc:
        raise error(f"invalid TOML: {exc}", file, 1, 1) from None


def locate(positions: dict[Path, tuple[int, int]], path: Path) -> tuple[int, int]:
    """The position of ``path``, or of its nearest enclosing key; (1, 1) when unknown."""
    path = tuple(path)
    while path:
        if path in positions:
            return positions[path]
        path = path[:-1]
    return (1, 1)
