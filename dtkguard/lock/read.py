"""Read PEP 751 ``pylock.*.toml`` files into what audits and exports need.

Validation goes through ``packaging.pylock`` when the installed packaging has it (26.0+);
errors name the file and the offending key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dtkguard.errors import InputError
from dtkguard.policy.compiled import canonical


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


def read_lock(path: str | Path) -> Lock:
    """Parse and validate a lock; `InputError` (exit 2) names the file and the problem."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read lock: {exc}", str(path)) from None
    try:
        data = tomlkit.parse(text).unwrap()
    except ParseError as exc:
        raise InputError(
            f"invalid TOML: {str(exc).split(' at line ')[0]}", str(path), exc.line, exc.col
        ) from None
    _validate(path, data)
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


def _validate(path: Path, data: dict[str, Any]) -> None:
    try:
        from packaging.pylock import Pylock, PylockValidationError
    except ImportError:  # packaging < 26: check the essentials by hand
        if str(data.get("lock-version", "")).split(".")[0] != "1":
            raise InputError(
                "unsupported or missing lock-version", str(path), field="lock-version"
            ) from None
        for i, pkg in enumerate(data.get("packages", [])):
            if not isinstance(pkg, dict) or "name" not in pkg:
                raise InputError(
                    "package without a name", str(path), field=f"packages[{i}]"
                ) from None
        return
    try:
        Pylock.from_dict(data)
    except PylockValidationError as exc:
        raise InputError(f"not a valid PEP 751 lock: {exc}", str(path)) from None
    except Exception as exc:  # PylockUnsupportedVersionError and friends
        raise InputError(f"not a valid PEP 751 lock: {exc}", str(path)) from None
