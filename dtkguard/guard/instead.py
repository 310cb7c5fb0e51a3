"""What to do instead of a vetoed install: the vendor build, or a version of the requested
package that pip can resolve with the vendor builds kept, or the range it needs."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from dtkguard.decision import canonical
from dtkguard.guard.pipargs import REQUIREMENT_OPTIONS, PipCommand
from dtkguard.guard.plan import Plan, Planned, dry_run
from dtkguard.guard.tools import DTKPIP, Tool
from dtkguard.guard.verdict import Verdict
from dtkguard.guard.veto_text import requirements_on
from dtkguard.policy.compiled import CompiledPolicy

#: at most this many extra dry runs to find alternatives
_MAX_PROBES = 3


def options_only(args: list[str], value_options: frozenset[str]) -> list[str]:
    """The install options without requirement arguments (positionals, -r, -e)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if not arg.startswith("-"):
            i += 1
            continue
        if name in REQUIREMENT_OPTIONS or arg[:2] in ("-r", "-e"):
            i += 2 if arg in value_options else 1
            continue
        out.append(arg)
        if arg in value_options and i + 1 < len(args):
            out.append(args[i + 1])
            i += 1
        i += 1
    return [a for a in out if a not in ("--force-reinstall", "-I", "--ignore-installed")]


def _req_key(line: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return canonical(Requirement(line).name)
    except InvalidRequirement:
        return ""


def _applies(line: str, environment: dict[str, str]) -> bool:
    from packaging.requirements import Requirement

    try:
        req = Requirement(line)
        return req.marker is None or req.marker.evaluate({**environment, "extra": ""})
    except Exception:
        return False


def _source_hint(policy: CompiledPolicy) -> str:
    if policy.find_links:
        return f" --find-links {shlex.quote(policy.find_links[0])}"
    if policy.indexes:
        return f" --extra-index-url {shlex.quote(policy.indexes[0])}"
    return ""


def suggestions(
    verdict: Verdict,
    policy: CompiledPolicy,
    python: str,
    cmd: PipCommand,
    constraints: Path,
    env: dict[str, str],
    *,
    tool: Tool = DTKPIP,
    probe: Callable[[list[str]], Plan] | None = None,
) -> list[str]:
    """``probe(install args)`` plans with the vendor pins (default: pip's dry run)."""
    if probe is None:

        def probe(args: list[str]) -> Plan:
            return dry_run(python, cmd.global_args, args, constraints, env)

    replaced_vendor = [
        (name, old) for name, old, _new in verdict.replaced() if policy.vendor_build(name)
    ]
    requested = [p for p in verdict.plan.install if p.requested]
    out = _vendor_pins(verdict, policy, requested, replaced_vendor, tool)
    options = options_only(cmd.args, cmd.value_options)
    out += _probed(verdict, policy, requested, replaced_vendor, options, probe, tool)
    return out or _general(verdict, replaced_vendor)


def _vendor_pins(
    verdict: Verdict,
    policy: CompiledPolicy,
    requested: list[Planned],
    replaced_vendor: list[tuple[str, str]],
    tool: Tool,
) -> list[str]:
    """For each requested package: its vendor build, and which of its requirements the
    installed vendor builds do not meet (only when the policy allows the package itself: a
    pinned or denied name has no other release to pick)."""
    from dtkguard.guard.baseline import allowed

    out: list[str] = []
    hint = _source_hint(policy)
    vendor_names = {canonical(n) for n, _old in replaced_vendor}
    for p in requested:
        pin = policy.vendor_build(p.name)
        if pin and pin != p.version:
            out.append(f"use the vendor build: {tool.install}{hint} '{canonical(p.name)}=={pin}'")
        own = [
            spec
            for spec in p.requires_dist
            if _req_key(spec) in vendor_names and _applies(spec, verdict.plan.environment)
        ]
        if own:
            have = ", ".join(
                f"{n} {o}" for n, o in replaced_vendor if canonical(n) in {_req_key(s) for s in own}
            )
            pick = (  # only where another release may be allowed
                f": pick a {p.name} release whose requirements they satisfy"
                if allowed(policy, p.name, p.version)
                else ""
            )
            out.append(
                f"{p.name} {p.version} needs {'; '.join(own)}; the installed vendor builds are "
                f"{have}{pick}"
            )
    return out


def _probed(
    verdict: Verdict,
    policy: CompiledPolicy,
    requested: list[Planned],
    replaced_vendor: list[tuple[str, str]],
    options: list[str],
    probe: Callable[[list[str]], Plan],
    tool: Tool,
) -> list[str]:
    """For each requested community package (at most `_MAX_PROBES`): the version pip resolves
    with the vendor pins, or why none works."""
    out: list[str] = []
    probes = 0
    denied: dict[str, list[str]] = {}  # reason -> names no release of which is allowed
    for p in requested:
        if policy.vendor_build(p.name) or probes >= _MAX_PROBES:
            continue
        reason = _denied_outright(policy, p.name, p.version)
        if reason is not None:
            denied.setdefault(reason, []).append(p.name)
            continue
        needs = [
            f"{who} requires {spec}"
            for name, _old in replaced_vendor
            for who, spec in requirements_on(verdict, name, verdict.plan.environment)
        ]
        probes += 1
        alt = probe([*options, canonical(p.name)])
        found = next((q for q in alt.install if q.key == p.key), None) if alt.ok else None
        if found is None and alt.ok:
            dist = verdict.before.get(p.name)
            found_version = dist.version if dist else None
        else:
            found_version = found.version if found else None
        other = found_version and found_version != p.version
        if other and _policy_allows(policy, alt, p.name, str(found_version)):
            out.append(
                f"{p.name}=={found_version} works with the installed vendor builds (pip resolved "
                f"it with the vendor pins): {tool.install} '{p.name}=={found_version}'"
            )
        elif needs:
            pins = ", ".join(
                f"{name} {old}" for name, old in replaced_vendor if policy.vendor_build(name)
            )
            out.append(
                f"no available version of {p.name} works with the vendor builds ({pins}); "
                f"{'; '.join(needs[:4])}. Ask for a vendor build of {p.name}, or one made for "
                f"DTK {policy.dtk or '?'}"
            )
    for why, names in denied.items():
        more = f" and {len(names) - 6} more" if len(names) > 6 else ""
        out.append(f"do not install {', '.join(names[:6])}{more}: denied by the policy ({why})")
    return out


def _denied_outright(policy: CompiledPolicy, name: str, version: str) -> str | None:
    """The deny rule's reason when the decision core refuses ``name`` and no build of it is
    allowed (no vendor build either): no other release or build is worth suggesting."""
    from dtkguard.guard.baseline import refused

    rule = policy.deny_rule(name)
    if rule is None or rule.vendor_builds_ok:
        return None
    if not any(r == "denied-package" for r, _msg in refused(policy, name, version)):
        return None  # an exception of the policy lets it in
    return rule.reason


def _policy_allows(policy: CompiledPolicy, alt: Plan, name: str, version: str) -> bool:
    """The decision core lets ``name`` at ``version`` and every package of the alternative
    plan be in the environment (a suggestion never names what the policy denies)."""
    from dtkguard.guard.baseline import allowed

    planned = [(q.name, q.version) for q in alt.install] if alt.ok else []
    return all(allowed(policy, n, v) for n, v in [(name, version), *planned])


def _general(verdict: Verdict, replaced_vendor: list[tuple[str, str]]) -> list[str]:
    """What to do when nothing more specific was found."""
    out: list[str] = []
    names = sorted({name for name, _old in replaced_vendor})
    if names:
        out.append(
            "keep the vendor builds of " + ", ".join(names) + ": install a version whose "
            "requirements they satisfy"
        )
    denied = sorted({f.subject for f in verdict.blocking if f.rule == "denied-package"})
    if denied:
        out.append(
            "do not install "
            + ", ".join(denied[:6])
            + ("..." if len(denied) > 6 else "")
            + ": they are CUDA-only or denied by the policy"
        )
    return out
