"""vendor-missing, vendor-not-baseline, vendor-files-changed, baseline-tampered: the target
against the baseline `guard install` recorded (`dtkguard.guard.baseline`).

Routes no hook sees (a manual copy or ``rm -rf``, ``python -m installer``, an egg, conda, uv
with ``--no-config``) leave the vendor builds changed; this check finds them without a lock. A
fast pass compares size and mtime; only files whose size is equal and mtime is not are hashed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from dtkguard.env.store_path import BASELINE_FILE, MANIFEST_FILE, RECORD_FILE, STAT_CACHE_FILE
from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo
from dtkguard.util import purepath

VENDOR_MISSING = RuleInfo(
    "vendor-missing",
    Severity.CRITICAL,
    "Vendor build gone since guard install",
    "A vendor build the guard's baseline recorded is no longer installed (removed by "
    "hand, by uv --no-config, conda, an installer that no hook sees). Restore it with "
    "dtkguard restore --python <interpreter>.",
    family="baseline",
)

VENDOR_NOT_BASELINE = RuleInfo(
    "vendor-not-baseline",
    Severity.CRITICAL,
    "Vendor name and label, other bytes",
    "The installed build carries the vendor's name and label, but its RECORD differs "
    "from the one recorded by guard install: a relabelled community build. Restore the "
    "vendor build with dtkguard restore --python <interpreter>.",
    family="baseline",
)

VENDOR_FILES_CHANGED = RuleInfo(
    "vendor-files-changed",
    Severity.CRITICAL,
    "Vendor build's files changed since guard install",
    "Files of a vendor build differ from the guard's baseline (a manual copy, an egg or "
    "an installer writing over them). Restore with dtkguard restore --python "
    "<interpreter>.",
    family="baseline",
)

BASELINE_TAMPERED = RuleInfo(
    "baseline-tampered",
    Severity.HIGH,
    "The guard's baseline cannot be trusted",
    "baseline.json is unreadable or differs from the digest in the guard's manifest. "
    "Check the environment, then record it again with guard install --rebaseline.",
    family="baseline",
)

#: the rules this family reports, with their default severity (collected by
#: `dtkguard.rules.catalog`)
RULES = (VENDOR_MISSING, VENDOR_NOT_BASELINE, VENDOR_FILES_CHANGED, BASELINE_TAMPERED)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from dtkguard.env.baseline import Change
    from dtkguard.env.environment import Environment


def target_prefixes(env: Environment) -> list[str]:
    """The interpreter prefixes of the target, as it sees them (its own, its sites')."""
    from dtkguard.env.environment import prefix_of

    prefixes = [env.target.prefix] if env.target.prefix else []
    prefixes += [prefix_of(env.root.inner(site)) for site in env.sites]
    return list(dict.fromkeys(p for p in prefixes if p))


def baseline_files(env: Environment) -> list[tuple[str, str]]:
    """(inner path, host path) of every guard baseline of the target's prefixes: the guard
    store's copy (the reference) for an env of this host the store knows, else a baseline
    inside the prefix (a guard from before the store, or an image guarded elsewhere)."""
    from dtkguard.env.baseline import baseline_text, legacy_baseline_text
    from dtkguard.env.root import ConfinementError

    root = env.root
    found: dict[str, tuple[str, str]] = {}
    for prefix in target_prefixes(env):
        stored = baseline_text(prefix)
        manifest = purepath.join(purepath.parent(stored), MANIFEST_FILE)
        if root.is_host and purepath.is_file(manifest):
            # guarded since the store: its copy or none (guard-missing), never the env's own
            if os.path.lexists(stored):  # a FIFO there is a finding too
                found.setdefault(stored, (stored, stored))
            continue
        inner = legacy_baseline_text(prefix)
        try:
            host = root.resolve_text(inner) if not root.is_host else purepath.pure_path(inner)
        except ConfinementError:
            continue
        if root.lexists(host) and host not in found:  # a FIFO is a finding too
            found[host] = (inner, host)
    return list(found.values())


def load_baseline(env: Environment, host: str | os.PathLike[str]) -> dict[str, Any] | None:
    """`dtkguard.env.baseline.load` of ``host`` (confined to ``env``'s root), read once per
    environment and run: the vendor and baseline families both read the store's baseline. An
    `InputError` is raised again on every call."""
    from dtkguard.env.baseline import load
    from dtkguard.errors import InputError

    # kept on the Environment it was read for (not one of its fields), as its binaries are
    memo: dict[str, Any] = env.__dict__.setdefault("_baselines", {})
    key = os.fspath(host)
    if key not in memo:
        try:
            memo[key] = load(host, env.root)
        except InputError as exc:
            memo[key] = exc
    found = memo[key]
    if isinstance(found, InputError):
        raise found
    loaded: dict[str, Any] | None = found
    return loaded


def check(ctx: CheckContext) -> Iterator[Finding]:
    from dtkguard.env.baseline import restore_command
    from dtkguard.env.baseline import tampered as baseline_tampered
    from dtkguard.errors import InputError

    problem: str | None
    for inner, host in baseline_files(ctx.env):
        try:
            data = load_baseline(ctx.env, host)
        except InputError as exc:
            data, problem = None, exc.message
        else:
            tampered = baseline_tampered(inner, host, ctx.env.root)
            problem = "its digest differs from the guard's manifest" if tampered else None
        if problem or data is None:
            yield BASELINE_TAMPERED.finding(
                inner,
                f"the guard's baseline {inner} cannot be trusted: {problem}",
                "check the environment, then record it again: dtkguard guard install --rebaseline",
                inner,
                {},
            )
            if data is None:
                continue
        fix = f"restore the vendor builds: {restore_command(data.get('python') or '<python>')}"
        yield from _findings(ctx, data, inner, fix)


def _now_needed(ctx: CheckContext, change: Any, rel: str) -> list[str] | None:
    """What the changed file ``rel`` of a vendor build links now (None: not ELF, unreadable)."""
    from dtkguard.elf import ElfError
    from dtkguard.env.binaries import read_binary

    site = os.path.dirname(change.dist_info)
    inner = os.path.normpath(os.path.join(site, rel))
    try:
        host = ctx.env.root.resolve_text(inner) if not ctx.env.root.is_host else inner
        linkage = read_binary(host, "" if ctx.env.root.is_host else ctx.env.root.top)
    except (OSError, ElfError):
        return None
    return list(linkage.needed) if linkage is not None else None


def _linkage_evidence(ctx: CheckContext, change: Any, rel: str, recorded: Any) -> dict[str, Any]:
    if not isinstance(recorded, dict) or "needed" not in recorded:
        return {}
    return {"needed_recorded": recorded["needed"], "needed_now": _now_needed(ctx, change, rel)}


def _relinked(ctx: CheckContext, change: Any, rel: str, recorded: Any) -> str:
    """``; now links libcudart.so.12 (recorded: libgalaxyhip.so.5)`` for a swapped binary."""
    found = _linkage_evidence(ctx, change, rel, recorded)
    if not found:
        return ""
    now, was = found["needed_now"], found["needed_recorded"]
    if now is None or list(now) == list(was):
        return ""
    return f"; now links {', '.join(now) or 'nothing'} (recorded: {', '.join(was) or 'nothing'})"


def _compare(ctx: CheckContext, data: dict[str, Any], inner: str) -> list[Change]:
    """`compare` with the store's stat cache when the baseline is the store's (files a hash
    found equal are not hashed again while their inode and ctime stay); the cache is kept up to
    date when the store can be written."""
    from dtkguard.env.baseline import CompareStats, compare
    from dtkguard.env.store import load_stat_cache, save_stat_cache

    folder = purepath.parent(purepath.pure_path(inner))
    cache = purepath.join(folder, STAT_CACHE_FILE)  # the store's, beside its baseline
    stored = ctx.env.root.is_host and purepath.name(purepath.pure_path(inner)) == BASELINE_FILE
    stats = CompareStats(seen=load_stat_cache(cache) if stored else {})
    changes = compare(data, ctx.env.root, stats)
    if stored and stats.verified and purepath.is_file(purepath.join(folder, RECORD_FILE)):
        save_stat_cache(cache, {**stats.seen, **stats.verified})
    return changes


def _findings(ctx: CheckContext, data: dict[str, Any], inner: str, fix: str) -> Iterator[Finding]:
    when = data.get("created", "?")
    for change in _compare(ctx, data, inner):
        label = f"{change.name} {change.version}"
        evidence: dict[str, Any] = {"baseline": inner, "recorded": when, "expected": label}
        if change.kind == "missing":
            now = ctx.env.get(change.key)
            instead = f"; {now.name} {now.version} is there now" if now else ""
            if now:
                evidence["installed"] = now.version
            yield VENDOR_MISSING.finding(
                change.key,
                f"the vendor build {label} recorded by `guard install` ({when}) is gone" + instead,
                fix,
                change.dist_info,
                evidence,
            )
        elif change.kind == "record":
            yield VENDOR_NOT_BASELINE.finding(
                change.key,
                f"{label} carries the vendor's name and label, but its RECORD differs from "
                "the build `guard install` recorded: it is not the vendor build",
                fix,
                os.path.join(change.dist_info, "RECORD"),
                evidence,
            )
        else:
            recorded = data["vendor"][change.key]["files"]
            links = {rel: _relinked(ctx, change, rel, recorded[rel]) for rel, _ in change.files}
            names = ", ".join(f"{rel} ({what}{links[rel]})" for rel, what in change.files[:8])
            more = f" and {len(change.files) - 8} more" if len(change.files) > 8 else ""
            evidence["files"] = [
                {"path": rel, "change": w, **_linkage_evidence(ctx, change, rel, recorded[rel])}
                for rel, w in change.files
            ]
            yield VENDOR_FILES_CHANGED.finding(
                change.key,
                f"{len(change.files)} file(s) of the vendor build {label} changed since "
                f"`guard install`: {names}{more}",
                fix,
                change.dist_info,
                evidence,
            )
