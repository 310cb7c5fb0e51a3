"""Read a PEP 751 ``pylock.*.toml`` file: packaging's `Pylock` plus a view of ``[tool.dtkguard]``.

The lock is validated and parsed by ``packaging.pylock`` (the declared floor, packaging 26.1,
has it): names, versions, markers and files are packaging's objects, and errors name the file,
the line and the offending key. dtkguard reads only its own ``[tool.dtkguard]`` table on top
(`DtkguardTable`): the policy, the DTK release, and the distributions ``lock --from-env`` found
installed without a wheel (`Installed`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.pylock import (
    Package,
    PackageArchive,
    PackageSdist,
    PackageWheel,
    Pylock,
    PylockValidationError,
)

from dtkguard.decision import canonical
from dtkguard.errors import InputError

#: one file of a locked package: a wheel, its sdist or an archive
LockedFile = PackageWheel | PackageSdist | PackageArchive


@dataclass(frozen=True)
class Installed:
    """One ``[[tool.dtkguard.installed]]`` entry: a distribution `lock --from-env` found
    installed with no wheel to lock (see lockfiles/README.md)."""

    name: str
    version: str | None
    #: the entry as written (``name``, ``version`` and whatever else it says)
    table: Mapping[str, Any]

    @property
    def key(self) -> str:
        return canonical(self.name)


@dataclass(frozen=True)
class DtkguardTable:
    """What dtkguard reads of the lock's ``[tool.dtkguard]`` table."""

    policy: str | None = None
    policy_sha256: str | None = None
    dtk: str | None = None
    installed: tuple[Installed, ...] = ()
    #: the whole table as written (``inputs``, ``note``, ...)
    table: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Lock:
    """A read lock: where it is, packaging's `Pylock`, and dtkguard's table."""

    path: Path
    pylock: Pylock
    dtkguard: DtkguardTable

    def by_name(self) -> dict[str, Package]:
        """The locked packages by (normalised) name; ``installed`` entries are not packages."""
        return {p.name: p for p in self.pylock.packages}

    def pins(self) -> Iterator[tuple[str, str | None, str | None]]:
        """(name as written, version, marker) of every package the lock pins, then of every
        ``installed`` entry (no marker): what an installed set is compared with."""
        for pkg in self.pylock.packages:
            marker = str(pkg.marker) if pkg.marker is not None else None
            yield pkg.name, version_of(pkg), marker
        for item in self.dtkguard.installed:
            yield item.name, item.version, None

    def versions(self) -> dict[str, str | None]:
        """{canonical name: version} of `pins` (a name locked twice, for two markers: the
        last)."""
        return {canonical(name): version for name, version, _ in self.pins()}


def files(pkg: Package) -> Iterator[LockedFile]:
    """The package's wheels, then its sdist and its archive."""
    yield from pkg.wheels or ()
    if pkg.sdist is not None:
        yield pkg.sdist
    if pkg.archive is not None:
        yield pkg.archive


def file_name(f: LockedFile) -> str:
    """The file's name: as the lock says it, else the last part of its path or URL."""
    import posixpath

    return getattr(f, "name", None) or posixpath.basename(f.path or f.url or "")


def version_of(pkg: Package) -> str | None:
    """The locked version as text (packaging's normal form), None when the lock has none."""
    return str(pkg.version) if pkg.version is not None else None


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
    pylock = _validate(where, data)
    return Lock(path, pylock, _dtkguard_table(where, data))


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


def _validate(where: _Where, data: dict[str, Any]) -> Pylock:
    if not isinstance(data.get("packages", []), list):
        raise where.error(("packages",), "not an array of tables")
    for i, pkg in enumerate(data.get("packages", [])):
        if not isinstance(pkg, dict) or not isinstance(pkg.get("name"), str):
            raise where.error(("packages", i, "name"), "package without a name")
    try:
        return Pylock.from_dict(data)
    except PylockValidationError as exc:
        loc = _context_loc(exc.context)
        raise where.error(loc, f"not a valid PEP 751 lock: {exc.message}") from None
    except Exception as exc:  # PylockUnsupportedVersionError and friends
        raise where.error(("lock-version",), f"not a valid PEP 751 lock: {exc}") from None


def _dtkguard_table(where: _Where, data: dict[str, Any]) -> DtkguardTable:
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
    return DtkguardTable(
        dtk.get("policy"),
        dtk.get("policy-sha256"),
        dtk.get("dtk"),
        tuple(
            Installed(item["name"], item.get("version"), dict(item))
            for item in installed
            if item.get("name")
        ),
        dict(dtk),
    )
