"""resolvelib's functional cases on real PyPI snapshots, as wheelhouses of metadata-only wheels.

``tests/data/resolvelib/`` holds a selection of resolvelib's ``tests/functional/python/inputs``
(ISC licence, see ``tests/data/README.md``): ``index/*.json.gz`` maps project -> version ->
``{"dependencies": [Requires-Dist, ...]}`` as PyPI served it on the snapshot date, and
``case/*.json`` names an index, the requested requirements and the expected pins
(``resolved``) or the conflicting projects (``conflicted``).

:func:`snapshot_wheelhouse` writes one tiny ``py3-none-any`` wheel per version carrying exactly
those ``Requires-Dist`` lines. Versions that are not PEP 440 are left out (pip and uv ignore
them too); requirement strings are written as found, broken ones included.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from tests.support.wheels import build_wheel

DATA = Path(__file__).resolve().parents[1] / "data" / "resolvelib"

_EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")

__all__ = ["DATA", "Case", "load_case", "load_index", "snapshot_wheelhouse"]


@dataclass
class Case:
    """One functional case: what is requested and what resolvelib's oracle expects."""

    name: str
    index: str
    requested: list[str]
    resolved: dict[str, str] | None = None
    conflicted: list[str] = field(default_factory=list)


def load_case(name: str) -> Case:
    doc = json.loads((DATA / "case" / f"{name}.json").read_text())
    resolved = None
    if "resolved" in doc:
        resolved = {
            str(canonicalize_name(k)): v["version"] if isinstance(v, dict) else v
            for k, v in doc["resolved"].items()
        }
    return Case(name, doc["index"], doc["requested"], resolved, sorted(doc.get("conflicted", ())))


def load_index(name: str) -> dict[str, dict[str, list[str]]]:
    """``{project: {version: [Requires-Dist]}}`` of a snapshot (non-project keys dropped)."""
    with gzip.open(DATA / "index" / f"{name}.json.gz", "rt") as fh:
        doc = json.load(fh)
    return {
        project: {version: list(info.get("dependencies", ())) for version, info in versions.items()}
        for project, versions in doc.items()
        if isinstance(versions, dict)
    }


def snapshot_wheelhouse(name: str, dest: Path) -> Path:
    """Write the wheels of snapshot ``name`` into ``dest`` (idempotent) and return ``dest``."""
    done = dest / ".complete"
    if done.exists():
        return dest
    for project, versions in load_index(name).items():
        for version, requires in versions.items():
            try:
                Version(version)
            except InvalidVersion:
                continue
            extras = sorted({m for r in requires for m in _EXTRA.findall(r)})
            build_wheel(dest, project, version, requires_dist=requires, provides_extra=extras)
    done.write_text("")
    return dest
