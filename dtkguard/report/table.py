"""The table for people: rich on a terminal, one plain line per finding otherwise."""

from __future__ import annotations

from typing import Any

from dtkguard.findings import Severity
from dtkguard.report.sanitize import terminal

STYLES = {"critical": "bold red", "high": "red", "medium": "yellow", "low": "cyan", "info": "dim"}


def _summary(report: Any, fail_on: Severity) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n) or "no findings"
    target = (
        report.target.get("root")
        or report.target.get("python")
        or report.target.get("path")
        or report.target.get("kind", "")
    )
    return (
        f"dtkguard {report.command}: {report.verdict(fail_on).upper()} ({counts}) "
        f"policy={terminal(report.policy)} target={terminal(target)}"
    )


def render_plain(report: Any, fail_on: Severity) -> str:
    lines = [
        f"{f.severity.value.upper()} {f.rule} {terminal(f.subject)}: {terminal(f.message)}"
        + (f" -- fix: {terminal(f.remediation)}" if f.remediation else "")
        for f in report.findings
    ]
    lines += [f"WARNING {terminal(w)}" for w in report.warnings]
    lines.append(_summary(report, fail_on))
    return "\n".join(lines) + "\n"


def render(report: Any, *, fail_on: Severity = Severity.HIGH, color: bool | None = None) -> str:
    if not color:
        return render_plain(report, fail_on)
    from io import StringIO

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    def safe(text: str) -> str:  # neither control characters nor rich markup from a target
        return escape(terminal(text))

    buffer = StringIO()
    console = Console(file=buffer, force_terminal=True, width=max(100, Console().width))
    if report.findings:
        table = Table(show_lines=False, header_style="bold")
        for column in ("severity", "rule", "subject", "finding", "fix"):
            table.add_column(column, overflow="fold")
        for f in report.findings:
            style = STYLES[f.severity.value]
            table.add_row(
                f"[{style}]{f.severity.value}[/]",
                f.rule,
                safe(f.subject),
                safe(f.message),
                safe(f.remediation),
            )
        console.print(table)
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {safe(warning)}", highlight=False)
    verdict_style = "bold red" if report.verdict(fail_on) == "fail" else "bold green"
    console.print(f"[{verdict_style}]{escape(_summary(report, fail_on))}[/]", highlight=False)
    return buffer.getvalue()
