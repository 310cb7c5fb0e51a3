"""torch-build: torch's own build info (torch/version.py, read as text) must say HIP, not CUDA."""

from __future__ import annotations

import re
from collections.abc import Iterator

from dtkguard.env.root import child
from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo
from dtkguard.util.safe_read import read_head

TORCH_BUILD = RuleInfo(
    "torch-build",
    Severity.CRITICAL,
    "torch is not a DTK (HIP) build",
    "torch/version.py says cuda is set or hip is None: a community build, the DCU "
    "is unusable. Reinstall the vendor torch.",
    family="torch-build",
)

#: the rules this family reports, with their default severity (collected by
#: `dtkguard.rules.catalog`)
RULES = (TORCH_BUILD,)

_ASSIGN = re.compile(r"^(cuda|hip)\s*(?::[^=]*)?=\s*(.+?)\s*$", re.M)


def build_info(text: str) -> dict[str, str | None]:
    """``{'cuda': '12.4', 'hip': None}`` from the text of torch/version.py."""
    info: dict[str, str | None] = {}
    for key, value in _ASSIGN.findall(text):
        value = value.strip()
        info[key] = None if value == "None" else value.strip("'\"")
    return info


def check(ctx: CheckContext) -> Iterator[Finding]:
    for dist in ctx.env:
        if dist.key != "torch":
            continue
        torch = child(ctx.env.root, dist.site_text, "torch")
        version_py = child(ctx.env.root, torch, "version.py")
        try:
            text = read_head(version_py, 1 << 16, follow=False, root=ctx.env.root).decode(
                "utf-8", "replace"
            )
        except OSError:
            continue  # no torch package next to its metadata: nothing to read
        info = build_info(text)
        location = ctx.env.root.inner(version_py)
        remediation = f"reinstall the vendor torch {ctx.policy.vendor_build('torch') or ''}".strip()
        if info.get("cuda"):
            yield TORCH_BUILD.finding(
                "torch",
                f"torch {dist.version} is a CUDA build (cuda = '{info['cuda']}')",
                remediation,
                location,
                info,
            )
        elif "hip" in info and info["hip"] is None:
            yield TORCH_BUILD.finding(
                "torch",
                f"torch {dist.version} is not a HIP/DTK build (hip = None)",
                remediation,
                location,
                info,
            )
