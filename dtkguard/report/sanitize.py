"""Text from a target (METADATA names, versions, paths, node reports) made safe per format.

Anything a package author wrote can reach a report. Each format gets the escaping it needs:
a terminal never receives control characters (ESC, BEL, C1, bidi overrides), XML only characters
XML 1.0 allows, markdown no raw HTML or link syntax. Escapes are visible (``\\x1b``), so a reader
sees that something odd was there.
"""

from __future__ import annotations

import re

#: C0 controls but tab, DEL, C1 controls, and the bidi/zero-width marks that reorder text
_TERMINAL = "[\x00-\x08\x0a-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]"
#: characters XML 1.0 does not allow at all
_NOT_XML = "[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
_COMPILED: dict[str, re.Pattern[str]] = {}


def _pattern(source: str) -> re.Pattern[str]:
    """``source`` compiled on first use (their wide ranges take milliseconds to compile, at
    the start of every command that merely imports the report writers)."""
    found = _COMPILED.get(source)
    if found is None:
        found = _COMPILED[source] = re.compile(source)
    return found


_MARKDOWN = {"&": "&amp;", "<": "&lt;", "|": "\\|", "[": "\\[", "]": "\\]", "`": "\\`"}


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: object) -> str:
    """One line for a terminal or a log: controls (newlines included) shown as escapes."""
    return _pattern(_TERMINAL).sub(_visible, str(text))


def xml(text: object) -> str:
    """Text XML 1.0 can hold (ElementTree escapes ``<&>``); line breaks and tabs are kept."""
    return _pattern(_NOT_XML).sub(_visible, _pattern(_TERMINAL).sub(_keep_breaks, str(text)))


def _keep_breaks(match: re.Match[str]) -> str:
    return match.group() if match.group() in "\n\r" else _visible(match)


def markdown(text: object) -> str:
    """A markdown table cell: no raw HTML, links, code spans or column breaks; one line."""
    return "".join(_MARKDOWN.get(c, c) for c in terminal(str(text).replace("\n", " ")))
