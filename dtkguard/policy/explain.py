"""`policy explain`: which rule governs a package, the allowed builds, and why."""

from __future__ import annotations

from dtkguard.decision import canonical
from dtkguard.policy.compiled import CompiledPolicy
from dtkguard.policy.locate import MAX_POLICY_BYTES
from dtkguard.policy.tomlpos import key_positions
from dtkguard.util.safe_read import read_capped


def _where(policy: CompiledPolicy, section: str, name: str) -> str:
    """FILE:LINE of the first policy file in the chain that names ``name`` under ``section``."""
    for file in policy.files:
        try:
            raw = read_capped(file, MAX_POLICY_BYTES, what="policy")
            positions = key_positions(raw.decode("utf-8", "replace"))
        except OSError:
            continue
        for path, (line, _col) in positions.items():
            if len(path) == 2 and path[0] == section and canonical(str(path[1])) == name:
                return f"{file}:{line}"
    return policy.files[0] if policy.files else policy.name


def explain(policy: CompiledPolicy, package: str) -> list[str]:
    """Plain-language lines about ``package`` under ``policy``."""
    name = canonical(package)
    lines: list[str] = []
    pin = policy.vendor_build(name)
    if pin:
        lines += [
            f"{name}: vendor build, pinned to {pin} by policy {policy.name} "
            f"({_where(policy, 'vendor', name)})",
            f"  allowed: exactly {name}=={pin}, from the vendor sources"
            + (
                f" ({', '.join(policy.find_links + policy.indexes)})"
                if policy.find_links or policy.indexes
                else ""
            ),
            "  vendor-replaced (critical): any build without its DAS/DTK label, e.g. the "
            "community CUDA build from the public index, even with the same public version",
            "  vendor-mismatch (high): another DAS/DTK build than the pinned one",
            f"  install or restore it with: dtkpip install --no-deps '{name}=={pin}'",
            "  requirements such as torch>=2.0 are satisfied by the vendor build; a requirement "
            f"that excludes {pin} is vetoed by the guard",
        ]
    rule = policy.deny_rule(name)
    if rule:
        lines.append(f"{name}: denied ({rule.severity}) by pattern {rule.pattern!r}: {rule.reason}")
        if rule.vendor_builds_ok:
            lines.append("  a DAS/DTK-labelled build of it is allowed")
    for exc in policy.exceptions:
        if exc.covers(exc.rule, name):
            lines.append(f"  exception: {exc.rule} waived until {exc.expires}: {exc.reason}")
    if not lines:
        lines.append(
            f"{name}: not governed by policy {policy.name}; any version may be "
            "installed, as long as what it pulls in is allowed "
            "(vendor builds stay, denied packages stay out)"
        )
    if policy.dtk:
        lines.append(
            f"  DTK release of this environment: {policy.dtk}"
            + (f" (also allowed: {', '.join(policy.dtk_allow)})" if policy.dtk_allow else "")
        )
    return lines
