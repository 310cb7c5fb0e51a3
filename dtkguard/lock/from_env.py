"""An installed set as its locked manifest (``dtkguard lock --from-env``).

Each installed dist is matched to a wheel of the same name and version in the given sources;
the wheel's RECORD must be contained in the installed RECORD (exact match). Dists without such a
wheel go to ``[[tool.dtkguard.installed]]`` (name, version, location, RECORD sha256, reason):
the lock stays a valid, installable PEP 751 file and drift audits still see every dist.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.lock.write import LockEntry


def env_python(env: Any) -> str | None:
    """``X.Y`` of the environment's interpreter (its reader's `TargetIdentity.python_version`);
    None when it is unknown, or when the dists of a path or root target sit under several."""
    from dtkguard.env.identity import site_pythons

    target = env.target
    if (
        target.kind in ("path", "root")
        and len(site_pythons(os.path.dirname(d.location) for d in env.dists)) > 1
    ):
        return None
    m = re.match(r"(3\.\d{1,2})", target.python_version or "")
    return m.group(1) if m else None


def target_of_env(env: Any, target: Any) -> Any | None:
    """The lock's target for an installed set: the environment's own Python (so pip installs
    the lock into it) on the given target's platforms; None when its Python cannot be told."""
    from dtkguard.resolve.target import TargetEnv

    version = env_python(env)
    if version is None:
        return None
    return TargetEnv(version, target.platforms, target.implementation)


@dataclass
class InstalledLock:
    """What locking an installed set found: wheel-matched entries, installed-only records,
    and the requirements the installed set does not satisfy."""

    entries: list[LockEntry] = field(default_factory=list)
    installed: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def lock_installed(
    env: Any, sources: list[Any], policy: Any, target: Any, lock_dir: Path
) -> InstalledLock:
    """Match every installed dist of ``env`` to a wheel in ``sources`` (see the module)."""
    from dtkguard.lock.build import entry_for, match_installed, record_digest
    from dtkguard.lock.write import LockEntry, closure_problems
    from dtkguard.resolve.metadata import Metadata
    from dtkguard.resolve.sources import InstalledEnv

    found = InstalledLock()
    unlocked = []
    here = InstalledEnv(env)
    seen: set[str] = set()
    for dist in sorted(env.dists, key=lambda d: (d.key, d.version)):
        if dist.key in seen:
            continue
        seen.add(dist.key)
        link, how = match_installed(dist, sources, target)
        if link is None:
            item = {"name": dist.key, "version": dist.version, "location": dist.location}
            digest = record_digest(dist)
            if digest:
                item["record-sha256"] = digest
            item["reason"] = how
            found.installed.append(item)
            own = here.links(dist.key)
            if own:
                meta = Metadata(here.metadata(own[0]), own[0])
                unlocked.append(LockEntry(dist.key, dist.version, meta.requires_dist))
            continue
        meta = Metadata(link.source.metadata(link), link)
        entry = entry_for(
            link,
            policy,
            lock_dir,
            requires_dist=meta.requires_dist,
            requires_python=str(meta.requires_python) if meta.requires_python else None,
        )
        entry.tool["match"] = how
        found.entries.append(entry)
    # every installed dist's requirements, checked against everything installed
    found.problems = closure_problems(found.entries + unlocked, target.markers)
    return found


def installed_document(
    env: Any,
    found: InstalledLock,
    policy: Any,
    target: Any,
    inputs: dict[str, Any],
    note: str | None,
) -> dict[str, Any]:
    """The PEP 751 document of an installed set; ``[tool.dtkguard]`` records the environment."""
    from dtkguard.lock.tool import tool_table
    from dtkguard.lock.write import build_document

    tool = tool_table(policy, target, inputs, note)
    tool["environment"] = {k: str(v) for k, v in sorted(env.target.to_json().items())}
    if found.installed:
        tool["installed"] = found.installed
    return build_document(
        found.entries,
        requires_python=target.lock_requires_python(),
        environments=[target.environment_marker()],
        tool=tool,
    )
