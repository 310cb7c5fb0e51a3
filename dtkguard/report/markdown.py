"""Markdown: a summary line and a findings table, for PR comments and wikis."""

from __future__ import annotations

from typing import Any

from dtkguard.findings import Severity
from dtkguard.report.sanitize import markdown as _cell


def render(report: Any, *, fail_on: Severity = Severity.HIGH, color: bool | None = None) -> str:
    target = ", ".join(f"{k}={_cell(v)}" for k, v in report.target.items())
    lines = [
        f"## dtkguard {report.command}: {report.verdict(fail_on).upper()}",
        "",
        f"Target: {target}  ",
        f"Policy: {_cell(report.policy)}",
        "",
    ]
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n)
    lines.append(f"Findings: {counts or 'none'}")
    if report.findings:
        lines += ["", "| severity | rule | subject | finding | fix |", "|---|---|---|---|---|"]
        lines += [
            f"| {f.severity.value} | `{f.rule}` | {_cell(f.subject)} | {_cell(f.message)} "
            f"| {_cell(f.remediation)} |"
            for f in report.findings
        ]
    if report.warnings:
        lines += ["", "Warnings:", ""] + [f"- {_cell(w)}" for w in report.warnings]
    return "\n".join(lines) + "\n"
