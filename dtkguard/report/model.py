"""`Report`: what one run found, about which target, under which policy (every format renders
one; `dtkguard.report` re-exports it)."""

from __future__ import annotations

import os
import time

from dtkguard.findings import Finding, Severity, sort_key
from dtkguard.record import field, record

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from typing import Any


@record
class Report:
    """What one run found, about which target, under which policy."""

    findings: list[Finding]
    #: the target as printed: `TargetIdentity.to_json` of an environment (``models`` and
    #: ``node`` reports carry their own); renderers read it as the json does
    target: dict[str, Any] = field(default_factory=dict)
    policy: str = ""
    command: str = "check"
    facts: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: rule ids that were evaluated (JUnit and SARIF list them even when they passed)
    rules: list[str] = field(default_factory=list)
    #: what the target holds (`dtkguard.audit.inventory.components`), for SBOM formats only
    inventory: list[dict[str, Any]] = field(default_factory=list, repr=False)
    created: str = field(
        default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    )
    host: str = field(default_factory=lambda: os.uname().nodename)
    #: the scheduler's node name (`dtkguard.env.scheduler_node`), "" outside a scheduler
    node: str = field(default_factory=lambda: _scheduler_node())
    #: seconds since dtkguard started, and per check family (`run_checks(timings=...)`)
    elapsed: float = field(default_factory=lambda: _elapsed())
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.findings = sorted(self.findings, key=sort_key)

    def counts(self) -> dict[str, int]:
        counts = {s.value: 0 for s in reversed(Severity)}
        for f in self.findings:
            counts[f.severity.value] += 1
        return counts

    def verdict(self, fail_on: Severity) -> str:
        return "fail" if any(f.severity >= fail_on for f in self.findings) else "pass"

    def exit_code(self, fail_on: Severity) -> int:
        return 1 if self.verdict(fail_on) == "fail" else 0


def _scheduler_node() -> str:
    from dtkguard.env.scheduler_node import scheduler_node

    return scheduler_node()


def _elapsed() -> float:
    from dtkguard import STARTED

    return time.monotonic() - STARTED
