"""Requirements from the command line and from requirements files (through pip-api).

pip-api is imported lazily (importing it runs pip). A malformed line becomes one
``FILE:LINE field: message`` error (exit 2); pip-api does not tell the line, so it is found
by reading the file again, following ``-r`` includes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from dtkguard.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from packaging.requirements import Requirement

_INCLUDE = re.compile(r"^(?:-r|--requirement|-c|--constraint)\s*=?\s*(\S+)")


def from_command_line(texts: Iterable[str]) -> list[Requirement]:
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for text in texts:
        try:
            out.append(Requirement(text))
        except InvalidRequirement as exc:
            msg = str(exc).splitlines()[0]
            raise InputError(f"invalid requirement {text!r}: {msg}", field="REQ") from None
    return out


#: a requirements file of thousands of pins is well under this
MAX_REQUIREMENTS_BYTES = 4 << 20


def _read(path: Path) -> str:
    """A requirements file's text: a regular file, capped; problems are `InputError`."""
    from dtkguard.util.safe_read import read_capped, reason
    from dtkguard.util.text import Undecodable, decode_utf8

    try:
        return decode_utf8(read_capped(path, MAX_REQUIREMENTS_BYTES, what="requirements file"))
    except OSError as exc:
        raise InputError(f"cannot read: {reason(exc)}", str(path), field="-r") from None
    except Undecodable as exc:
        raise InputError(str(exc), str(path), exc.line, exc.col, "-r") from None


def _logical_lines(path: Path) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    buf, start = "", 0
    for no, raw in enumerate(_read(path).splitlines(), 1):
        if not buf:
            start = no
        line = raw
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        lines.append((start, buf))
        buf = ""
    if buf:
        lines.append((start, buf))
    return lines


def locate_bad_line(path: Path, seen: set[Path] | None = None) -> tuple[Path, int, str, str] | None:
    """The first line pip would reject: (file, line number, text, reason)."""
    from packaging.requirements import InvalidRequirement, Requirement

    seen = seen if seen is not None else set()
    path = path.resolve()
    if path in seen:
        return None
    seen.add(path)
    for no, line in _logical_lines(path):
        text = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not text:
            continue
        inc = _INCLUDE.match(text)
        if inc:
            found = locate_bad_line(path.parent / inc.group(1), seen)
            if found:
                return found
            continue
        if text.startswith("-"):
            continue
        req_text = re.split(r"\s--hash[=\s]", text)[0].strip()
        try:
            Requirement(req_text)
        except InvalidRequirement as exc:
            return path, no, req_text, str(exc).splitlines()[0]
    return None


def from_files(paths: Sequence[str]) -> list[Requirement]:
    """Requirements of ``-r FILE`` arguments, in file order."""
    from packaging.requirements import Requirement

    out: list[Requirement] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise InputError("requirements file not found", raw, field="-r")
        found = locate_bad_line(path)
        if found is not None:
            where, no, text, reason = found
            shown = raw if where == path.resolve() else str(where)
            raise InputError(
                f"invalid requirement {text!r}: {reason}", shown, no, field="requirement"
            )
        import pip_api
        from pip_api.exceptions import PipError

        try:
            parsed = pip_api.parse_requirements(path)
        except PipError as exc:
            raise InputError(str(exc).splitlines()[0], raw, field="requirement") from None
        for req in parsed.values():
            out.append(Requirement(str(req)))
    return out
