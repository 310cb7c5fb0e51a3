"""Example dtkguard check: report editable installs, which images should not carry."""

from __future__ import annotations

from collections.abc import Iterator

from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext


def check(ctx: CheckContext) -> Iterator[Finding]:
    for dist in ctx.env:
        info = (dist.direct_url or {}).get("dir_info") or {}
        if info.get("editable"):
            yield Finding(
                "example.no-editable",
                Severity.MEDIUM,
                dist.key,
                f"{dist.name} {dist.version} is an editable install",
                "install it from a wheel",
                f"{dist.location}/direct_url.json",
            )
