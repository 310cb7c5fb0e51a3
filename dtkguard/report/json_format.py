"""JSON: the machine format, with a schema version (``report.schema.json``); `report merge`
reads it back."""

from __future__ import annotations

from dtkguard import __version__
from dtkguard.findings import Severity
from dtkguard.util.text import dumps

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from typing import Any

    from dtkguard.report.model import Report
    from dtkguard.report.schema import ReportDict

#: the version of the JSON report's schema (`dtkguard.fleet.merge` reads this version)
SCHEMA_VERSION = 1


def to_dict(report: Report, fail_on: Severity = Severity.HIGH) -> ReportDict:
    """The report as JSON data: `dtkguard.report.schema.ReportDict`, ``report.schema.json``."""
    from dtkguard.report.headline import headline

    # Finding (below report/) cannot name FindingDict: its to_dict writes exactly those keys,
    # and the tests hold the JSON of every command to report.schema.json
    findings: list[Any] = [f.to_dict() for f in report.findings]
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "dtkguard", "version": __version__},
        "command": report.command,
        "created": report.created,
        "host": report.host,
        "node": report.node or None,
        "target": report.target,
        "policy": report.policy,
        "verdict": report.verdict(fail_on),
        "fail_on": fail_on.value,
        "summary": report.counts(),
        "headline": headline(report, fail_on).to_dict(),
        "findings": findings,
        "facts": report.facts,
        "warnings": report.warnings,
    }


def render(report: Report, *, fail_on: Severity = Severity.HIGH, color: bool | None = None) -> str:
    return dumps(to_dict(report, fail_on), indent=2, default=str) + "\n"
