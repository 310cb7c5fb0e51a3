"""The table for people: rich on a terminal, one plain line per finding otherwise."""

from __future__ import annotations

from dtkguard.findings import Finding, Severity
from dtkguard.report.sanitize import terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from dtkguard.report.model import Report

STYLES = {"critical": "bold red", "high": "red", "medium": "yellow", "low": "cyan", "info": "dim"}


def target_text(target: dict[str, Any]) -> str:
    """What a person calls the target: the container, process, interpreter, folder or image."""
    for key in ("container", "pid", "python", "path", "root"):
        if target.get(key):
            return f"{key}={target[key]}" if key in ("container", "pid") else str(target[key])
    return str(target.get("kind", ""))


def _summary(report: Report, fail_on: Severity) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n) or "no findings"
    target = target_text(report.target)
    return (
        f"dtkguard {report.command}: {report.verdict(fail_on).upper()} ({counts}) "
        f"policy={terminal(report.policy)} target={terminal(target)}"
    )


def lead(report: Report, fail_on: Severity) -> list[str]:
    """The answer first: what happened, the fix, the findings by rule and reason."""
    from dtkguard.report.headline import groups, lines

    if not report.findings:
        return []
    out = [terminal(line) for line in lines(report, fail_on)]
    out.append(f"Findings by rule ({len(report.findings)}):")
    out += [
        f"  {g.severity.value.upper()} {terminal(g.heading())}" for g in groups(report.findings)
    ]
    out.append("Details:")
    return out


def render_plain(report: Report, fail_on: Severity) -> str:
    lines = lead(report, fail_on)
    lines += [
        f"{f.severity.value.upper()} {f.rule} {terminal(f.subject)}: {terminal(f.message)}"
        + (f" -- fix: {terminal(f.remediation)}" if f.remediation else "")
        for f in report.findings
    ]
    lines += [f"WARNING {terminal(w)}" for w in report.warnings]
    lines.append(_summary(report, fail_on))
    return "\n".join(lines) + "\n"


#: below this terminal width findings are blocks, not table rows (a row would fold mid-word)
TABLE_MIN_WIDTH = 120


def render(
    report: Report,
    *,
    fail_on: Severity = Severity.HIGH,
    color: bool | None = None,
    width: int | None = None,
) -> str:
    if not color:
        return render_plain(report, fail_on)
    from io import StringIO

    from rich.console import Console
    from rich.markup import escape

    buffer = StringIO()
    width = width or Console().width
    console = Console(file=buffer, force_terminal=True, width=width)
    if report.findings:
        _lead(console, report, fail_on)
        (_table if width >= TABLE_MIN_WIDTH else _blocks)(console, report.findings)
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {_safe(warning)}", highlight=False)
    verdict_style = "bold red" if report.verdict(fail_on) == "fail" else "bold green"
    console.print(f"[{verdict_style}]{escape(_summary(report, fail_on))}[/]", highlight=False)
    return buffer.getvalue()


def _lead(console: Any, report: Report, fail_on: Severity) -> None:
    """`lead` with the severities in colour, each line soft-wrapped by the terminal."""
    from rich.text import Text

    from dtkguard.report.headline import groups, lines

    for line in lines(report, fail_on):
        head, _, rest = line.partition(": ")
        console.print(Text.assemble((head + ": ", "bold"), terminal(rest)), soft_wrap=True)
    console.print(Text(f"Findings by rule ({len(report.findings)}):", "bold"))
    for g in groups(report.findings):
        sev = g.severity.value
        console.print(
            Text.assemble("  ", (sev.upper(), STYLES[sev]), " ", terminal(g.heading())),
            soft_wrap=True,
        )
    console.print(Text("Details:", "bold"))


def _safe(text: str) -> str:
    """Target text for rich markup: no control characters, no markup of its own."""
    from rich.markup import escape

    return escape(terminal(text))


def _table(console: Any, findings: list[Finding]) -> None:
    from rich.table import Table

    table = Table(show_lines=False, header_style="bold")
    for column in ("severity", "rule", "subject", "finding", "fix"):
        table.add_column(column, overflow="fold")
    for f in findings:
        style = STYLES[f.severity.value]
        table.add_row(
            f"[{style}]{f.severity.value}[/]",
            f.rule,
            _safe(f.subject),
            _safe(f.message),
            _safe(f.remediation),
        )
    console.print(table)


def _blocks(console: Any, findings: list[Finding]) -> None:
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
            terminal(f.subject),
        )
        console.print(head, soft_wrap=True)
        console.print(Text("  " + terminal(f.message)), soft_wrap=True)
        if f.remediation:
            console.print(
                Text.assemble(("  fix: ", "dim"), terminal(f.remediation)), soft_wrap=True
            )
