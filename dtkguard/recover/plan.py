"""Compare an environment with what it should hold, and say what restoring it takes.

`make_plan` lists what will be removed (community builds, denied packages, packages that
arrived after the baseline or are not in the lock) and what will be (re)installed (each
build, exact label, the wheel found for it and what vouched for it), or why something cannot
be restored. `render` says it in dtkpip's words.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dtkguard.env.dist import Dist
from dtkguard.policy.compiled import CompiledPolicy
from dtkguard.records import paths_of
from dtkguard.recover.sources import INDEX_FALLBACK, Found, Sources
from dtkguard.recover.wanted import GUARD_INSTALL, Want, Wanted


@dataclass
class Removal:
    dist: Dist
    why: str
    #: its files include files of a vendor build (a wheel that overwrote torch/version.py):
    #: the guard's hook stops such a removal unless it is overridden
    touches_vendor: bool = False


@dataclass
class Install:
    want: Want
    #: the installed dist it replaces (None: not installed)
    current: Dist | None
    why: str
    found: Found | None = None
    #: from pip's index by name==version (other packages only)
    from_index: bool = False


@dataclass
class RestorePlan:
    wanted: Wanted
    removals: list[Removal] = field(default_factory=list)
    installs: list[Install] = field(default_factory=list)
    #: (name version, why) of what cannot be restored
    missing: list[tuple[str, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.removals or self.installs or self.missing)


def _planned(dist: Dist) -> Any:
    from dtkguard.guard.plan import Planned

    return Planned(dist.name, dist.version, {"requires_dist": dist.requires_dist})


def describe(dist: Dist, policy: CompiledPolicy) -> str:
    """``torch 2.7.0 (a community CUDA build)``: the words of dtkpip's veto."""
    from dtkguard.guard.veto_text import describe as explain

    text = explain(_planned(dist), policy)
    if dist.path.name.endswith(".egg-info"):
        text += " (an egg install)"
    return text


def _why_removed(dist: Dist, policy: CompiledPolicy, wanted: Wanted) -> str:
    rule = policy.deny_rule(dist.name)
    if rule is not None:
        return f"denied: {rule.reason}"
    pin = policy.vendor_build(dist.name)
    if pin is not None:  # even when an override let it in (approved changes never keep it)
        return f"the policy allows {dist.name} only as {pin}"
    if wanted.source == GUARD_INSTALL:
        return "added after `guard install`"
    if wanted.kind == "baseline":
        return "added after the baseline, not through dtkpip or dtkuv"
    return "not in the lock"


def _record_paths(dist: Dist) -> set[str]:
    record = dist.record
    if record is None:
        return set()
    try:
        text = record.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    site = str(dist.site)
    return {os.path.normpath(os.path.join(site, rel)) for rel in paths_of(text)}


def _installed_files(dist: Dist) -> set[str]:
    """Files an egg-info dist lists in installed-files.txt (paths relative to it)."""
    try:
        text = (dist.path / "installed-files.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    return {os.path.normpath(os.path.join(dist.path, line.strip())) for line in text.splitlines()}


def current_dists(roots: list[Path]) -> dict[str, list[Dist]]:
    """{canonical name: every dist of that name in the target's own install roots}: a name
    installed twice (an egg-info beside a dist-info) lists both."""
    from dtkguard.env.dist import scan_site
    from dtkguard.env.root import Root

    out: dict[str, list[Dist]] = {}
    for site in roots:
        for dist in scan_site(Root(), site)[0]:
            out.setdefault(dist.key, []).append(dist)
    return out


def _damaged(
    wanted: Wanted, policy: CompiledPolicy, dists: dict[str, list[Dist]]
) -> dict[str, str]:
    """{key: why} of vendor builds installed at the wanted version whose files are not right."""
    out: dict[str, str] = {}
    if wanted.baseline is not None:
        from dtkguard.env.baseline import compare

        for change in compare(wanted.baseline):
            if change.key not in wanted.dists:
                continue
            if change.kind == "files":
                shown = ", ".join(f"{p} {k}" for p, k in change.files[:3])
                more = f" and {len(change.files) - 3} more" if len(change.files) > 3 else ""
                out[change.key] = f"files differ from the baseline: {shown}{more}"
            elif change.kind == "record":
                out.setdefault(change.key, "its RECORD differs from the baseline's")
            else:
                out.setdefault(change.key, "its dist-info is gone")
        return out
    from dtkguard.recover.vault import damage

    for key, want in wanted.dists.items():
        if want.vendor and dists.get(key):
            bad = damage(dists[key][0])
            if bad:
                out[key] = f"files differ from its RECORD: {', '.join(bad[:3])}"
    return out


def make_plan(
    wanted: Wanted, policy: CompiledPolicy, roots: list[Path], sources: Sources
) -> RestorePlan:
    from dtkguard.rules.vendor import same_version

    plan = RestorePlan(wanted)
    dists = current_dists(roots)
    damaged = _damaged(wanted, policy, dists)
    removed_files: set[str] = set()
    vendor_files = {
        path
        for key, want in wanted.dists.items()
        if want.vendor
        for dist in dists.get(key, [])[:1]
        for path in _record_paths(dist)
    }
    for key, found in sorted(dists.items()):
        want = wanted.dists.get(key)
        if want is None and (key in wanted.keep or not wanted.remove_unlisted):
            continue
        # not wanted at all, or a second install of a wanted name (an egg beside the wheel)
        for dist in found if want is None else found[1:]:
            why = _why_removed(dist, policy, wanted) if want is None else "a second install"
            files = _record_paths(dist) | _installed_files(dist)
            plan.removals.append(Removal(dist, why, bool(files & vendor_files)))
            removed_files |= files
    for key, want in sorted(wanted.dists.items()):
        have = dists.get(key, [])
        current = have[0] if have else None
        if current is None:
            why = "not installed"
        elif not same_version(current.version, want.version) or (
            current.path.name.endswith(".egg-info") and want.vendor
        ):
            why = f"in place of {describe(current, policy)}"
        elif key in damaged:
            why = damaged[key]
        elif want.vendor and removed_files & _record_paths(current):
            shared = sorted(removed_files & _record_paths(current))
            why = f"shares {os.path.relpath(shared[0], current.site)} with a package removed"
        else:
            continue
        if key in wanted.keep and current is not None and not want.vendor:
            continue  # pip, setuptools, wheel: left as they are
        plan.installs.append(Install(want, current, why))
    for item in plan.installs:
        item.found, tried = sources.find(item.want, wanted)
        if item.found is None:
            if item.want.vendor or item.want.lock_wheels:
                looked = "; ".join(tried) or "no source configured"
                plan.missing.append(
                    (f"{item.want.name} {item.want.version}", f"no wheel passed ({looked})")
                )
            else:
                item.from_index = True
    plan.installs = [i for i in plan.installs if i.found is not None or i.from_index]
    return plan


def losses(plan: RestorePlan, policy: CompiledPolicy) -> list[str]:
    """``name version`` of what the plan removes or downgrades that the policy allows there
    (a restore asks before it destroys those; denied and community builds go unasked)."""
    from packaging.version import InvalidVersion, Version

    from dtkguard.guard.baseline import allowed

    out = [
        f"{r.dist.name} {r.dist.version}"
        for r in plan.removals
        if allowed(policy, r.dist.name, r.dist.version)
    ]
    for i in plan.installs:
        cur = i.current
        if cur is None or not allowed(policy, cur.name, cur.version):
            continue
        try:
            lower = Version(i.want.version) < Version(cur.version)
        except InvalidVersion:
            lower = False
        if lower:
            out.append(f"{cur.name} {cur.version} -> {i.want.version}")
    return out


def render(plan: RestorePlan, policy: CompiledPolicy, python: str, dry_run: bool) -> str:
    """The plan in dtkpip's words."""
    w = plan.wanted
    target = w.words
    if w.baseline is not None:
        target += f" ({w.baseline.get('created', '?')}, policy {w.baseline.get('policy', '?')})"
    if plan.empty:
        return f"dtkguard restore: {python} already matches {target}; nothing to do.\n"
    verb = "would" if dry_run else "will"
    out = [f"dtkguard restore: {python} back to {target}."]
    if plan.removals:
        out.append(f"Remove ({len(plan.removals)}):")
        nvidia = [r for r in plan.removals if r.dist.key.startswith("nvidia-")]
        if len(nvidia) > 1:
            names = ", ".join(r.dist.name for r in nvidia[:6]) + (
                ", ..." if len(nvidia) > 6 else ""
            )
            out.append(f"  - {len(nvidia)} nvidia-* CUDA wheel(s): {names} ({nvidia[0].why})")
        for r in plan.removals:
            if len(nvidia) > 1 and r in nvidia:
                continue
            out.append(f"  - {describe(r.dist, policy)}: {r.why}")
    if plan.installs:
        out.append(f"Reinstall ({len(plan.installs)}):")
        for i in plan.installs:
            kind = "the vendor build " if i.want.vendor else ""
            src = (
                f"from {i.found.where} ({i.found.wheel.name}; checked: {i.found.checked})"
                if i.found is not None
                else f"from {INDEX_FALLBACK}"
            )
            out.append(f"  - {kind}{i.want.name} {i.want.version}, {i.why}; {src}")
    if plan.missing:
        out.append(f"Cannot restore ({len(plan.missing)}):")
        out += [f"  - {what}: {why}" for what, why in plan.missing]
    if dry_run:
        out.append(
            f"Dry run: nothing was changed; `dtkguard restore --python {python}` {verb} do it."
        )
    return "\n".join(out) + "\n"
