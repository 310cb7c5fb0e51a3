"""Reports: findings of one run, rendered by the format registered for it.

``FORMATS`` maps each ``--format`` choice to ``module:render``; a renderer takes a `Report`
and returns text. `emit` renders, writes (stdout or ``-o FILE``, atomically) and returns the exit
code the findings call for.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from dataclasses import dataclass, field

from dtkguard.findings import Finding, Severity, sort_key

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

FORMATS: dict[str, str] = {
    "table": "dtkguard.report.table:render",
    "json": "dtkguard.report.json_format:render",
    "sarif": "dtkguard.report.sarif:render",
    "junit": "dtkguard.report.junit:render",
    "markdown": "dtkguard.report.markdown:render",
    "cyclonedx": "dtkguard.report.cyclonedx:render",
}


@dataclass
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


def render(
    report: Report, fmt: str, *, fail_on: Severity = Severity.HIGH, color: bool | None = None
) -> str:
    module, _, func = FORMATS[fmt].partition(":")
    renderer = getattr(importlib.import_module(module), func)
    return renderer(report, fail_on=fail_on, color=color)


def use_color(stream: Any = None) -> bool:
    """``--color``, else never with NO_COLOR, always with FORCE_COLOR, else on a terminal."""
    from dtkguard.util.console import color_wanted

    return color_wanted(stream)


def emit(
    report: Report,
    fmt: str,
    output: str | None = None,
    *,
    fail_on: Severity = Severity.HIGH,
    renderer: Callable[..., str] | None = None,
) -> int:
    """Render ``report`` to stdout or ``output`` and return the exit code (0 or 1).

    ``renderer`` replaces the one ``fmt`` names (a command's own screen, e.g. doctor's).
    """

    def rendered(color: bool) -> str:
        if renderer is not None:
            return renderer(report, fail_on=fail_on, color=color)
        return render(report, fmt, fail_on=fail_on, color=color)

    if output and output != "-":
        from dtkguard.util.output import write_output

        write_output(output, rendered(False))
    else:
        text = rendered(use_color())
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    return report.exit_code(fail_on)
