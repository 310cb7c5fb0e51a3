"""Read PEP 751 ``pylock.*.toml`` files into what audits and exports need.

Validation goes through ``packaging.pylock`` when the installed packaging has it (26.0+);
errors name the file and the offending key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dtkguard.decision import canonical
from dtkguard.errors import InputError


@dataclass(frozen=True)
class LockedFile:
    """One wheel, sdist or archive of a locked package."""

    name: str | None
    url: str | None
    path: str | None
    size: int | None
    hashes: dict[str, str]


@dataclass(frozen=True)
class LockedPackage:
    name: str
    version: str | None
    marker: str | None = None
    index: str | None = None
    files: tuple[LockedFile, ...] = ()
    tool: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return canonical(self.name)


@dataclass(frozen=True)
class Lock:
    path: Path
    packages: tuple[LockedPackage, ...]
    requires_python: str | None = None
    environments: tuple[str, ...] = ()
    created_by: str = ""
    #: the ``[tool.dtkguard]`` table: policy name, DTK release, inputs
    dtkguard: dict[str, Any] = field(default_factory=dict)

    def by_name(self) -> dict[str, LockedPackage]:
        return {p.key: p for p in self.packages}


def _file(data: dict[str, Any]) -> LockedFile:
    size = data.get("size")
    return LockedFile(
        data.get("name"),
        data.get("url"),
        data.get("path"),
        int(size) if size is not None else None,
        dict(data.get("hashes") or {}),
    )


#: a lock of a few hundred packages with hashes is well under a megabyte
MAX_LOCK_BYTES = 16 << 20


def read_lock(path: str | Path) -> Lock:
    """Parse and validate a lock; `InputError` (exit 2) names the file, position and key."""
    from dtkguard.policy.tomlpos import key_positions, parse_toml
    from dtkguard.util.safe_read import read_capped, reason
    from dtkguard.util.text import Undecodable, decode_utf8

    path = Path(path)
    try:
        text = decode_utf8(read_capped(path, MAX_LOCK_BYTES, what="lock"))
    except OSError as exc:
        raise InputError(f"cannot read lock: {reason(exc)}", str(path)) from None
    except Undecodable as exc:
        raise InputError(str(exc), str(path), exc.line, exc.col) from None
    data = parse_toml(text, str(path))
    where = _Where(path, key_positions(text))
    _validate(where, data)
    _check_tool_tables(where, data)
    packages = []
    for entry in data.get("packages", []):
        files = [_file(w) for w in entry.get("wheels", [])]
        for kind in ("sdist", "archive"):
            if isinstance(entry.get(kind), dict):
                files.append(_file(entry[kind]))
        packages.append(
            LockedPackage(
                entry["name"],
                entry.get("version"),
                entry.get("marker"),
                entry.get("index"),
                tuple(files),
                entry.get("tool", {}),
            )
        )
    dtk = dict(data.get("tool", {}).get("dtkguard", {}))
    for item in dtk.get("installed", []):
        # `lock --from-env`: installed dists without a known wheel (see lockfiles/README.md)
        if isinstance(item, dict) and item.get("name"):
            packages.append(
                LockedPackage(
                    item["name"],
                    item.get("version"),
                    tool={"dtkguard": {"installed-only": True, **item}},
                )
            )
    return Lock(
        path,
        tuple(packages),
        data.get("requires-python"),
        tuple(data.get("environments", [])),
        data.get("created-by", ""),
        dtk,
    )


@dataclass
class _Where:
    """Errors at a key of one lock file, with its line and column."""

    path: Path
    positions: dict[tuple[object, ...], tuple[int, int]]

    def error(self, loc: tuple[object, ...], message: str) -> InputError:
        from dtkguard.policy.tomlpos import locate

        line, col = locate(self.positions, loc)
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        return InputError(message, str(self.path), line, col, field or None)


def _context_loc(context: str | None) -> tuple[object, ...]:
    """``packages[0].version`` -> ``("packages", 0, "version")``."""
    import re

    return tuple(
        int(index) if index else key
        for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", context or "")
    )


def _validate(where: _Where, data: dict[str, Any]) -> None:
    if not isinstance(data.get("packages", []), list):
        raise where.error(("packages",), "not an array of tables")
    for i, pkg in enumerate(data.get("packages", [])):
        if not isinstance(pkg, dict) or not isinstance(pkg.get("name"), str):
            raise where.error(("packages", i, "name"), "package without a name")
    try:
        from packaging.pylock import Pylock, PylockValidationError
    except ImportError:  # packaging < 26: check the essentials by hand
        if str(data.get("lock-version", "")).split(".")[0] != "1":
            raise where.error(("lock-version",), "unsupported or missing lock-version") from None
        return
    try:
        Pylock.from_dict(data)
    except PylockValidationError as exc:
        loc = _context_loc(exc.context)
        raise where.error(loc, f"not a valid PEP 751 lock: {exc.message}") from None
    except Exception as exc:  # PylockUnsupportedVersionError and friends
        raise where.error(("lock-version",), f"not a valid PEP 751 lock: {exc}") from None


def _check_tool_tables(where: _Where, data: dict[str, Any]) -> None:
    """``[tool]`` is free-form in PEP 751, but dtkguard reads its own tables: they must be typed
    as dtkguard writes them."""

    def table(value: Any, loc: tuple[object, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise where.error(loc, f"a {type(value).__name__}, expected a table")
        return value

    dtk = table(table(data.get("tool", {}), ("tool",)).get("dtkguard", {}), ("tool", "dtkguard"))
    installed = dtk.get("installed", [])
    if not isinstance(installed, list):
        raise where.error(("tool", "dtkguard", "installed"), "expected an array of tables")
    for i, item in enumerate(installed):
        loc = ("tool", "dtkguard", "installed", i)
        table(item, loc)
        for key in ("name", "version"):
            if key in item and not isinstance(item[key], str):
                raise where.error((*loc, key), f"a {type(item[key]).__name__}, expected a string")
    for key in ("policy", "policy-sha256", "dtk"):
        if key in dtk and not isinstance(dtk[key], str):
            raise where.error(("tool", "dtkguard", key), "expected a string")
    for i, pkg in enumerate(data.get("packages", [])):
        tool = table(pkg.get("tool", {}), ("packages", i, "tool"))
        table(tool.get("dtkguard", {}), ("packages", i, "tool", "dtkguard"))
