"""A veto in plain words: what pip would have done, which rule forbids it, what to do instead."""

from __future__ import annotations

from packaging.markers import InvalidMarker
from packaging.requirements import InvalidRequirement, Requirement

from dtkguard.decision import canonical
from dtkguard.guard.plan import Planned
from dtkguard.guard.tools import DTKPIP, Tool
from dtkguard.guard.verdict import Verdict
from dtkguard.policy.compiled import CompiledPolicy, DenyRule
from dtkguard.policy.labels import label_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.findings import Finding

_SHOWN = 6


def is_cuda_build(p: Planned) -> bool:
    if "+cu" in p.version:
        return True
    names = [_req_name(r) for r in p.requires_dist]
    return any(n and (n.startswith("nvidia-") or n.startswith("cuda-")) for n in names)


def _req_name(line: str) -> str | None:
    try:
        return canonical(Requirement(line).name)
    except InvalidRequirement:
        return None


def describe(p: Planned, policy: CompiledPolicy) -> str:
    label = label_of(p.version)
    if label is not None and label.is_vendor:
        kind = "another vendor build"
    elif policy.vendor_build(p.name) and is_cuda_build(p):
        kind = "a community CUDA build"
    elif policy.vendor_build(p.name):
        kind = "a community build"
    else:
        kind = ""
    return f"{p.name} {p.version}" + (f" ({kind})" if kind else "")


def requirements_on(
    verdict: Verdict, name: str, environment: dict[str, str]
) -> list[tuple[str, str]]:
    """(planned package, its requirement) for every planned package that requires ``name``."""
    out = []
    key = canonical(name)
    for p in verdict.plan.install:
        for line in p.requires_dist:
            try:
                req = Requirement(line)
                if canonical(req.name) != key:
                    continue
                if req.marker is not None and not req.marker.evaluate({**environment, "extra": ""}):
                    continue
            except (InvalidRequirement, InvalidMarker, KeyError, ValueError):
                continue
            out.append((f"{p.name} {p.version}", f"{req.name}{req.specifier}" or req.name))
    return out


def what_pip_would_do(verdict: Verdict, policy: CompiledPolicy) -> list[str]:
    lines = []
    for name, old, new in verdict.replaced():
        pin = policy.vendor_build(name)
        was = "the vendor build " if pin and old == pin else ""
        lines.append(f"replace {was}{name} {old} with {describe(new, policy)}")
    added = verdict.added()
    nvidia = [p for p in added if p.key.startswith("nvidia-")]
    if nvidia:
        shown = ", ".join(p.name for p in nvidia[:_SHOWN]) + (
            ", ..." if len(nvidia) > _SHOWN else ""
        )
        lines.append(f"add {len(nvidia)} nvidia-* CUDA wheel(s): {shown}")
    flagged = {f.subject for f in verdict.blocking}
    for p in added:
        if p.key.startswith("nvidia-"):
            continue
        if p.key in flagged or policy.vendor_build(p.name):
            lines.append(f"add {describe(p, policy)}" + (" (denied)" if p.key in flagged else ""))
    rest = (
        len(added)
        - len(nvidia)
        - sum(1 for line in lines if line.startswith("add ") and "nvidia-*" not in line)
    )
    if rest > 0:
        lines.append(f"add {rest} other package(s)")
    removed = verdict.removed()
    vendor = [(n, v) for n, v in removed if policy.vendor_build(n)]
    for name, version in vendor:
        lines.append(f"remove the vendor build {name} {version}")
    if len(removed) > len(vendor):
        lines.append(f"remove {len(removed) - len(vendor)} other package(s)")
    return lines


def why(verdict: Verdict, policy: CompiledPolicy) -> list[str]:
    from dtkguard.rules.catalog import info

    lines = []
    groups: dict[tuple[str, str], list[Finding]] = {}
    rule: DenyRule | str | None
    for f in verdict.blocking:
        reason = f.message
        if f.rule == "denied-package":
            rule = policy.deny_rule(f.subject)
            reason = rule.reason if rule else f.message
        elif f.rule in ("vendor-replaced", "vendor-mismatch"):
            reason = info(f.rule).title.lower()
        elif f.rule == "vendor-missing":
            reason = "the vendor build would be removed, leaving no DCU build in its place"
        groups.setdefault((f.rule, reason), []).append(f)
    order = sorted(groups.items(), key=lambda kv: (not kv[0][0].startswith("vendor"), kv[0][0]))
    for (rule, reason), findings in order:
        sev = findings[0].severity.value
        subjects = ", ".join(f.subject for f in findings[:_SHOWN])
        more = ", ..." if len(findings) > _SHOWN else ""
        count = f" x{len(findings)}" if len(findings) > 1 else ""
        lines.append(f"{rule} ({sev}){count} [{subjects}{more}]: {reason}")
    return lines


def render(
    verdict: Verdict,
    policy: CompiledPolicy,
    command: str,
    instead: list[str],
    constrained_failed: bool,
    tool: Tool = DTKPIP,
) -> str:
    out = [f"{tool.name}: stopped `{command}`: nothing was installed or removed."]
    if constrained_failed:
        some = ", among others" if verdict.plan.partial else ""
        out.append(
            f"{tool.runs} cannot satisfy this request while keeping the vendor builds "
            f"(policy {policy.name}); without them it would{some}:"
        )
    else:
        out.append(f"What {tool.runs} would do:")
    out += [f"  - {line}" for line in what_pip_would_do(verdict, policy)]
    out.append(f"Why (policy {policy.name}):")
    out += [f"  - {line}" for line in why(verdict, policy)]
    if instead:
        out.append("What to do instead:")
        out += [f"  - {line}" for line in instead]
    subjects = [f.subject for f in verdict.blocking if f.rule.startswith("vendor")]
    subjects += [f.subject for f in verdict.blocking]
    out.append(
        f"See `dtkguard policy explain {subjects[0] if subjects else 'torch'}`. "
        f'If you must (recorded in the environment): {tool.name} --override "reason" '
        f"{command.removeprefix(tool.runs + ' ')}"
    )
    return "\n".join(out) + "\n"


def render_removal(vendor: list[str], policy: CompiledPolicy, command: str, tool: Tool) -> str:
    """A refused uninstall: ``vendor`` are ``name version`` of the vendor builds it removes."""
    what = "is a vendor build" if len(vendor) == 1 else "are vendor builds"
    first = vendor[0].split()[0]
    return (
        f"{tool.name}: stopped `{command}`: nothing was removed.\n"
        f"  - {', '.join(vendor)} {what} of policy {policy.name}; removing it leaves no "
        "DCU build in its place.\n"
        f"See `dtkguard policy explain {first}`. To put the vendor build back instead: "
        f"{tool.reinstall} '{vendor[0].replace(' ', '==')}'\n"
    )
