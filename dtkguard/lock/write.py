"""Write PEP 751 locks: build the document, check its closure, validate, write atomically.

The document is validated with ``packaging.pylock`` (packaging >= 26.1) before anything is
written; the TOML is written here, each value as tomlkit writes it (tomlkit itself only for a
value that needs escaping or is a date). Order and bytes are deterministic: packages sorted by
name, keys in a fixed order, no timestamps except what the index reported as ``upload-time``.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.version import Version

from dtkguard.decision import canonical
from dtkguard.errors import DtkguardError, InputError

LOCK_VERSION = "1.0"
CREATED_BY = "dtkguard"
PYLOCK_MIN = "26.1"


class ClosureError(DtkguardError):
    """A locked package requires something the lock does not hold: exit 1."""

    exit_code = 1


@dataclass
class LockEntry:
    """What the writer needs of one package (from a resolution or from an installed env)."""

    name: str
    version: str
    requires_dist: list[Requirement] = field(default_factory=list)
    requires_python: str | None = None
    wheel_name: str | None = None
    url: str | None = None
    path: str | None = None
    size: int | None = None
    sha256: str | None = None
    upload_time: str | None = None
    index: str | None = None
    dependencies: list[str] = field(default_factory=list)
    tool: dict[str, Any] = field(default_factory=dict)
    #: the file is an sdist (``[packages.sdist]``), not a wheel
    sdist: bool = False


def require_pylock() -> Any:
    """``packaging.pylock`` or a clear error: writing a lock needs packaging >= 26.1."""
    try:
        from packaging import pylock
    except ImportError:
        import packaging

        raise InputError(
            f"dtkguard lock needs packaging>={PYLOCK_MIN} (packaging.pylock validates PEP 751 "
            f"locks); this environment has packaging {packaging.__version__}: "
            f"pip install 'packaging>={PYLOCK_MIN}'",
            field="packaging",
        ) from None
    return pylock


def _satisfies(spec: Requirement, version: str) -> bool:
    return spec.specifier.contains(Version(version), prereleases=True)


def closure_problems(entries: Sequence[LockEntry], markers: Mapping[str, str]) -> list[str]:
    """Every Requires-Dist of every entry (and of the extras asked for) that the lock does not
    satisfy for the target's markers."""
    by_name = {canonical(e.name): e for e in entries}
    problems: list[str] = []
    todo: list[tuple[str, str]] = [(key, "") for key in by_name]
    done: set[tuple[str, str]] = set()
    seen: dict[tuple[str, str], bool] = {}

    def holds(marker: Any, extra: str) -> bool:  # many lines repeat the same markers
        key = (str(marker), extra)
        hit = seen.get(key)
        if hit is None:
            hit = seen[key] = marker.evaluate(dict(markers, extra=extra))
        return hit

    while todo:
        key, extra = todo.pop()
        if (key, extra) in done:
            continue
        done.add((key, extra))
        entry = by_name[key]
        for req in entry.requires_dist:
            if req.marker is not None:
                if not holds(req.marker, extra):
                    continue
                if extra and holds(req.marker, ""):
                    continue
            elif extra:
                continue
            dep = canonical(req.name)
            have = by_name.get(dep)
            who = f"{entry.name} {entry.version}" + (f" [{extra}]" if extra else "")
            if have is None:  # its extras cannot be followed either
                problems.append(f"{who} requires {req}, which the lock does not hold")
                continue
            if not _satisfies(req, have.version):
                problems.append(f"{who} requires {req}, the lock holds {have.version}")
            todo += [(dep, canonical(e)) for e in req.extras]
    return sorted(set(problems))


def _upload_time(text: str | None) -> _dt.datetime | None:
    if not text:
        return None
    try:
        value = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value.astimezone(_dt.timezone.utc)


def build_document(
    entries: Iterable[LockEntry],
    *,
    requires_python: str | None,
    environments: Sequence[str],
    tool: Mapping[str, Any],
) -> dict[str, Any]:
    """The lock as a plain dict, in PEP 751 key order (what validation and TOML take)."""
    doc: dict[str, Any] = {"lock-version": LOCK_VERSION}
    if environments:
        doc["environments"] = list(environments)
    if requires_python:
        doc["requires-python"] = requires_python
    doc["created-by"] = CREATED_BY
    packages = []
    for e in sorted(entries, key=lambda x: (canonical(x.name), x.version)):
        pkg: dict[str, Any] = {"name": canonical(e.name), "version": e.version}
        if e.requires_python:
            pkg["requires-python"] = e.requires_python
        if e.index:
            pkg["index"] = e.index
        if e.dependencies:
            pkg["dependencies"] = [{"name": d} for d in e.dependencies]
        wheel: dict[str, Any] = {"name": e.wheel_name}
        uploaded = _upload_time(e.upload_time)
        if uploaded is not None:
            wheel["upload-time"] = uploaded
        if e.url:
            wheel["url"] = e.url
        else:
            wheel["path"] = e.path
        if e.size is not None:
            wheel["size"] = e.size
        wheel["hashes"] = {"sha256": e.sha256}
        if e.sdist:
            pkg["sdist"] = wheel
        else:
            pkg["wheels"] = [wheel]
        if e.tool:
            pkg["tool"] = {"dtkguard": dict(e.tool)}
        packages.append(pkg)
    doc["packages"] = packages
    doc["tool"] = {"dtkguard": dict(tool)}
    return doc


def validate(doc: Mapping[str, Any], where: str) -> None:
    """Validate with ``packaging.pylock``; InputError names the offending key."""
    pylock = require_pylock()
    try:
        pylock.Pylock.from_dict(doc)
    except pylock.PylockValidationError as exc:
        raise InputError(f"refusing to write an invalid PEP 751 lock: {exc}", where) from None


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: str) -> str:
    if _BARE.fullmatch(key):
        return key
    import tomlkit

    return tomlkit.item(key).as_string()


#: what a TOML basic string escapes (tomlkit's set: control characters, ``"`` and ``\\``)
_ESCAPED = re.compile(r'[\x00-\x1f\x7f"\\]')


def _scalar(value: Any) -> str:
    """A TOML scalar as tomlkit writes it; the common cases (a string with nothing to escape,
    an int, a bool) without building tomlkit items (most of a lock's writing time)."""
    kind = type(value)
    if kind is str and _ESCAPED.search(value) is None:
        return f'"{value}"'
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    import tomlkit

    text: str = tomlkit.item(value).as_string()
    return text


def _inline(value: Any) -> str:
    """A TOML value on one line (tables inline); arrays of tables or of more than three
    items one item per line. Scalars are encoded as tomlkit encodes them."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        if len(value) > 3 or any(isinstance(v, Mapping) for v in value):
            return "[\n" + "".join(f"    {_inline(v)},\n" for v in value) + "]"
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    return _scalar(value)


def _table(out: list[str], header: str, body: Mapping[str, Any], aot: bool = False) -> None:
    """``[header]`` (or ``[[header]]``): plain keys first, then sub-tables and arrays of
    tables (``wheels``, ``tool`` and anything nested under ``tool``)."""
    out.append(f"\n[[{header}]]" if aot else f"\n[{header}]")
    nested: list[tuple[str, Any]] = []
    for key, value in body.items():
        is_aot = isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value)
        in_tool = header.startswith("tool")
        is_table = isinstance(value, Mapping) and (key == "tool" or in_tool)
        if key == "wheels" or (in_tool and is_aot) or is_table:
            nested.append((key, value))
        else:
            out.append(f"{_key(key)} = {_inline(value)}")
    for key, value in nested:
        if isinstance(value, Mapping):
            _table(out, f"{header}.{_key(key)}", value)
        else:
            for item in value:
                _table(out, f"{header}.{_key(key)}", item, aot=True)


def dumps(doc: Mapping[str, Any]) -> str:
    """TOML text: top-level keys, then ``[[packages]]`` with ``[[packages.wheels]]`` and
    ``[packages.tool.dtkguard]``, then ``[tool.dtkguard]``. Same document, same bytes."""
    out = [f"{_key(k)} = {_inline(v)}" for k, v in doc.items() if k not in ("packages", "tool")]
    if not doc.get("packages"):  # PEP 751 requires the key: a lock of nothing says so
        out.append("packages = []")
    for pkg in doc.get("packages", []):
        _table(out, "packages", pkg, aot=True)
    for name, section in doc.get("tool", {}).items():
        _table(out, f"tool.{_key(name)}", section)
    return "\n".join(out) + "\n"


def write_lock(path: str | os.PathLike[str], doc: Mapping[str, Any]) -> bytes:
    """Validate ``doc``, render it and replace ``path`` atomically; returns the bytes."""
    from dtkguard.util.output import write_output

    target = Path(path)
    pylock = require_pylock()
    if not pylock.is_valid_pylock_path(target):
        raise InputError(
            "a PEP 751 lock must be named pylock.toml or pylock.NAME.toml",
            str(target),
            field="-o",
        )
    validate(doc, str(target))
    data = dumps(doc).encode("utf-8")
    write_output(target, data)
    return data
