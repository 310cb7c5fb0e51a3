"""A strict reader for the block-YAML subset the k8s manifests are written in.

PyYAML is not a dependency. The manifests stay within: ``key: value`` maps, ``- `` lists (of
scalars or maps), plain or double-quoted scalars, ``{}``, comments and one document per file.
Anything else (anchors, flow collections, multi-line strings, tabs) raises, so a manifest that
leaves the subset fails its test instead of being misread.
"""

from __future__ import annotations

import json
import re
from typing import Any

_KEY = re.compile(r"^([A-Za-z0-9_.\-/]+):(?: (.*))?$")


def _scalar(text: str, line_no: int) -> Any:
    if text.startswith('"'):
        return json.loads(text)
    if text == "{}":
        return {}
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.search(r"[&*!|>{}\[\]]", text[:1]) or " #" in text:
        raise ValueError(f"line {line_no}: outside the YAML subset: {text!r}")
    return text


def load(text: str) -> Any:
    lines = []
    for no, raw in enumerate(text.splitlines(), 1):
        if "\t" in raw:
            raise ValueError(f"line {no}: tab")
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped == "---":
            raise ValueError(f"line {no}: one document per file")
        lines.append((len(raw) - len(raw.lstrip(" ")), stripped, no))
    value, end = _block(lines, 0, lines[0][0])
    if end != len(lines):
        raise ValueError(f"line {lines[end][2]}: unexpected indentation")
    return value


def _block(lines: list, i: int, indent: int) -> tuple[Any, int]:
    if lines[i][1].startswith("- "):
        return _list(lines, i, indent)
    return _map(lines, i, indent)


def _map(lines: list, i: int, indent: int, first: dict | None = None) -> tuple[dict, int]:
    out: dict[str, Any] = first or {}
    while i < len(lines) and lines[i][0] == indent and not lines[i][1].startswith("- "):
        _, text, no = lines[i]
        m = _KEY.match(text)
        if not m:
            raise ValueError(f"line {no}: not a key: {text!r}")
        key, rest = m.group(1), m.group(2)
        if key in out:
            raise ValueError(f"line {no}: duplicate key {key}")
        i += 1
        if rest is not None:
            out[key] = _scalar(rest, no)
        elif i < len(lines) and (
            lines[i][0] > indent or (lines[i][0] == indent and lines[i][1].startswith("- "))
        ):
            out[key], i = _block(lines, i, lines[i][0])
        else:
            raise ValueError(f"line {no}: {key} has no value")
    return out, i


def _list(lines: list, i: int, indent: int) -> tuple[list, int]:
    out: list[Any] = []
    while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
        _, text, no = lines[i]
        item = text[2:]
        m = _KEY.match(item)
        if m:  # a map whose first key sits on the dash line
            inner = indent + 2
            first, _ = _map([(inner, item, no)], 0, inner)
            value, i = _map(lines, i + 1, inner, first)
            out.append(value)
        else:
            out.append(_scalar(item, no))
            i += 1
    return out, i
