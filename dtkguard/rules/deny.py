"""denied-package: a package the policy denies is installed."""

from __future__ import annotations

import re
from collections.abc import Iterator

from dtkguard.findings import Finding, Severity
from dtkguard.policy.compiled import canonical
from dtkguard.policy.labels import label_of
from dtkguard.rules.context import CheckContext

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _required_by(ctx: CheckContext) -> dict[str, list[str]]:
    """canonical name -> the installed dists whose Requires-Dist names it."""
    out: dict[str, list[str]] = {}
    for dist in ctx.env:
        for line in dist.requires_dist:
            if m := _NAME.match(line):
                out.setdefault(canonical(m.group(1)), []).append(f"{dist.name} {dist.version}")
    return {name: list(dict.fromkeys(parents)) for name, parents in out.items()}


def check(ctx: CheckContext) -> Iterator[Finding]:
    required_by: dict[str, list[str]] | None = None
    for dist in ctx.env:
        rule = ctx.policy.deny_rule(dist.name)
        if rule is None:
            continue
        label = label_of(dist.version)
        if rule.vendor_builds_ok and label is not None and label.is_vendor:
            continue
        if required_by is None:
            required_by = _required_by(ctx)
        parents = required_by.get(dist.key, [])
        why = f"; required by {', '.join(parents)}" if parents else ""
        yield Finding(
            "denied-package",
            Severity(rule.severity),
            dist.key,
            f"{dist.name} {dist.version} is denied by policy {ctx.policy.name}: {rule.reason}{why}",
            f"pip uninstall {dist.name}"
            + (f", and restore what pulled it in ({parents[0]})" if parents else ""),
            f"{dist.location}/METADATA",
            {"pattern": rule.pattern, "version": dist.version, "required_by": parents},
        )
