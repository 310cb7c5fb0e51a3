"""Fleet view as markdown or json (html is in `dtkguard.fleet.html`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dtkguard.fleet.merge import Fleet, NodeResult

#: drift items shown per node before "and N more"
DRIFT_SHOWN = 8


def _cell(text: Any) -> str:
    from dtkguard.report.sanitize import markdown

    return markdown(text)


def counts_text(node: NodeResult) -> str:
    return ", ".join(f"{n} {s}" for s, n in node.counts.items() if n) or "-"


def drift_text(node: NodeResult, limit: int = DRIFT_SHOWN) -> str:
    shown = "; ".join(d.short() for d in node.drift[:limit])
    more = len(node.drift) - limit
    return shown + (f"; and {more} more" if more > 0 else "")


def headline(fleet: Fleet) -> str:
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(fleet.by_status().items()))
    expected = f" of {fleet.expected} expected" if fleet.expected is not None else ""
    return (
        f"fleet {fleet.verdict.upper()}: {len(fleet.nodes)} nodes{expected} ({statuses or 'none'})"
    )


def render_json(fleet: Fleet) -> str:
    return json.dumps(fleet.to_dict(), indent=2, default=str) + "\n"


def happened_groups(fleet: Fleet) -> list[tuple[str, str, int, list[str], bool]]:
    """The most common findings grouped by rule and severity, the answer before the tables:
    (rule, severity, nodes, the first subjects, whether there are more)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in fleet.common:
        groups.setdefault((c["rule"], c["severity"]), []).append(c)
    return [
        (
            rule,
            severity,
            max(c["nodes"] for c in items),
            [c["subject"] for c in items[:DRIFT_SHOWN]],
            len(items) > DRIFT_SHOWN,
        )
        for (rule, severity), items in groups.items()
    ]


def happened(fleet: Fleet) -> list[str]:
    """`happened_groups` as Markdown list items."""
    return [
        f"- {_cell(rule)} ({_cell(severity)}) on {nodes} node(s): "
        + ", ".join(_cell(s) for s in subjects)
        + (" …" if more else "")
        for rule, severity, nodes, subjects, more in happened_groups(fleet)
    ]


def render_markdown(fleet: Fleet) -> str:
    """The fleet view in Markdown: the verdict, then each section with something to say (see
    `_SECTIONS`), the nodes last."""
    lines = [f"## dtkguard fleet: {fleet.verdict.upper()}", "", headline(fleet), ""]
    for section in _SECTIONS:
        lines += section(fleet)
    return "\n".join(lines) + "\n"


def _happened_markdown(fleet: Fleet) -> list[str]:
    return ["### What happened", "", *happened(fleet), ""] if fleet.common else []


def _problems_markdown(fleet: Fleet) -> list[str]:
    """Reports missing or unreadable."""
    problems = [n for n in fleet.nodes if n.status not in ("ok", "fail", "new-schema")]
    if not problems:
        return []
    lines = ["### Reports missing or unreadable", "", "| node | status | file | detail |"]
    lines.append("|---|---|---|---|")
    lines += [
        f"| {_cell(n.name)} | {n.status} | {_cell(n.file or '-')} | {_cell(n.detail)} |"
        for n in problems
    ]
    return [*lines, ""]


def _duplicates_markdown(fleet: Fleet) -> list[str]:
    if not fleet.duplicates:
        return []
    lines = ["### Duplicate reports (the worst of each set is kept)", ""]
    lines += [f"- {_cell(d.file)}: {_cell(d.detail)}" for d in fleet.duplicates]
    return [*lines, ""]


def _drift_markdown(fleet: Fleet) -> list[str]:
    groups = fleet.drift_by_lock()
    if not groups:
        return []
    lines = ["### Drift from the lock", "", "| lock | node | drift |", "|---|---|---|"]
    for lock, nodes in groups.items():
        lines += [f"| {_cell(lock)} | {_cell(n.name)} | {_cell(drift_text(n))} |" for n in nodes]
    return [*lines, ""]


def _common_markdown(fleet: Fleet) -> list[str]:
    """The most common findings."""
    if not fleet.common:
        return []
    lines = ["### Most common findings", "", "| nodes | severity | rule | subject | example |"]
    lines.append("|---|---|---|---|---|")
    lines += [
        f"| {c['nodes']} | {_cell(c['severity'])} | {_cell(c['rule'])} | {_cell(c['subject'])} "
        f"| {_cell(c['example'])} |"
        for c in fleet.common
    ]
    return [*lines, ""]


def _stacks_markdown(fleet: Fleet) -> list[str]:
    """Nodes by DTK release and driver, when the reports said one."""
    stacks = fleet.by_stack()
    if not (len(stacks) > 1 or any(key != ("?", "?") for key in stacks)):
        return []
    lines = ["### By DTK release and driver", "", "| DTK | driver | nodes | names |"]
    lines.append("|---|---|---|---|")
    lines += [
        f"| {_cell(dtk)} | {_cell(driver)} | {len(nodes)} | "
        f"{_cell(', '.join(n.name for n in nodes[:DRIFT_SHOWN]))}"
        f"{' …' if len(nodes) > DRIFT_SHOWN else ''} |"
        for (dtk, driver), nodes in stacks.items()
    ]
    return [*lines, ""]


def _nodes_markdown(fleet: Fleet) -> list[str]:
    lines = ["### Nodes", "", "| node | verdict | findings | lock | target | report |"]
    lines.append("|---|---|---|---|---|---|")
    for n in fleet.nodes:
        verdict = (n.verdict or n.status).upper()
        if n.status == "new-schema":
            verdict += " (newer schema)"
        lines.append(
            f"| {_cell(n.name)} | {_cell(verdict)} | {_cell(counts_text(n))} "
            f"| {_cell(n.lock or '-')} | {_cell(n.target or '-')} | {_cell(n.file or '-')} |"
        )
    return lines


def _containers_markdown(fleet: Fleet) -> list[str]:
    """The containers `report node` did not audit, and why (skipped ones do not fail)."""
    rows = [(n, c) for n in fleet.nodes for c in n.unaudited]
    if not rows:
        return []
    lines = ["### Containers not audited", "", "| node | container | status | why |"]
    lines.append("|---|---|---|---|")
    lines += [f"| {_cell(n.name)} | {_cell(c)} | {st} | {_cell(why)} |" for n, (c, st, why) in rows]
    return [*lines, ""]


#: the sections of the Markdown view, in order (each returns no lines when it has nothing)
_SECTIONS: tuple[Callable[[Fleet], list[str]], ...] = (
    _happened_markdown,
    _problems_markdown,
    _duplicates_markdown,
    _drift_markdown,
    _common_markdown,
    _containers_markdown,
    _stacks_markdown,
    _nodes_markdown,
)
