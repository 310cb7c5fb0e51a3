"""``lock --verify-binaries``: the locked wheels' native code, judged before the lock is written.

Every locked wheel that can hold native code (its tags are not ``none-any``; a local file of any
tag) is read from its find-links path or downloaded from its URL (checked against the sha256
the index gave), and its shared objects are judged by what they link, exactly as the pip hook
judges them before an install (`dtkguard.resolve.binaries.wheel_findings`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path

from dtkguard.findings import Finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.policy.compiled import CompiledPolicy
    from dtkguard.resolve.sources import FileLink


def verify_binaries(links: Iterable[FileLink], policy: CompiledPolicy) -> tuple[list[Finding], int]:
    """(findings with the policy's exceptions applied, how many wheels were read)."""
    from dtkguard.resolve.binaries import fetch_wheel, native, wheel_findings
    from dtkguard.rules.engine import apply_exceptions

    found: list[Finding] = []
    read = 0
    with tempfile.TemporaryDirectory(prefix="dtkguard-verify-") as tmp:
        for link in links:
            if link.path is None and not native(link.filename):
                continue
            where = str(link.path) if link.path is not None else str(link.url)
            wheel = fetch_wheel(where, Path(tmp), link.hashes.get("sha256"))
            read += 1
            found += wheel_findings(policy, link.project, wheel)
    return apply_exceptions(policy, found, housekeeping=False), read
