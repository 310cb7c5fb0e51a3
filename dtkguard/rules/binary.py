"""cuda-binary, foreign-hip, binary-unreadable: native code judged by what it links.

A CUDA build is recognised by its binaries, whatever the package is called: every ELF file a
dist ships (`dtkguard.env.binaries`) is judged by `dtkguard.decision.judge_binary` on its
``DT_NEEDED`` names and ``DT_SONAME`` against the policy's ``[binary]`` lists, the same
judgement the pip hook, dtkpip and dtkuv apply to a wheel's members before it is installed.
"""

from __future__ import annotations

from collections.abc import Iterator

from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo

CUDA_BINARY = RuleInfo(
    "cuda-binary",
    Severity.HIGH,
    "Native code that needs a CUDA runtime",
    "An extension module or library needs a CUDA runtime library (libcudart, libcublas, "
    "libcudnn, ... by its ELF DT_NEEDED entries, the policy's [binary] deny-needed list), or "
    "is one: it fails on a DCU with 'cannot open shared object file'. Install the DAS/DTK "
    "build of the package, or build it from source against DTK.",
    family="binary",
)

FOREIGN_HIP = RuleInfo(
    "foreign-hip",
    Severity.MEDIUM,
    "Native code built for ROCm, not DTK",
    "An extension module or library needs a ROCm HIP runtime (libamdhip64, the policy's "
    "[binary] hip-runtime list) and not the DTK one (libgalaxyhip, gpu-runtime): a ROCm "
    "build, which DTK does not ship the runtime for. Use the DAS/DTK build.",
    family="binary",
)

BINARY_UNREADABLE = RuleInfo(
    "binary-unreadable",
    Severity.MEDIUM,
    "Native code that could not be judged",
    "A file named and marked like a shared object (ELF magic) could not be read within the "
    "reader's limits: truncated, offsets past its end, huge counts, or not readable. What it "
    "links is unknown; check where it came from.",
    family="binary",
)

#: the rules this family reports, with their default severity (collected by
#: `dtkguard.rules.catalog`)
RULES = (CUDA_BINARY, FOREIGN_HIP, BINARY_UNREADABLE)
_BY_ID = {r.id: r for r in RULES}


def remediation(rule: str, dist: str, vendor: str | None) -> str:
    if vendor:
        return f"reinstall the vendor build: dtkpip install --force-reinstall '{dist}=={vendor}'"
    if rule == "foreign-hip":
        return f"replace {dist} with its DAS/DTK build (or build it against DTK's HIP)"
    return f"uninstall {dist}, or install its DAS/DTK build instead"


def check(ctx: CheckContext) -> Iterator[Finding]:
    from dtkguard.decision import judge_binary
    from dtkguard.env.binaries import env_binaries

    policy = ctx.policy.decision_json()
    for binary in env_binaries(ctx.env):
        vendor = ctx.policy.vendor_build(binary.dist)
        if binary.linkage is None:
            yield BINARY_UNREADABLE.finding(
                binary.dist,
                f"{binary.path} of {binary.dist} {binary.version} could not be judged: "
                f"{binary.error}",
                f"check where {binary.path} came from; reinstall {binary.dist}",
                binary.path,
                {"file": binary.path, "error": binary.error},
            )
            continue
        link = binary.linkage
        for p in judge_binary(policy, binary.dist, binary.path, link.needed, link.soname):
            rule = _BY_ID[p.rule]
            yield Finding(
                rule.id,
                rule.severity,
                p.package,
                p.message,
                remediation(p.rule, binary.dist, vendor),
                binary.path,
                {**p.evidence, "version": binary.version, "runpath": list(link.runpath)},
            )
