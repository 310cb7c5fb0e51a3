"""One report per node from the containers running on it (the Kubernetes DaemonSet/Job entry).

Run with the host's PID namespace (``hostPID: true``)::

    dtkguard report node --proc /host/proc --out /reports [-- AUDIT-OPTIONS...]

The node's name is the scheduler's (``$DTKGUARD_NODE``, which the manifests set from
``spec.nodeName``; see `dtkguard.env.scheduler_node`), else the host name.

Container processes are those whose ``/proc/PID/root`` is another filesystem than the host's
(``/proc/1/root``); one process per distinct root is audited: its Python process when it has one,
else its init (whose parent lives in another root). A Python process is audited with
``dtkguard audit --pid PID``; a container without one (or whose process cannot be read that way)
with ``--root /proc/PID/root`` (``check --root`` with a dtkguard that has no ``audit`` yet). The
container reports are combined into one schema-1 report ``OUT/NODE.json`` (``--out -``: on
stdout, and nothing else there): every finding carries its container in its evidence and message.
The command is `dtkguard.commands.report` (``report node``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_CONTAINER_ID = re.compile(r"([0-9a-f]{64})")


@dataclass
class Container:
    """A process that stands for one container root."""

    pid: int
    root: str
    id: str = ""
    pod: str = ""
    #: the process is a Python interpreter (audited by --pid; else the root is audited)
    python: bool = False

    @property
    def label(self) -> str:
        return "/".join(x for x in (self.pod, self.id[:12]) if x) or f"pid {self.pid}"


def _root_id(proc: Path, pid: str) -> tuple[int, int] | None:
    try:
        st = os.stat(proc / pid / "root")
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


def _describe(proc: Path, c: Container) -> None:
    try:
        match = _CONTAINER_ID.findall((proc / str(c.pid) / "cgroup").read_text())
        c.id = match[-1] if match else ""
    except OSError:
        pass
    try:
        env = (proc / str(c.pid) / "environ").read_bytes().split(b"\0")
        host = next((e[9:] for e in env if e.startswith(b"HOSTNAME=")), b"")
        c.pod = host.decode(errors="replace")
    except OSError:
        pass


def container_processes(proc: str | os.PathLike[str] = "/proc") -> list[Container]:
    """One `Container` per root filesystem other than the host's (and this process's own)."""
    proc = Path(proc)
    host = _root_id(proc, "1")
    own = os.stat("/")
    skip = {host, (own.st_dev, own.st_ino)}
    roots: dict[tuple[int, int], list[str]] = {}
    ids: dict[str, tuple[int, int] | None] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        rid = ids[entry.name] = _root_id(proc, entry.name)
        if rid is not None and rid not in skip:
            roots.setdefault(rid, []).append(entry.name)
    found = []
    for rid, pids in roots.items():
        pids.sort(key=int)
        inits = [p for p in pids if ids.get(_ppid(proc, p), _root_id(proc, _ppid(proc, p))) != rid]
        pythons = [p for p in pids if _is_python(proc, p)]
        pid = (pythons or inits or pids)[0]
        try:
            c = Container(int(pid), os.readlink(proc / pid / "root"), python=bool(pythons))
        except OSError:
            continue
        _describe(proc, c)
        found.append(c)
    return sorted(found, key=lambda c: c.pid)


def _has_audit(dtkguard: list[str]) -> bool:
    probe = subprocess.run([*dtkguard, "audit", "--help"], capture_output=True, check=False)
    return probe.returncode == 0


def audit_container(
    c: Container, proc: Path, dtkguard: list[str], command: str, extra: list[str], out: Path
) -> tuple[int, dict[str, Any] | None, str]:
    """(exit code, report or None, stderr) of auditing one container.

    A Python process is audited with ``audit --pid`` (its interpreter's own sys.path); otherwise,
    or when that cannot read the process, the container's whole root is audited.
    """
    root = ["--root", str(proc / str(c.pid) / "root")]
    targets = [["--pid", str(c.pid)], root] if command == "audit" and c.python else [root]
    for target in targets:
        argv = [*dtkguard, command, *target, *extra, "--format", "json", "-o", str(out)]
        run = subprocess.run(argv, capture_output=True, text=True, check=False)
        if run.returncode in (0, 1):
            break
    try:
        return run.returncode, json.loads(out.read_text()), run.stderr.strip()
    except (OSError, ValueError):
        return run.returncode, None, run.stderr.strip()


def combine(
    node: str,
    parts: list[tuple[Container, int, dict | None, str]],
    fail_on: str = "high",
    proc: Path | None = None,
) -> dict[str, Any]:
    """One schema-1 node report from the container reports.

    A container that could not be audited fails the node, unless its process is gone (it
    exited during the audit).
    """
    from dtkguard.findings import Finding, Severity
    from dtkguard.report import Report
    from dtkguard.report.json_format import to_dict

    findings, warnings, containers, policy = [], [], [], ""
    unaudited = False
    for c, code, report, err in parts:
        entry = {"pid": c.pid, "id": c.id, "pod": c.pod, "root": c.root, "exit": code}
        if report is None:
            gone = proc is not None and not (proc / str(c.pid)).exists()
            unaudited = unaudited or not gone
            why = "exited during the audit" if gone else f"not audited (exit {code}): {err}"
            warnings.append(f"container {c.label}: {why}")
            containers.append(entry)
            continue
        entry.update(verdict=report.get("verdict"), summary=report.get("summary"))
        containers.append(entry)
        policy = policy or report.get("policy", "")
        warnings += [f"container {c.label}: {w}" for w in report.get("warnings", [])]
        for f in report.get("findings", []):
            f = dict(f, message=f"[{c.label}] {f.get('message', '')}")
            f["evidence"] = dict(f.get("evidence") or {}, container=c.label, pid=c.pid)
            findings.append(Finding.from_dict(f))
    if not parts:
        warnings.append("no container processes found on this node")
    target = {"kind": "node", "node": node, "containers": containers}
    report = Report(findings, target=target, policy=policy, command="audit", warnings=warnings)
    report.facts = {"containers": len(containers)}
    data = to_dict(report, Severity.parse(fail_on))
    data["node"] = node
    if unaudited:
        data["verdict"] = "fail"
    return data


def node_report(
    proc: Path, node: str, dtkguard: list[str], command: str | None, extra: list[str], fail_on: str
) -> dict[str, Any]:
    """The schema-1 report of node ``node``: every container under ``proc`` audited by
    ``dtkguard`` (a command line) with ``command`` (default: audit if present) and ``extra``."""
    command = command or ("audit" if _has_audit(dtkguard) else "check")
    parts = []
    with tempfile.TemporaryDirectory(prefix="dtkguard-node-") as tmp:
        for c in container_processes(proc):
            code, report, err = audit_container(
                c,
                proc,
                dtkguard,
                command,
                [*extra, "--fail-on", fail_on],
                Path(tmp) / f"{c.pid}.json",
            )
            parts.append((c, code, report, err))
    return combine(node, parts, fail_on, proc)
