"""vendor-replaced and vendor-mismatch: a pinned vendor package must be exactly its build."""

from __future__ import annotations

from collections.abc import Iterator

from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo

#: the rules this family reports, with their default severity (collected by
#: `dtkguard.rules.catalog`)
RULES = (
    RuleInfo(
        "vendor-replaced",
        Severity.CRITICAL,
        "Vendor build replaced by a community build",
        "A package the policy pins to a DAS/DTK vendor build is installed without its "
        "vendor label, usually a CUDA build from the public index. Reinstall the vendor "
        "wheel from the vendor wheelhouse with --no-deps.",
        family="vendor",
    ),
    RuleInfo(
        "vendor-mismatch",
        Severity.HIGH,
        "Another vendor build than the policy names",
        "A vendor package carries a DAS/DTK label, but not the exact build the policy "
        "pins. Install the pinned build or update the policy.",
        family="vendor",
    ),
)


def same_version(a: str, b: str) -> bool:
    """PEP 440 equality, local labels included (``2.4.1+DAS.opt1`` is ``2.4.1+das.opt1``)."""
    from dtkguard.decision import same_version as same

    return same(a, b)


def reinstall_hint(name: str, pin: str, ctx: CheckContext) -> str:
    source = (
        f" from the vendor wheelhouse ({ctx.policy.find_links[0]})"
        if ctx.policy.find_links
        else " from the vendor wheelhouse"
    )
    return (
        f"reinstall the vendor build{source}: dtkpip install --no-deps --force-reinstall "
        f"'{name}=={pin}'"
    )


def check(ctx: CheckContext) -> Iterator[Finding]:
    from dtkguard.decision import judge_dist

    policy = ctx.policy.decision_json()
    for dist in ctx.env:
        if ctx.policy.vendor_build(dist.name) is None:
            continue
        for p in judge_dist(policy, dist.name, dist.version):
            if p.rule in ("vendor-replaced", "vendor-mismatch"):
                yield Finding(
                    p.rule,
                    Severity(p.severity),
                    dist.key,
                    p.message,
                    reinstall_hint(dist.name, ctx.policy.vendor_build(dist.name) or "", ctx),
                    f"{dist.location}/METADATA",
                    p.evidence,
                )
