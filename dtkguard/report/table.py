"""The table for people: rich on a terminal, one plain line per finding otherwise."""

from __future__ import annotations

from typing import Any

from dtkguard.findings import Severity

STYLES = {"critical": "bold red", "high": "red", "medium": "yellow", "low": "cyan", "info": "dim"}


def target_text(target: dict) -> str:
    """What a person calls the target: the container, process, interpreter, folder or image."""
    for key in ("container", "pid", "python", "path", "root"):
        if target.get(key):
            return f"{key}={target[key]}" if key in ("container", "pid") else str(target[key])
    return str(target.get("kind", ""))


def _summary(report: Any, fail_on: Severity) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n) or "no findings"
    target = target_text(report.target)
    return (
        f"dtkguard {report.command}: {report.verdict(fail_on).upper()} ({counts}) "
        f"policy={report.policy} target={target}"
    )


def render_plain(report: Any, fail_on: Severity) -> str:
    lines = [
        f"{f.severity.value.upper()} {f.rule} {f.subject}: {f.message}"
        + (f" -- fix: {f.remediation}" if f.remediation else "")
        for f in report.findings
    ]
    lines += [f"WARNING {w}" for w in report.warnings]
    lines.append(_summary(report, fail_on))
    return "\n".join(lines) + "\n"


#: below this terminal width findings are blocks, not table rows (a row would fold mid-word)
TABLE_MIN_WIDTH = 120


def render(
    report: Any,
    *,
    fail_on: Severity = Severity.HIGH,
    color: bool | None = None,
    width: int | None = None,
) -> str:
    if not color:
        return render_plain(report, fail_on)
    from io import StringIO

    from rich.console import Console

    buffer = StringIO()
    width = width or Console().width
    console = Console(file=buffer, force_terminal=True, width=width)
    if report.findings:
        (_table if width >= TABLE_MIN_WIDTH else _blocks)(console, report.findings)
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    verdict_style = "bold red" if report.verdict(fail_on) == "fail" else "bold green"
    console.print(f"[{verdict_style}]{_summary(report, fail_on)}[/]", highlight=False)
    return buffer.getvalue()


def _table(console: Any, findings: list) -> None:
    from rich.table import Table

    table = Table(show_lines=False, header_style="bold")
    for column in ("severity", "rule", "subject", "finding", "fix"):
        table.add_column(column, overflow="fold")
    for f in findings:
        style = STYLES[f.severity.value]
        table.add_row(
            f"[{style}]{f.severity.value}[/]", f.rule, f.subject, f.message, f.remediation
        )
    console.print(table)


def _blocks(console: Any, findings: list) -> None:
    """One block per finding: severity, rule and subject on one line, message and fix beneath.

    Message and fix are soft-wrapped by the terminal, never by us, so a path or a command in
    them stays one piece that can be copied.
    """
    from rich.text import Text

    for f in findings:
        head = Text.assemble(
            (f.severity.value.upper(), STYLES[f.severity.value]),
            " ",
            (f.rule, "bold"),
            " ",
            f.subject,
        )
        console.print(head, soft_wrap=True)
        console.print(Text("  " + f.message), soft_wrap=True)
        if f.remediation:
            console.print(Text.assemble(("  fix: ", "dim"), f.remediation), soft_wrap=True)
