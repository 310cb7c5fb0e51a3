"""vendor-replaced and vendor-mismatch: a pinned vendor package must be exactly its build."""

from __future__ import annotations

from collections.abc import Iterator

from dtkguard.findings import Finding, Severity
from dtkguard.policy.labels import label_of
from dtkguard.rules.context import CheckContext


def same_version(a: str, b: str) -> bool:
    """PEP 440 equality, local labels included (``2.4.1+DAS.opt1`` is ``2.4.1+das.opt1``)."""
    if a == b:
        return True
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


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
    for dist in ctx.env:
        pin = ctx.policy.vendor_build(dist.name)
        if pin is None or same_version(dist.version, pin):
            continue
        label = label_of(dist.version)
        evidence = {"installed": dist.version, "policy": pin, "policy_name": ctx.policy.name}
        if label is not None and label.is_vendor:
            yield Finding(
                "vendor-mismatch",
                Severity.HIGH,
                dist.key,
                f"{dist.name} {dist.version} is another vendor build than the policy's {pin}",
                reinstall_hint(dist.name, pin, ctx),
                f"{dist.location}/METADATA",
                evidence,
            )
        else:
            kind = "a CUDA build" if "+cu" in dist.version else "a community build"
            yield Finding(
                "vendor-replaced",
                Severity.CRITICAL,
                dist.key,
                f"{dist.name} {dist.version} ({kind}) replaced the vendor build {pin}",
                reinstall_hint(dist.name, pin, ctx),
                f"{dist.location}/METADATA",
                evidence,
            )
