"""denied-package: a package the policy denies is installed."""

from __future__ import annotations

import re
from collections.abc import Iterator

from dtkguard.decision import canonical
from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo

#: the rules this family reports, with their default severity (collected by
#: `dtkguard.rules.catalog`)
RULES = (
    RuleInfo(
        "denied-package",
        Severity.CRITICAL,
        "Denied package installed",
        "The policy denies this package, typically a CUDA-only wheel that cannot run on "
        "a DCU and signals that a community build was pulled in. Uninstall it.",
        family="deny",
    ),
)

_NAME = r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)"  # compiled on first use


def _required_by(ctx: CheckContext) -> dict[str, list[str]]:
    """canonical name -> the installed dists whose Requires-Dist names it."""
    out: dict[str, list[str]] = {}
    for dist in ctx.env:
        for line in dist.requires_dist:
            if m := re.match(_NAME, line):
                out.setdefault(canonical(m.group(1)), []).append(f"{dist.name} {dist.version}")
    return {name: list(dict.fromkeys(parents)) for name, parents in out.items()}


def check(ctx: CheckContext) -> Iterator[Finding]:
    from dtkguard.decision import judge_dist

    policy = ctx.policy.decision_json()
    required_by: dict[str, list[str]] | None = None
    for dist in ctx.env:
        if ctx.policy.deny_rule(dist.name) is None:
            continue
        for p in judge_dist(policy, dist.name, dist.version):
            if p.rule != "denied-package":
                continue
            if required_by is None:
                required_by = _required_by(ctx)
            parents = required_by.get(dist.key, [])
            why = f"; required by {', '.join(parents)}" if parents else ""
            yield Finding(
                "denied-package",
                Severity(p.severity),
                dist.key,
                p.message + why,
                f"pip uninstall {dist.name}"
                + (f", and restore what pulled it in ({parents[0]})" if parents else ""),
                f"{dist.location}/METADATA",
                {"pattern": p.evidence["pattern"], "version": dist.version, "required_by": parents},
            )
