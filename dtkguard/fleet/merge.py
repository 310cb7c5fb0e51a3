"""Merge many per-node json reports into one fleet view.

Reports are read one at a time and reduced to a small `NodeResult` (verdict, counts, drift, the
keys of its findings), so memory grows with the number of nodes, not with the size of the reports.

Fleet verdict: ``fail`` when any node fails, or when any expected report is missing, unreadable,
truncated or of a schema version this dtkguard cannot read; ``pass`` otherwise. Duplicates (the same
host and target reported twice) keep the worst report (a failing one over a passing one whatever
their dates, else the newest); the others are listed. Exit code: 0 pass, 1 fail.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dtkguard.findings import Severity
from dtkguard.fleet.node import NEVER_FAILS
from dtkguard.report.schema import problems

#: the report schema this merge reads (`dtkguard.report.json_format.SCHEMA_VERSION`)
READS_SCHEMA = 1
#: a report larger than this is not read (a node report of ~150 dists is well under 1 MB)
MAX_REPORT_BYTES = 8 * 1024 * 1024
#: findings of these rules are drift against a lock
DRIFT_PREFIX = "drift-"
#: containers not audited kept per node (a node runs tens of containers)
CONTAINERS_LISTED = 50

OK, FAILED, MISSING, UNREADABLE, TRUNCATED, OLD_SCHEMA, NEW_SCHEMA, DUPLICATE = (
    "ok",
    "fail",
    "missing",
    "unreadable",
    "truncated",
    "old-schema",
    "new-schema",
    "duplicate",
)
#: node statuses that make the fleet fail
FAILING = {FAILED, MISSING, UNREADABLE, TRUNCATED, OLD_SCHEMA}


@dataclass
class Drift:
    """One package that drifted from the lock on one node."""

    rule: str
    package: str
    installed: str | None
    locked: str | None

    def short(self) -> str:
        mark = {"drift-missing": "-", "drift-extra": "+"}.get(self.rule, "~")
        if self.rule == "drift-missing":
            return f"-{self.package} {self.locked or ''}".rstrip()
        if self.rule == "drift-extra":
            return f"+{self.package} {self.installed or ''}".rstrip()
        return f"{mark}{self.package} {self.locked or '?'} -> {self.installed or '?'}"


@dataclass
class NodeResult:
    """What the fleet view keeps of one node's report."""

    name: str
    file: str
    status: str
    verdict: str = ""
    detail: str = ""
    host: str = ""
    target: str = ""
    command: str = ""
    policy: str = ""
    lock: str = ""
    created: str = ""
    schema_version: Any = None
    counts: dict[str, int] = field(default_factory=dict)
    drift: list[Drift] = field(default_factory=list)
    #: (rule, subject, severity) of each finding, for the fleet's most common findings
    keys: list[tuple[str, str, str]] = field(default_factory=list)
    messages: dict[tuple[str, str], str] = field(default_factory=dict)
    replaced_by: str = ""
    #: the whole target identity (json), for telling duplicates from other targets on one host
    target_key: str = ""
    #: the stack below Python, from the report's device facts ("" when it did not say)
    dtk: str = ""
    driver: str = ""
    #: the scheduler's node name the report carries (`dtkguard.env.scheduler_node`)
    node_id: str = ""
    #: a `report node` report: its containers by status (`dtkguard.fleet.node`), and the
    #: (container, status, reason) of those not audited (the first `CONTAINERS_LISTED`)
    containers: dict[str, int] = field(default_factory=dict)
    unaudited: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def identity(self) -> tuple[str, str]:
        """Same identity = the same target audited twice: the scheduler's node, else the host."""
        return (self.node_id or self.host, self.target_key or self.target)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "file": self.file,
            "status": self.status,
            "verdict": self.verdict,
            "detail": self.detail,
            "host": self.host,
            "target": self.target,
            "command": self.command,
            "policy": self.policy,
            "lock": self.lock,
            "created": self.created,
            "schema_version": self.schema_version,
            "summary": self.counts,
            "drift": [d.__dict__ for d in self.drift],
            "dtk": self.dtk,
            "driver": self.driver,
            "containers": self.containers,
            "containers_not_audited": [
                {"container": c, "status": st, "reason": why} for c, st, why in self.unaudited
            ],
        }


@dataclass
class Fleet:
    """The merged view: one `NodeResult` per node plus what is wrong with the set."""

    nodes: list[NodeResult]
    duplicates: list[NodeResult]
    fail_on: Severity | None
    expected: int | None = None
    common: list[dict[str, Any]] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return "fail" if any(n.status in FAILING for n in self.nodes) else "pass"

    def exit_code(self) -> int:
        return 1 if self.verdict == "fail" else 0

    def by_status(self) -> dict[str, int]:
        return dict(Counter(n.status for n in self.nodes))

    def drift_by_lock(self) -> dict[str, list[NodeResult]]:
        groups: dict[str, list[NodeResult]] = {}
        for node in self.nodes:
            if node.drift:
                groups.setdefault(node.lock or "(no lock recorded)", []).append(node)
        return groups

    def by_stack(self) -> dict[tuple[str, str], list[NodeResult]]:
        """Nodes that delivered a report, grouped by (DTK release, driver); unknown is "?"."""
        groups: dict[tuple[str, str], list[NodeResult]] = {}
        for node in self.nodes:
            if node.status in (OK, FAILED, NEW_SCHEMA):
                groups.setdefault((node.dtk or "?", node.driver or "?"), []).append(node)
        return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": READS_SCHEMA,
            "kind": "fleet",
            "verdict": self.verdict,
            "fail_on": self.fail_on.value if self.fail_on else "per-report",
            "nodes_total": len(self.nodes),
            "expected": self.expected,
            "by_status": self.by_status(),
            "nodes": [n.to_dict() for n in self.nodes],
            "duplicates": [
                {"name": d.name, "file": d.file, "created": d.created, "kept": d.replaced_by}
                for d in self.duplicates
            ],
            "drift_by_lock": {
                lock: [n.name for n in nodes] for lock, nodes in self.drift_by_lock().items()
            },
            "common_findings": self.common,
            "by_stack": [
                {"dtk": dtk, "driver": driver, "nodes": [n.name for n in nodes]}
                for (dtk, driver), nodes in self.by_stack().items()
            ],
        }


def _target_text(target: Any) -> str:
    if not isinstance(target, dict):
        return str(target or "")
    for key in ("container", "pid", "python", "path", "root"):
        if target.get(key):
            value = target[key]
            return f"{key}={','.join(map(str, value)) if isinstance(value, list) else value}"
    return str(target.get("kind", ""))


def _lock_text(data: dict[str, Any]) -> str:
    for holder in (data, data.get("target") or {}, data.get("facts") or {}):
        if not isinstance(holder, dict):
            continue
        lock = holder.get("lock")
        if isinstance(lock, dict):
            lock = lock.get("name") or lock.get("path") or lock.get("file")
        if lock:
            return os.path.basename(str(lock))
    return ""


def _verdict(data: dict[str, Any], counts: dict[str, int], fail_on: Severity | None) -> str:
    if fail_on is None and data.get("verdict") in ("pass", "fail"):
        return str(data["verdict"])
    threshold = fail_on or Severity.parse(str(data.get("fail_on") or "high"))
    failing = any(n and Severity(sev) >= threshold for sev, n in counts.items())
    return "fail" if failing else "pass"


def _drift(finding: dict[str, Any]) -> Drift:
    ev = finding.get("evidence") or {}
    return Drift(
        rule=str(finding.get("rule")),
        package=str(finding.get("subject")),
        installed=ev.get("installed") or ev.get("version"),
        locked=ev.get("locked") or ev.get("expected"),
    )


def _reduce(node: NodeResult, data: dict[str, Any], fail_on: Severity | None) -> None:
    findings = data["findings"]
    if not isinstance(findings, list):
        raise ValueError("findings is not a list")
    counts = {s.value: 0 for s in reversed(Severity)}
    failing = dict(counts)  # the counts that may fail the node (`node.NEVER_FAILS` never does)
    for f in findings:
        sev = Severity(f["severity"]).value
        counts[sev] += 1
        failing[sev] += f["rule"] not in NEVER_FAILS
        rule, subject = str(f["rule"]), str(f.get("subject", ""))
        node.keys.append((rule, subject, sev))
        node.messages.setdefault((rule, subject), str(f.get("message", "")))
        if rule.startswith(DRIFT_PREFIX):
            node.drift.append(_drift(f))
            lock = (f.get("evidence") or {}).get("lock")
            if lock and not node.lock:
                node.lock = os.path.basename(str(lock))
    node.counts = counts
    node.verdict = _verdict(data, failing, fail_on)
    node.status = OK if node.verdict == "pass" else FAILED


def _decode_error(exc: json.JSONDecodeError, size: int) -> tuple[str, str]:
    truncated = exc.pos >= size - 1 or "Unterminated" in exc.msg
    status = TRUNCATED if truncated else UNREADABLE
    where = "" if exc.msg.endswith(" at") else " at"
    return status, f"{exc.msg}{where} line {exc.lineno}, column {exc.colno}"


def read_node(path: str | os.PathLike[str], fail_on: Severity | None = None) -> NodeResult:
    """Read one report file into a `NodeResult`; never raises for a bad file."""
    path = Path(path)
    node = NodeResult(name=path.stem, file=str(path), status=UNREADABLE)
    try:
        data = _parse_report(_read_report(path))
        _identify(node, data)
        version = _schema_version(node, data)
        _valid(data, version)
        _reduce_checked(node, data, fail_on, version)
    except _Unusable as exc:
        node.status, node.detail = exc.status, exc.detail
        return node
    if version > READS_SCHEMA:
        node.detail = f"schema_version {version} is newer than {READS_SCHEMA}; read its v1 fields"
        if node.status == OK:
            node.status = NEW_SCHEMA
    return node


class _Unusable(Exception):
    """A report file that gives no result: the node's status and why."""

    def __init__(self, detail: str, status: str = UNREADABLE) -> None:
        super().__init__(detail)
        self.detail, self.status = detail, status


def _read_report(path: Path) -> bytes:
    """The file's bytes: present, readable, within the size limit, not empty."""
    from dtkguard.util.safe_read import TooLarge, read_capped, reason

    try:
        raw = read_capped(path, MAX_REPORT_BYTES, what="report")
    except FileNotFoundError:
        raise _Unusable("no such file", MISSING) from None
    except TooLarge as exc:
        raise _Unusable(str(exc)) from None
    except OSError as exc:
        raise _Unusable(reason(exc)) from None
    if not raw.strip():
        raise _Unusable("empty file", TRUNCATED)
    return raw


def _parse_report(raw: bytes) -> dict[str, Any]:
    """The json object of a report: UTF-8, well-formed, an object, not another tool's."""
    from dtkguard.util.text import json_loads

    try:
        data = json_loads(raw)
    except json.JSONDecodeError as exc:
        status, detail = _decode_error(exc, len(raw))
        raise _Unusable(detail, status) from None
    except UnicodeDecodeError as exc:
        raise _Unusable(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:  # too deep, an integer of thousands of digits, NaN
        raise _Unusable(f"not a dtkguard report: {exc}") from None
    if not isinstance(data, dict):
        raise _Unusable(f"a json {type(data).__name__}, not a dtkguard report")
    foreign = _foreign(data)
    if foreign:
        raise _Unusable(f"not a dtkguard report ({foreign})")
    return data


def _schema_version(node: NodeResult, data: dict[str, Any]) -> int:
    """The report's schema version, noted on ``node``; a fleet view or an old schema is refused."""
    if data.get("kind") == "fleet":
        raise _Unusable("a merged fleet view (report merge output), not a node report")
    version = data.get("schema_version")
    node.schema_version = version
    if not isinstance(version, int) or isinstance(version, bool) or version < READS_SCHEMA:
        raise _Unusable(
            f"schema_version {version!r} is older than {READS_SCHEMA}: "
            "audit the node again with this dtkguard",
            OLD_SCHEMA,
        )
    return version


def _valid(data: dict[str, Any], version: int) -> None:
    """A schema-1 report that is not as ``report.schema.json`` says is refused, naming where;
    a newer one is read for its schema-1 fields (`_reduce_checked`)."""
    if version != READS_SCHEMA:
        return
    found = problems(data)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise _Unusable(f"not a dtkguard report of schema {version}: {found[0]}{more}")


def _reduce_checked(
    node: NodeResult, data: dict[str, Any], fail_on: Severity | None, version: int
) -> None:
    """`_reduce`, with a report whose fields are not as the schema says refused as unreadable."""
    try:
        _reduce(node, data, fail_on)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        node.keys.clear()
        node.drift.clear()
        detail = f"not a dtkguard report of schema {version}: bad or missing {exc}"
        raise _Unusable(detail) from None


def _foreign(data: dict[str, Any]) -> str:
    """What another tool's json is ("" for something that claims to be a dtkguard report)."""
    if "schema_version" in data or "findings" in data or data.get("kind") == "fleet":
        return ""
    if "runs" in data and "sarif" in str(data.get("$schema", "") or data.get("version", "")):
        return "a SARIF log"
    if "runs" in data and str(data.get("version")) == "2.1.0":
        return "a SARIF log"
    if data.get("bomFormat") == "CycloneDX":
        return "a CycloneDX BOM"
    keys = ", ".join(sorted(map(str, data))[:5])
    return f"a json object with keys {keys}" if keys else "an empty json object"


def _identify(node: NodeResult, data: dict[str, Any]) -> None:
    target = data.get("target")
    node.host = str(data.get("host") or "")
    node.target = _target_text(target)
    node.target_key = json.dumps(target, sort_keys=True, default=str)
    if isinstance(target, dict) and target.get("kind") == "node":
        _identify_containers(node, data, target)
    node.command = str(data.get("command") or "")
    node.policy = str(data.get("policy") or "")
    node.created = str(data.get("created") or "")
    node.lock = _lock_text(data)
    explicit = data.get("node") or (target.get("node") if isinstance(target, dict) else None)
    node.node_id = str(explicit or "")
    node.name = str(explicit or node.host or node.name)
    _identify_stack(node, data)


def _identify_containers(node: NodeResult, data: dict[str, Any], target: dict[str, Any]) -> None:
    """A `report node` report: its containers' counts and those not audited, and why."""
    from dtkguard.fleet.node import AUDITED, summary_line

    facts = data.get("facts")
    if isinstance(facts, dict):
        node.containers = {k: v for k, v in facts.items() if isinstance(v, int)}
        node.target = f"node: {summary_line(data)}"
    entries = target.get("containers")
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("status", AUDITED) != AUDITED:
            label = "/".join(
                str(entry[k])[: 12 if k == "id" else None] for k in ("pod", "id") if entry.get(k)
            )
            row = (
                label or f"pid {entry.get('pid')}",
                str(entry["status"]),
                str(entry.get("reason", "")),
            )
            if len(node.unaudited) < CONTAINERS_LISTED:
                node.unaudited.append(row)
    # the same node audited twice is one target, whatever its containers' pids were
    node.target_key = json.dumps({"kind": "node", "node": target.get("node")}, default=str)


def _identify_stack(node: NodeResult, data: dict[str, Any]) -> None:
    """DTK release and driver(s) from ``facts.device`` (audit reports); absent: stay ""."""
    device = (data.get("facts") or {}).get("device") if isinstance(data.get("facts"), dict) else {}
    if not isinstance(device, dict):
        return
    dtk = device.get("dtk")
    if isinstance(dtk, dict) and dtk.get("release"):
        node.dtk = str(dtk["release"])
    stack = device.get("stack")
    cards = stack.get("cards") if isinstance(stack, dict) else None
    if isinstance(cards, list):
        drivers = sorted(
            {str(c["driver"]) for c in cards if isinstance(c, dict) and c.get("driver")}
        )
        node.driver = ", ".join(drivers)


def _expand(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.glob("*.json")) if p.is_dir() else [p])
    return out


def _dedupe(nodes: list[NodeResult]) -> tuple[list[NodeResult], list[NodeResult]]:
    """One report per (host, target): the worst one, the newest among equally bad ones.

    A report's date is the node's word, so a later (or future-dated) passing report must not
    hide a failing one: failing beats passing whatever the dates, and the kept report says how
    many reports there were.
    """
    kept_by: dict[tuple[str, str], NodeResult] = {}
    count: Counter[tuple[str, str]] = Counter()
    duplicates: list[NodeResult] = []
    others: list[NodeResult] = []
    for node in nodes:
        if not node.host:
            others.append(node)
            continue
        count[node.identity] += 1
        seen = kept_by.get(node.identity)
        if seen is None:
            kept_by[node.identity] = node
            continue
        drop, keep = sorted((seen, node), key=_keep_order)
        drop.replaced_by = keep.file
        duplicates.append(drop)
        kept_by[node.identity] = keep
    kept = list(kept_by.values())
    names = Counter(n.name for n in kept)
    for node in kept:
        if names[node.name] > 1:
            node.name = f"{node.name}:{Path(node.file).stem}"
        if count[node.identity] > 1:
            note = f"{count[node.identity]} reports for this host and target; kept the worst"
            node.detail = f"{node.detail}; {note}" if node.detail else note
    for dup in duplicates:
        dup.status = DUPLICATE
        dup.detail = f"same host and target as {dup.replaced_by}, which is kept"
    return kept + others, duplicates


def _keep_order(node: NodeResult) -> tuple[bool, str, str]:
    """Sort key: the last is kept (failing over passing, then the newest)."""
    return (node.status in FAILING, node.created, node.file)


def _common(nodes: list[NodeResult], top: int) -> list[dict[str, Any]]:
    count: Counter[tuple[str, str, str]] = Counter()
    message: dict[tuple[str, str], str] = {}
    for node in nodes:
        count.update(set(node.keys))
        for key, text in node.messages.items():
            message.setdefault(key, text)
    ranked = sorted(count.items(), key=lambda kv: (-kv[1], -Severity(kv[0][2]).rank, kv[0]))
    return [
        {"rule": r, "subject": s, "severity": sev, "nodes": n, "example": message.get((r, s), "")}
        for (r, s, sev), n in ranked[:top]
    ]


def merge(
    paths: Iterable[str | os.PathLike[str]],
    *,
    fail_on: Severity | None = None,
    expect_nodes: int | None = None,
    node_names: list[str] | None = None,
    top: int = 20,
) -> Fleet:
    """Merge report files (directories expand to their ``*.json``) into a `Fleet`.

    ``fail_on`` re-judges every node at that threshold; None keeps each report's own verdict.
    ``expect_nodes`` adds anonymous missing nodes up to N; ``node_names`` names the nodes that must
    each have a report (matched on the report's node, host or file name).
    """
    nodes = [read_node(p, fail_on) for p in _expand(paths)]
    nodes, duplicates = _dedupe(nodes)
    if node_names is not None:
        present = set()
        for n in nodes:
            present.update({n.name, n.host, Path(n.file).stem})
        nodes += [
            NodeResult(name=name, file="", status=MISSING, detail="no report from this node")
            for name in node_names
            if name not in present
        ]
    if node_names is not None:
        wanted = set(node_names)
        for n in nodes:
            stem = Path(n.file).stem
            if n.name not in wanted and stem in wanted:
                n.name = stem
    expected = len(node_names) if node_names is not None else expect_nodes
    if expect_nodes is not None and len(nodes) < expect_nodes:
        nodes += [
            NodeResult(
                name=f"(missing {i + 1})",
                file="",
                status=MISSING,
                detail="fewer reports than nodes",
            )
            for i in range(expect_nodes - len(nodes))
        ]
    rank = {s: i for i, s in enumerate((MISSING, TRUNCATED, UNREADABLE, OLD_SCHEMA, FAILED))}
    nodes.sort(key=lambda n: (rank.get(n.status, 9), n.name))
    fleet = Fleet(nodes, duplicates, fail_on, expected)
    fleet.common = _common(nodes, top)
    for node in nodes:  # the fleet view no longer needs them
        node.keys, node.messages = [], {}
    return fleet
