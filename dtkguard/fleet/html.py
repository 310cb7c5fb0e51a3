"""Fleet view as one self-contained html file: inline CSS, no scripts, no external assets.

Every value from a report is escaped; the page opens from a file share in any browser. A table
wider than the screen scrolls in its own box, and shows it: a shadow at the edge where more of
it is hidden (CSS only: the box's background, with covers that scroll with the content; cell
backgrounds are translucent so that the shadow shows through them).
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from dtkguard import __version__
from dtkguard.fleet.merge import Fleet
from dtkguard.fleet.node import FAILING as FAILING_CONTAINER
from dtkguard.fleet.render import counts_text, drift_text, happened_groups, headline

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em;color:#1d232a}
h1{font-size:1.5em;margin:0 0 .2em}h2{font-size:1.15em;margin:1.6em 0 .5em}
.sum{color:#49525c;margin:.2em 0 1em}
.badge{display:inline-block;white-space:nowrap;padding:.1em .6em;border-radius:.3em;
font-weight:600;color:#fff}
.pass,.ok{background:#1f7a3a}.fail{background:#b3261e}.warn{background:#a15c00}
.scroll{overflow-x:auto;margin-bottom:1em;
background:linear-gradient(to right,#fff 40%,rgba(255,255,255,0)) left/2.5em 100% no-repeat local,
linear-gradient(to left,#fff 40%,rgba(255,255,255,0)) right/2.5em 100% no-repeat local,
radial-gradient(farthest-side at 0 50%,rgba(0,0,0,.28),rgba(0,0,0,0)) left/.9em 100% no-repeat,
radial-gradient(farthest-side at 100% 50%,rgba(0,0,0,.28),rgba(0,0,0,0)) right/.9em 100% no-repeat}
table{border-collapse:collapse;width:100%}
th,td{border:1px solid #d5d9de;padding:.3em .55em;text-align:left;vertical-align:top;
overflow-wrap:break-word}th,td:first-child{white-space:nowrap}
th{background:rgba(29,35,42,.06)}tr:nth-child(even) td{background:rgba(29,35,42,.02)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,Menlo,Consolas,monospace}
.critical{color:#b3261e;font-weight:600}.high{color:#c2410c}.medium{color:#a15c00}
footer{color:#6b7580;font-size:12px;margin-top:2em}
@media (max-width:640px){body{margin:.8em}th,td{padding:.25em .4em}}
"""

_BADGE = {"ok": "ok", "pass": "pass", "fail": "fail", "new-schema": "ok", "duplicate": "warn"}


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _badge(text: str) -> str:
    return f'<span class="badge {_BADGE.get(text, "fail")}">{_e(text.upper())}</span>'


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    head_row = "".join(f"<th>{_e(h)}</th>" for h in head)
    out = [f'<div class="scroll"><table><thead><tr>{head_row}</tr></thead>']
    out.append("<tbody>")
    out += ["<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows]
    out.append("</tbody></table></div>")
    return out


def _section(anchor: str, title: str, head: list[str], rows: list[list[str]]) -> list[str]:
    """A titled section holding one table."""
    return [f'<h2 id="{anchor}">{title}</h2>', *_table(head, rows)]


def render_html(fleet: Fleet) -> str:
    """The whole page: headline, then each section that has something to show, then footer."""
    body = [
        f"<h1>dtkguard fleet {_badge(fleet.verdict)}</h1>",
        f'<p class="sum">{_e(headline(fleet))}</p>',
    ]
    for section in _SECTIONS:
        body += section(fleet)
    body.append(f"<footer>dtkguard {_e(__version__)} report merge</footer>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>dtkguard fleet: {_e(fleet.verdict.upper())}</title>"
        f"<style>{CSS}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _happened(fleet: Fleet) -> list[str]:
    """What happened, as the Markdown view says it first: each rule's findings in one line."""
    items = [
        f'<li><code>{_e(rule)}</code> (<span class="{_e(severity)}">{_e(severity)}</span>) '
        f"on {nodes} node(s): {_e(', '.join(subjects))}{' …' if more else ''}</li>"
        for rule, severity, nodes, subjects, more in happened_groups(fleet)
    ]
    if not items:
        return []
    return ['<h2 id="happened">What happened</h2>', "<ul>", *items, "</ul>"]


def _problems(fleet: Fleet) -> list[str]:
    """Nodes without a usable report: missing, unreadable, truncated, of an old schema."""
    problems = [n for n in fleet.nodes if n.status not in ("ok", "fail", "new-schema")]
    if not problems:
        return []
    return _section(
        "problems",
        "Reports missing or unreadable",
        ["node", "status", "file", "detail"],
        [[_e(n.name), _badge(n.status), _e(n.file or "-"), _e(n.detail)] for n in problems],
    )


def _duplicates(fleet: Fleet) -> list[str]:
    """Reports of the same node set aside for a worse one."""
    if not fleet.duplicates:
        return []
    return _section(
        "duplicates",
        "Duplicate reports (the worst of each set is kept)",
        ["report", "created", "kept instead"],
        [[_e(d.file), _e(d.created), _e(d.replaced_by)] for d in fleet.duplicates],
    )


def _drift(fleet: Fleet) -> list[str]:
    """Each node's drift from its lock, grouped by lock."""
    groups = fleet.drift_by_lock()
    if not groups:
        return []
    rows = [
        [f"<code>{_e(lock)}</code>", _e(n.name), _e(drift_text(n))]
        for lock, nodes in groups.items()
        for n in nodes
    ]
    return _section("drift", "Drift from the lock", ["lock", "node", "drift"], rows)


def _common(fleet: Fleet) -> list[str]:
    """The findings most nodes share."""
    if not fleet.common:
        return []
    return _section(
        "common",
        "Most common findings",
        ["nodes", "severity", "rule", "subject", "example"],
        [
            [
                f'<span class="num">{c["nodes"]}</span>',
                f'<span class="{_e(c["severity"])}">{_e(c["severity"])}</span>',
                f"<code>{_e(c['rule'])}</code>",
                _e(c["subject"]),
                _e(c["example"]),
            ]
            for c in fleet.common
        ],
    )


def _containers(fleet: Fleet) -> list[str]:
    """The containers `report node` did not audit, and why."""
    rows = [
        [_e(n.name), _e(c), _badge(st) if st in FAILING_CONTAINER else _e(st), _e(why)]
        for n in fleet.nodes
        for c, st, why in n.unaudited
    ]
    if not rows:
        return []
    head = ["node", "container", "status", "why"]
    return _section("containers", "Containers not audited", head, rows)


def _stacks(fleet: Fleet) -> list[str]:
    """Nodes by DTK release and driver, when the fleet knows more than one (or any)."""
    stacks = fleet.by_stack()
    if not (len(stacks) > 1 or any(key != ("?", "?") for key in stacks)):
        return []
    return _section(
        "stack",
        "By DTK release and driver",
        ["DTK", "driver", "nodes", "names"],
        [
            [
                _e(dtk),
                _e(driver),
                f'<span class="num">{len(nodes)}</span>',
                _e(", ".join(n.name for n in nodes)),
            ]
            for (dtk, driver), nodes in stacks.items()
        ],
    )


def _nodes(fleet: Fleet) -> list[str]:
    """Every node: verdict, finding counts, lock, target and report file."""
    return _section(
        "nodes",
        "Nodes",
        ["node", "verdict", "findings", "lock", "target", "report"],
        [
            [
                _e(n.name),
                _badge(n.verdict or n.status),
                _e(counts_text(n)),
                _e(n.lock or "-"),
                _e(n.target or "-"),
                _e(n.file or "-"),
            ]
            for n in fleet.nodes
        ],
    )


#: the page's sections in order; each gives its html lines, none when it has nothing to show
_SECTIONS: tuple[Callable[[Fleet], list[str]], ...] = (
    _happened,
    _problems,
    _duplicates,
    _drift,
    _common,
    _containers,
    _stacks,
    _nodes,
)
