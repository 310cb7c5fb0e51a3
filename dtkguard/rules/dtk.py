"""dtk-mixed and torch-abi: vendor builds must agree on the DTK release and the torch ABI."""

from __future__ import annotations

from collections.abc import Iterator

from dtkguard.env.dist import Dist
from dtkguard.findings import Finding, Severity
from dtkguard.policy.labels import label_of, release_of
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo

DTK_MIXED = RuleInfo(
    "dtk-mixed",
    Severity.HIGH,
    "Builds for different DTK releases side by side",
    "Extensions built for another DTK release than the environment's fail with "
    "undefined symbols. Use builds of one DTK release.",
    family="dtk",
)

TORCH_ABI = RuleInfo(
    "torch-abi",
    Severity.HIGH,
    "Extension built against another torch",
    "The .torchXYZ part of the local label names the torch the extension was built "
    "against; it does not match the installed torch.",
    family="dtk",
)

#: the rules this family reports, with their default severity (collected by
#: `dtkguard.rules.catalog`)
RULES = (DTK_MIXED, TORCH_ABI)


def check(ctx: CheckContext) -> Iterator[Finding]:
    for dists in ctx.env.groups().values():
        yield from _mixed(ctx, dists)
        yield from _abi(dists)


def _mixed(ctx: CheckContext, dists: list[Dist]) -> Iterator[Finding]:
    """The DTK release of every build against the environment's (the policy's, else torch's,
    else the most common one): `dtkguard.decision` decides, as in the pip hook and `lock`."""
    from dtkguard.decision import judge_dist, reference_release

    policy = ctx.policy.decision_json()
    reference = reference_release(policy, {d.key: d.version for d in dists})
    if reference is None:
        return
    for dist in dists:
        label = label_of(dist.version)
        if label is None or label.dtk is None:
            continue
        for p in judge_dist(policy, dist.name, dist.version, reference):
            if p.rule != "dtk-mixed":
                continue
            yield DTK_MIXED.finding(
                dist.key,
                p.message,
                f"install the build of {dist.name} for DTK {p.evidence['expected']}, or allow "
                f"DTK {label.dtk} in the policy's dtk-allow",
                f"{dist.location}/METADATA",
                p.evidence,
            )


def _abi(dists: list[Dist]) -> Iterator[Finding]:
    torch = next((d for d in dists if d.key == "torch"), None)
    if torch is None:
        return
    release = release_of(torch.version)
    if release is None:
        return
    for dist in dists:
        label = label_of(dist.version)
        if label is None or label.torch is None or label.torch.matches(release):
            continue
        yield TORCH_ABI.finding(
            dist.key,
            f"{dist.name} {dist.version} was built against torch {label.torch}; "
            f"torch {torch.version} is installed",
            f"install the build of {dist.name} made for torch {'.'.join(map(str, release[:3]))}",
            f"{dist.location}/METADATA",
            {"built_for": str(label.torch), "torch": torch.version},
        )
