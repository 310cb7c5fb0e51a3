"""Markdown: a summary line and a findings table, for PR comments and wikis."""

from __future__ import annotations

from dtkguard.findings import Finding, Severity
from dtkguard.report.sanitize import markdown as _cell

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.report.model import Report


def _lead(report: Report, fail_on: Severity) -> list[str]:
    from dtkguard.report.headline import lines

    out = []
    for line in lines(report, fail_on):
        head, _, rest = line.partition(": ")
        out.append(f"**{_cell(head)}:** {_cell(rest)}  ")
    return [*out, ""] if out else []


def group_table(findings: list[Finding]) -> list[str]:
    """The findings by rule and reason: one row per group."""
    from dtkguard.report.headline import groups

    rows = ["", "| severity | rule | count | subjects | reason |", "|---|---|---|---|---|"]
    for g in groups(findings):
        shown = ", ".join(g.subjects[:8]) + (" …" if len(g.subjects) > 8 else "")
        rows.append(
            f"| {g.severity.value} | `{g.rule}` | {max(g.count, len(g.subjects))} | {_cell(shown)} "
            f"| {_cell(g.reason)} |"
        )
    return rows


def render(report: Report, *, fail_on: Severity = Severity.HIGH, color: bool | None = None) -> str:
    target = ", ".join(f"{k}={_cell(v)}" for k, v in report.target.items())
    lines = [
        f"## dtkguard {report.command}: {report.verdict(fail_on).upper()}",
        "",
        f"Target: {target}  ",
        f"Policy: {_cell(report.policy)}",
        "",
    ]
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n)
    lines += _lead(report, fail_on)
    lines.append(f"Findings: {counts or 'none'}")
    if report.findings:
        lines += group_table(report.findings)
        lines += ["", "### Details", ""]
        lines += ["| severity | rule | subject | finding | fix |", "|---|---|---|---|---|"]
        lines += [
            f"| {f.severity.value} | `{f.rule}` | {_cell(f.subject)} | {_cell(f.message)} "
            f"| {_cell(f.remediation)} |"
            for f in report.findings
        ]
    if report.warnings:
        lines += ["", "Warnings:", ""] + [f"- {_cell(w)}" for w in report.warnings]
    return "\n".join(lines) + "\n"
