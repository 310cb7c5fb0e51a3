"""One report per node from the containers running on it (the Kubernetes DaemonSet/Job entry).

Run with the host's PID namespace (``hostPID: true``)::

    dtkguard report node --proc /host/proc --out /reports [-- AUDIT-OPTIONS...]

The node's name is the scheduler's (``$DTKGUARD_NODE``, which the manifests set from
``spec.nodeName``; see `dtkguard.env.scheduler_node`), else the host name.

Container processes are those whose ``/proc/PID/root`` is another filesystem than the host's
(``/proc/1/root``); one process per distinct root is audited: its Python process when it has one,
else its init (whose parent lives in another root). A Python process is audited with
``dtkguard audit --pid PID``; a container without one (or whose process cannot be read that way)
with ``--root /proc/PID/root`` (``check --root`` with a dtkguard that has no ``audit`` yet). Each
container ends in one status (`AUDITED` ... `NOT_AUDITED`): a container without a Python
environment (no distribution: pause, nginx and Go sidecars) is ``no-python``, an info finding
``container-skipped``; one whose process exits during the audit is audited again through another
process of its root, or is ``exited`` (info) when none is left; one whose root may not be read
(permission) or whose audit failed is ``container-unaudited`` (high) and fails the node. The
container reports are combined into one schema-1 report ``OUT/NODE.json`` (``--out -``: on
stdout, and nothing else there): every finding carries its container in its evidence and message,
``target.containers`` lists every container with its status and reason, ``facts`` counts them.
The command is `dtkguard.commands.report` (``report node``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.findings import Finding
    from dtkguard.report.schema import ReportDict

_CONTAINER_ID = re.compile(r"([0-9a-f]{64})")


#: a container's status in the node report (`combine`); the last two fail the node
AUDITED, NO_PYTHON, EXITED, UNREADABLE, NOT_AUDITED = (
    "audited",
    "no-python",
    "exited",
    "unreadable",
    "not-audited",
)
FAILING = (UNREADABLE, NOT_AUDITED)
#: findings that never fail a node, at any --fail-on: a container with nothing to audit
NEVER_FAILS = frozenset({"container-skipped"})


@dataclass
class Container:
    """A process that stands for one container root."""

    pid: int
    root: str
    id: str = ""
    pod: str = ""
    #: the process is a Python interpreter (audited by --pid; else the root is audited)
    python: bool = False
    #: (st_dev, st_ino) of its root: another process of the same root stands in when it exits
    rid: tuple[int, int] | None = field(default=None, repr=False, compare=False)
    #: why its root could not be read (then it is not audited, and the node fails)
    error: str = ""

    @property
    def label(self) -> str:
        return "/".join(x for x in (self.pod, self.id[:12]) if x) or f"pid {self.pid}"


@dataclass
class Outcome:
    """What auditing one container gave: its status, why, and its report when there is one."""

    status: str
    reason: str = ""
    code: int | None = None
    report: dict[str, Any] | None = None


def _root_id(proc: Path, pid: str) -> tuple[int, int] | None:
    try:
        st = os.stat(proc / pid / "root")
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _root_or_denied(proc: Path, pid: str) -> tuple[int, int] | str | None:
    """The root's id; the reason when it may not be read (permission); None when gone."""
    try:
        st = os.stat(proc / pid / "root")
    except PermissionError as exc:
        return f"cannot read {proc / pid / 'root'}: {exc.strerror} (needs SYS_PTRACE)"
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _is_python(proc: Path, pid: str) -> bool:
    try:
        comm = (proc / pid / "comm").read_text().strip()
    except OSError:
        comm = ""
    if comm.startswith("python"):
        return True
    try:
        return os.path.basename(os.readlink(proc / pid / "exe")).startswith("python")
    except OSError:
        return False


def _ppid(proc: Path, pid: str) -> str:
    try:
        stat = (proc / pid / "stat").read_text()
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[1]  # fields after "(comm)": state ppid ...


def _container_id(proc: Path, pid: str) -> str:
    """The container id its cgroup names (docker, containerd, CRI-O: 64 hex digits), or ""."""
    try:
        match = _CONTAINER_ID.findall((proc / pid / "cgroup").read_text())
    except OSError:
        return ""
    return match[-1] if match else ""


def _describe(proc: Path, c: Container) -> None:
    c.id = _container_id(proc, str(c.pid))
    try:
        env = (proc / str(c.pid) / "environ").read_bytes().split(b"\0")
        host = next((e[9:] for e in env if e.startswith(b"HOSTNAME=")), b"")
        c.pod = host.decode(errors="replace")
    except OSError:
        pass


def _scan(proc: Path) -> tuple[dict[tuple[int, int], list[str]], dict[str, Any]]:
    """(root id -> its pids, pid -> root id or the reason it cannot be read)."""
    roots: dict[tuple[int, int], list[str]] = {}
    ids: dict[str, Any] = {}
    for entry in os.scandir(proc):
        if entry.name.isdigit():
            rid = ids[entry.name] = _root_or_denied(proc, entry.name)
            if isinstance(rid, tuple):
                roots.setdefault(rid, []).append(entry.name)
    return roots, ids


def _host_root(proc: Path, ids: dict[str, Any]) -> tuple[int, int] | None:
    """The host's root: process 1's; when that may not be read (a sandbox's init), the root of
    the first process whose cgroup names no container."""
    first = ids.get("1")
    if isinstance(first, tuple):
        return first
    for pid in sorted(ids, key=int):
        rid = ids[pid]
        if isinstance(rid, tuple) and not _container_id(proc, pid):
            return rid
    return None


def _denied(proc: Path, ids: dict[str, Any], seen: set[str]) -> list[Container]:
    """One `Container` per container whose processes' roots may not be read (and none of them
    could, ``seen`` being the ids of those read). A process that names no container in its
    cgroup is a host process (its root is the host's)."""
    found: dict[str, Container] = {}
    for pid, why in sorted(ids.items(), key=lambda kv: int(kv[0])):
        cid = _container_id(proc, pid) if isinstance(why, str) else ""
        if cid and cid not in found and cid not in seen:
            found[cid] = Container(int(pid), "", id=cid, error=why)
    return list(found.values())


def container_processes(proc: str | os.PathLike[str] = "/proc") -> list[Container]:
    """One `Container` per root filesystem other than the host's (and this process's own), and
    one per container whose processes may not be read (with its `Container.error`)."""
    proc = Path(proc)
    own = os.stat("/")
    roots, ids = _scan(proc)
    skip = {_host_root(proc, ids), (own.st_dev, own.st_ino)}
    found = []
    for rid, pids in roots.items():
        if rid in skip:
            continue
        pids.sort(key=int)
        inits = [p for p in pids if ids.get(_ppid(proc, p), _root_id(proc, _ppid(proc, p))) != rid]
        pythons = [p for p in pids if _is_python(proc, p)]
        pid = (pythons or inits or pids)[0]
        try:
            c = Container(int(pid), os.readlink(proc / pid / "root"), python=bool(pythons), rid=rid)
        except OSError:
            continue
        _describe(proc, c)
        found.append(c)
    found += _denied(proc, ids, {c.id for c in found if c.id})
    return sorted(found, key=lambda c: c.pid)


def _has_audit(dtkguard: list[str]) -> bool:
    probe = subprocess.run([*dtkguard, "audit", "--help"], capture_output=True, check=False)
    return probe.returncode == 0


def _run_audit(
    pid: int,
    python: bool,
    proc: Path,
    dtkguard: list[str],
    command: str,
    extra: list[str],
    out: Path,
) -> tuple[int, dict[str, Any] | None, str]:
    """(exit code, report or None, stderr) of one audit of process ``pid``'s container: its
    interpreter (``--pid``) when it is a Python process, else (or when that fails) its root."""
    root = ["--root", str(proc / str(pid) / "root")]
    targets = [["--pid", str(pid)], root] if command == "audit" and python else [root]
    from dtkguard.util.console import info

    for target in targets:
        info(f"report node: auditing pid {pid}: {' '.join([command, *target])}")
        out.unlink(missing_ok=True)
        argv = [*dtkguard, command, *target, *extra, "--allow-empty", "--format", "json"]
        run = subprocess.run(
            [*argv, "-o", str(out)], capture_output=True, text=True, check=False, env=_quiet_env()
        )
        if run.returncode in (0, 1):
            break
    try:
        return run.returncode, json.loads(out.read_text()), run.stderr.strip()
    except (OSError, ValueError):
        return run.returncode, None, run.stderr.strip()


def _quiet_env() -> dict[str, str]:
    """This environment, without ``-v`` (an audit's stderr is the reason it failed)."""
    from dtkguard.util.console import VERBOSITY_ENV

    return {k: v for k, v in os.environ.items() if k != VERBOSITY_ENV}


def _stand_in(c: Container, proc: Path) -> int | None:
    """Another live process of ``c``'s root, once its own process is gone."""
    if c.rid is None:
        return None
    roots, _ = _scan(proc)
    pids = sorted(roots.get(c.rid, []), key=int)
    return int(pids[0]) if pids else None


def _classify(code: int, report: dict[str, Any] | None, err: str) -> Outcome:
    if report is None:
        return Outcome(NOT_AUDITED, f"not audited (exit {code}): {err}".rstrip(": "), code)
    facts = report.get("facts") or {}
    if facts.get("dists") == 0:
        why = "a Python without distributions" if facts.get("sites") else "no Python environment"
        return Outcome(NO_PYTHON, f"{why}: nothing to audit", code, report)
    return Outcome(AUDITED, "", code, report)


def audit_container(
    c: Container, proc: Path, dtkguard: list[str], command: str, extra: list[str], out: Path
) -> Outcome:
    """Audit one container. One without a Python environment (no distribution) is
    `NO_PYTHON`; one whose process exited during the audit is audited again through another
    process of its root, or is `EXITED` when none is left; one that could not be read fails."""
    if c.error:
        return Outcome(UNREADABLE, c.error)
    for _attempt in range(3):
        code, report, err = _run_audit(c.pid, c.python, proc, dtkguard, command, extra, out)
        if report is not None or _root_id(proc, str(c.pid)) is not None:  # not gone (a zombie)
            return _classify(code, report, err)
        other = _stand_in(c, proc)
        if other is None:
            return Outcome(EXITED, "exited during the audit", code)
        c.pid, c.python = other, _is_python(proc, str(other))  # the container is this one now
    return _classify(code, report, err)


def _finding(c: Container, outcome: Outcome) -> Finding:
    """The node report's finding of a container that was not audited (info when it had
    nothing to audit, high when it could not be read)."""
    from dtkguard.findings import Finding, Severity

    failed = outcome.status in FAILING
    return Finding(
        rule="container-unaudited" if failed else "container-skipped",
        severity=Severity.HIGH if failed else Severity.INFO,
        subject=c.label,
        message=f"[{c.label}] {outcome.reason}",
        remediation="give the auditor SYS_PTRACE and hostPID, and audit the node again"
        if failed
        else "",
        evidence={"container": c.label, "pid": c.pid, "status": outcome.status},
    )


def _entry(c: Container, outcome: Outcome) -> dict[str, Any]:
    entry = {"pid": c.pid, "id": c.id, "pod": c.pod, "root": c.root, "exit": outcome.code}
    entry.update(status=outcome.status, reason=outcome.reason)
    if outcome.status == AUDITED and outcome.report is not None:
        entry.update(verdict=outcome.report.get("verdict"), summary=outcome.report.get("summary"))
    return entry


def _tally(containers: list[dict[str, Any]]) -> dict[str, int]:
    counts = {s: 0 for s in (AUDITED, NO_PYTHON, EXITED, UNREADABLE, NOT_AUDITED)}
    for entry in containers:
        counts[entry["status"]] += 1
    return {"containers": len(containers), **{k.replace("-", "_"): n for k, n in counts.items()}}


def combine(node: str, parts: list[tuple[Container, Outcome]], fail_on: str = "high") -> ReportDict:
    """One schema-1 node report from the container outcomes. Every container is listed in
    ``target.containers`` with its status and why; ``facts`` counts them. One that could not be
    read (permission, an audit that failed while it ran) fails the node; one without a Python
    environment, or that exited during the audit, is an info finding."""
    from dtkguard.findings import Finding, Severity
    from dtkguard.report import Report
    from dtkguard.report.json_format import to_dict

    findings, warnings, containers, policy = [], [], [], ""
    for c, outcome in parts:
        containers.append(_entry(c, outcome))
        if outcome.status != AUDITED or outcome.report is None:
            findings.append(_finding(c, outcome))
            continue
        report = outcome.report
        policy = policy or report.get("policy", "")
        warnings += [f"container {c.label}: {w}" for w in report.get("warnings", [])]
        for f in report.get("findings", []):
            f = dict(f, message=f"[{c.label}] {f.get('message', '')}")
            f["evidence"] = dict(f.get("evidence") or {}, container=c.label, pid=c.pid)
            findings.append(Finding.from_dict(f))
    if not parts:
        warnings.append("no container processes found on this node")
    target = {"kind": "node", "node": node, "containers": containers}
    merged = Report(findings, target=target, policy=policy, command="audit", warnings=warnings)
    merged.facts = _tally(containers)
    threshold = Severity.parse(fail_on)
    data = to_dict(merged, threshold)
    data["node"] = node
    counted = [f for f in findings if f.rule not in NEVER_FAILS]
    failed = any(f.severity >= threshold for f in counted)
    failed = failed or any(entry["status"] in FAILING for entry in containers)
    data["verdict"] = "fail" if failed else "pass"
    return data


def summary_line(data: Mapping[str, Any]) -> str:
    """``3 containers: 1 audited, 2 without Python`` of a node report's facts."""
    facts = data.get("facts") or {}
    words = (
        (AUDITED, "audited"),
        (NO_PYTHON, "without Python"),
        (EXITED, "exited"),
        (UNREADABLE, "unreadable"),
        (NOT_AUDITED, "not audited"),
    )
    parts = [
        f"{facts.get(k.replace('-', '_'))} {w}" for k, w in words if facts.get(k.replace("-", "_"))
    ]
    return f"{facts.get('containers', 0)} containers" + (f": {', '.join(parts)}" if parts else "")


def node_report(
    proc: Path, node: str, dtkguard: list[str], command: str | None, extra: list[str], fail_on: str
) -> ReportDict:
    """The schema-1 report of node ``node``: every container under ``proc`` audited by
    ``dtkguard`` (a command line) with ``command`` (default: audit if present) and ``extra``."""
    command = command or ("audit" if _has_audit(dtkguard) else "check")
    parts = []
    with tempfile.TemporaryDirectory(prefix="dtkguard-node-") as tmp:
        for c in container_processes(proc):
            out = Path(tmp) / f"{c.pid}.json"
            parts.append(
                (
                    c,
                    audit_container(
                        c, proc, dtkguard, command, [*extra, "--fail-on", fail_on], out
                    ),
                )
            )
    return combine(node, parts, fail_on)
