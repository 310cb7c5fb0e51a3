"""vendor-replaced and vendor-mismatch: a pinned vendor package must be exactly its build."""

from __future__ import annotations

from collections.abc import Iterator

from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from dtkguard.env.dist import Dist

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
    RuleInfo(
        "vendor-deps-broken",
        Severity.HIGH,
        "A vendor build's requirements are not met",
        "A vendor build (torch ...) needs a dependency (its Requires-Dist) that is missing or "
        "at a version it does not accept, e.g. sympy 1.14.0 where torch pins 1.13.1, after "
        "a `pip uninstall` or an upgrade; the vendor build breaks at import or at run time. "
        "Install the required version; the pip hook, dtkpip and dtkuv refuse such a change.",
        family="vendor",
    ),
)


def same_version(a: str, b: str) -> bool:
    """PEP 440 equality, local labels included (``2.4.1+DAS.opt1`` is ``2.4.1+das.opt1``)."""
    from dtkguard.decision import same_version as same

    equal: bool = same(a, b)
    return equal


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
        if ctx.policy.vendor.get(dist.key) is None:  # vendor_build, by the name's cached key
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
    yield from deps_check(ctx)


def _baseline_versions(ctx: CheckContext) -> dict[str, str] | None:
    """{name: version} of the guard's baseline (None: none readable). A vendor requirement
    already unmet when the env was guarded is the image's own state, not a change's: only what
    broke since is reported."""
    from dtkguard.env.baseline import load, load_dists
    from dtkguard.errors import InputError
    from dtkguard.rules.baseline import baseline_files

    for _, host in baseline_files(ctx.env):
        try:
            # on this host only its `dists` line is read (a dtkpip verdict runs this twice)
            dists = load_dists(host) if ctx.env.root.is_host else (load(host) or {}).get("dists")
        except InputError:
            return None
        if dists is not None:
            return {k: str(v.get("version")) for k, v in (dists or {}).items()}
    return None


def deps_check(ctx: CheckContext) -> Iterator[Finding]:
    """``vendor-deps-broken``: every installed vendor build's Requires-Dist is met. The
    judgement is remembered for exactly its inputs (`dtkguard.util.memo`): a check of an
    unchanged env does not import packaging's requirement parser again."""
    dists = {d.key: d for d in reversed(list(ctx.env))}  # the first on sys.path wins
    requires = {
        k: d.requires_dist for k, d in dists.items() if ctx.policy.vendor.get(k) is not None
    }
    versions = {k: d.version for k, d in dists.items()}
    python = getattr(ctx.env.target, "python_version", None)
    marks = {"python_version": ".".join(str(python).split(".")[:2])} if python else None
    pins = {k: ctx.policy.vendor.get(k) for k in dists}
    # the baseline only drops what was broken already: read only when something is broken
    found = _judged(requires, versions, None, marks, pins)
    if found:
        found = _judged(requires, versions, _baseline_versions(ctx), marks, pins)
    for evidence, message in found:
        vendor = dists[evidence["vendor"]]
        dep = evidence["dependency"]
        yield Finding(
            "vendor-deps-broken",
            Severity.HIGH,
            dep,
            message,
            f"install what the vendor build needs: dtkpip install '{_spec(vendor, dep)}'",
            f"{vendor.location}/METADATA",
            evidence,
        )


def _judged(
    requires: dict[str, list[str]],
    versions: dict[str, str],
    before: dict[str, str] | None,
    marks: dict[str, str] | None,
    pins: dict[str, str | None],
) -> list[tuple[dict[str, Any], str]]:
    """[(evidence, message)] of `dtkguard.decision.judge_vendor_deps` for these inputs (each
    pair a JSON list when the memo holds it: unpacked alike)."""
    from dtkguard import decision
    from dtkguard.util.memo import memo

    def compute() -> list[tuple[dict[str, Any], str]]:
        from packaging.requirements import Requirement

        found = decision.judge_vendor_deps(requires, versions, Requirement, before, marks, pins)
        return [(p.evidence, p.message) for p in found]

    inputs = [requires, versions, before, marks, pins]
    found: list[tuple[dict[str, Any], str]] = memo(
        "vendor-deps-v1", inputs, compute, [decision.__file__, __file__]
    )
    return found


def _spec(vendor: Dist, dep: str) -> str:
    """The vendor build's own requirement on ``dep`` (its text before any marker)."""
    from dtkguard.decision import canonical

    for text in vendor.requires_dist:
        head = text.split(";", 1)[0].strip()
        name = head.split("[", 1)[0]
        for sep in "<>=!~ (":
            name = name.split(sep, 1)[0]
        if canonical(name) == dep:
            return head
    return dep
