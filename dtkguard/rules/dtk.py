"""dtk-mixed and torch-abi: vendor builds must agree on the DTK release and the torch ABI."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from dtkguard.env.dist import Dist
from dtkguard.findings import Finding, Severity
from dtkguard.policy.labels import DtkRelease, label_of, release_of
from dtkguard.rules.context import CheckContext


def _reference(ctx: CheckContext, dists: list[Dist]) -> tuple[DtkRelease, str] | None:
    """The DTK release the environment is meant for, and where that comes from."""
    if ctx.policy.dtk:
        return DtkRelease.parse(ctx.policy.dtk), f"policy {ctx.policy.name}"
    torch = next((d for d in dists if d.key == "torch"), None)
    label = label_of(torch.version) if torch else None
    if torch and label and label.dtk:
        return label.dtk, f"torch {torch.version}"
    releases = Counter(lbl.dtk for d in dists if (lbl := label_of(d.version)) and lbl.dtk)
    if not releases:
        return None
    release, _ = releases.most_common(1)[0]
    return release, "most vendor builds"


def _allowed(release: DtkRelease, reference: DtkRelease, allow: tuple[str, ...]) -> bool:
    if release == reference:
        return True
    for text in allow:
        entry = DtkRelease.parse(text)
        if entry == release or (entry.patch is None and entry.series == release.series):
            return True
    return False


def check(ctx: CheckContext) -> Iterator[Finding]:
    for dists in ctx.env.groups().values():
        yield from _mixed(ctx, dists)
        yield from _abi(dists)


def _mixed(ctx: CheckContext, dists: list[Dist]) -> Iterator[Finding]:
    ref = _reference(ctx, dists)
    if ref is None:
        return
    reference, source = ref
    for dist in dists:
        label = label_of(dist.version)
        if label is None or label.dtk is None:
            continue
        if _allowed(label.dtk, reference, ctx.policy.dtk_allow):
            continue
        yield Finding(
            "dtk-mixed",
            Severity.HIGH,
            dist.key,
            f"{dist.name} {dist.version} is built for DTK {label.dtk}; the environment is "
            f"DTK {reference} ({source})",
            f"install the build of {dist.name} for DTK {reference}, or allow DTK {label.dtk} "
            f"in the policy's dtk-allow",
            f"{dist.location}/METADATA",
            {"release": str(label.dtk), "expected": str(reference)},
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
        yield Finding(
            "torch-abi",
            Severity.HIGH,
            dist.key,
            f"{dist.name} {dist.version} was built against torch {label.torch}; "
            f"torch {torch.version} is installed",
            f"install the build of {dist.name} made for torch {'.'.join(map(str, release[:3]))}",
            f"{dist.location}/METADATA",
            {"built_for": str(label.torch), "torch": torch.version},
        )
