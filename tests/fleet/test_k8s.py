"""Kubernetes: the manifests against the API schemas, the README recipe, and the per-node entry
on real and built /proc trees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from dtkguard.fleet import node
from dtkguard.fleet.merge import merge
from tests.support import need
from tests.support.cli import run_in_process

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "plugins" / "k8s"
SITE = "usr/local/lib/python3.10/dist-packages"
#: the oldest Kubernetes the manifests are for (backoffLimitPerIndex: 1.28+), and the newest
#: schemas kubernetes-validate bundles
K8S_VERSIONS = ("1.29.0", kubernetes_validate.latest_version())
MANIFESTS = ("namespace.yaml", "daemonset.yaml", "job.yaml")


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing duplicate keys (the last one would silently win)."""

    def construct_mapping(self, node, deep=False):
        keys = [self.construct_object(k, deep=deep) for k, _v in node.value]
        dup = {k for k in keys if keys.count(k) > 1}
        if dup:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate keys {sorted(dup)}", node.start_mark
            )
        return super().construct_mapping(node, deep=deep)


def load(text: str) -> dict:
    (doc,) = yaml.load_all(text, Loader=_StrictLoader)
    return doc


def _pod(doc: dict) -> dict:
    return doc["spec"]["template"]["spec"]


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("name", MANIFESTS)
def test_manifest_is_valid_for_the_api(name, version):
    doc = load((K8S / name).read_text())
    kubernetes_validate.validate(doc, version, strict=True)


def test_schema_validation_catches_a_typo():
    doc = load((K8S / "job.yaml").read_text())
    _pod(doc)["hostPid"] = True  # not hostPID: the API would drop it and the audit sees nothing
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, K8S_VERSIONS[-1], strict=True)


def test_strict_loader_refuses_duplicate_keys():
    with pytest.raises(yaml.YAMLError):
        load("a:\n  b: 1\n  b: 2\n")
    assert load('a:\n  - x\n  - b: "1"\n    c: true\n') == {"a": ["x", {"b": "1", "c": True}]}


def test_namespace_allows_what_the_pods_need():
    doc = load((K8S / "namespace.yaml").read_text())
    assert doc["kind"] == "Namespace" and doc["metadata"]["name"] == "dtkguard"
    assert doc["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


@pytest.mark.parametrize(("name", "kind"), [("daemonset.yaml", "DaemonSet"), ("job.yaml", "Job")])
def test_manifest_structure(name, kind):
    doc = load((K8S / name).read_text())
    assert doc["kind"] == kind and doc["metadata"]["namespace"] == "dtkguard"
    pod = _pod(doc)
    assert pod["hostPID"] is True and pod["automountServiceAccountToken"] is False
    (container,) = pod["containers"]
    argv = " ".join(container["command"])
    out = "/reports" if kind == "DaemonSet" else "-"
    assert f"-m dtkguard report node --proc /host/proc --out {out}" in argv
    env = {e["name"]: e for e in container["env"]}
    assert env["DTKGUARD_NODE"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    # every host path is mounted read-only, except the report directory
    for mount in mounts.values():
        host = volumes[mount["name"]].get("hostPath")
        if host and host["path"] != "/var/lib/dtkguard/reports":
            assert mount.get("readOnly") is True, mount
    assert volumes[mounts["/host/proc"]["name"]]["hostPath"]["path"] == "/proc"
    if kind == "DaemonSet":
        assert volumes[mounts["/reports"]["name"]]["hostPath"]["type"] == "DirectoryOrCreate"
    else:
        assert "/reports" not in mounts  # the Job's reports go to its pods' logs
    sec = container["securityContext"]
    assert sec["readOnlyRootFilesystem"] is True and "privileged" not in sec
    assert sec["capabilities"]["drop"] == ["ALL"]
    res = container["resources"]
    assert {"cpu", "memory"} <= set(res["requests"]) and "memory" in res["limits"]
    assert "/" not in container["image"].split(":")[0]  # no registry host in the example


def test_job_is_one_pod_per_node_and_never_restarts():
    doc = load((K8S / "job.yaml").read_text())
    spec = doc["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    assert spec["backoffLimitPerIndex"] == 0 and _pod(doc)["restartPolicy"] == "Never"
    assert 0 < spec["activeDeadlineSeconds"] <= 3600  # pods that cannot be placed do not wait
    (term,) = _pod(doc)["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == doc["spec"]["template"]["metadata"]["labels"]


def _dist(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def _image(path: Path, torch: str) -> Path:
    _dist(path / SITE, "torch", torch)
    _dist(path / SITE, "numpy", "1.26.4")
    return path


def _proc(tmp_path: Path, table: dict[int, tuple[int, Path]]) -> Path:
    """A /proc-like tree: pid -> (ppid, root); cgroup and environ name the container."""
    proc = tmp_path / "proc"
    for pid, (ppid, root) in table.items():
        d = proc / str(pid)
        d.mkdir(parents=True)
        (d / "root").symlink_to(root)
        comm = "python3" if pid % 2 else "sh"  # odd pids are Python processes
        (d / "comm").write_text(comm + "\n")
        (d / "stat").write_text(f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1\n")
        cid = f"{pid:064x}"
        (d / "cgroup").write_text(f"0::/kubepods/burstable/pod1/cri-containerd-{cid}.scope\n")
        (d / "environ").write_bytes(b"PATH=/usr/bin\0HOSTNAME=vllm-" + str(pid).encode() + b"\0")
    return proc


def test_container_processes_one_per_root(tmp_path):
    clean, drifted = (
        _image(tmp_path / "a", "2.4.1+das.opt1.dtk25041"),
        _image(tmp_path / "b", "2.4.1"),
    )
    proc = _proc(
        tmp_path,
        {
            1: (0, Path("/")),
            40: (1, Path("/")),  # containerd-shim on the host
            100: (40, clean),  # container init (a shell)
            101: (100, clean),  # its Python worker: audited for the container
            102: (100, clean),  # same root: not audited twice
            200: (40, drifted),  # a container without Python: its init, by root
            202: (200, drifted),
        },
    )
    found = node.container_processes(proc)
    assert [(c.pid, c.root, c.pod, c.python) for c in found] == [
        (101, str(clean), "vllm-101", True),
        (200, str(drifted), "vllm-200", False),
    ]
    assert found[0].id == f"{101:064x}" and found[0].label == f"vllm-101/{found[0].id[:12]}"


def test_node_report_from_built_proc(tmp_path):
    clean, drifted = (
        _image(tmp_path / "a", "2.4.1+das.opt1.dtk25041"),
        _image(tmp_path / "b", "2.4.1"),
    )
    proc = _proc(tmp_path, {1: (0, Path("/")), 101: (1, clean), 200: (1, drifted)})
    out = tmp_path / "reports"
    argv = ["--proc", str(proc), "--out", str(out), "--node", "dcu-07", "--command", "check"]
    run = run_in_process("report", "node", *argv)
    assert run.code == 1, run.err
    report = json.loads((out / "dcu-07.json").read_text())
    assert report["schema_version"] == 1 and report["node"] == "dcu-07"
    assert [c["verdict"] for c in report["target"]["containers"]] == ["pass", "fail"]
    (finding,) = report["findings"]
    assert finding["rule"] == "vendor-replaced" and finding["evidence"]["pid"] == 200
    assert finding["message"].startswith("[vllm-200/")
    fleet = merge([out / "dcu-07.json"])
    assert fleet.nodes[0].name == "dcu-07" and fleet.nodes[0].status == "fail"
    assert "dcu-07: FAIL (2 containers: 2 audited; 1 findings)" in run.out
    assert report["facts"]["containers"] == 2 and report["facts"]["audited"] == 2


def test_unwritable_out_or_bad_node_name_is_one_exit_2_line(tmp_path):
    """--out fails like every command's -o: one line naming the path, exit 2, nothing written."""
    proc = _proc(tmp_path, {1: (0, Path("/"))})
    (tmp_path / "file").write_text("x")
    (tmp_path / "reports" / "dcu-07.json").mkdir(parents=True)  # the report's name is a folder
    cases = {
        str(tmp_path / "file" / "sub"): f"{tmp_path / 'file' / 'sub'}: --out: cannot write output",
        str(tmp_path / "file"): f"{tmp_path / 'file'}: --out: cannot write output",
        str(tmp_path / "reports"): f"{tmp_path / 'reports' / 'dcu-07.json'}: --out: cannot write",
    }
    for out, line in cases.items():
        argv = ["--proc", str(proc), "--out", out, "--node", "dcu-07", "--command", "check"]
        run = run_in_process("report", "node", *argv)
        assert run.code == 2
        assert run.err.startswith(f"dtkguard: error: {line}"), run.err
        assert run.err.count("\n") == 1 and run.out == ""
    assert (tmp_path / "file").read_text() == "x"
    for name in ("../escape", "", ".."):
        argv = ["--proc", str(proc), "--out", str(tmp_path / "r"), "--node", name]
        run = run_in_process("report", "node", *argv)
        said = "--node: empty value" if name == "" else "--node: not a node name"
        assert run.code == 2 and said in run.err, run.err
    assert not (tmp_path / "escape.json").exists() and not (tmp_path / "r").exists()


def test_unaudited_container_fails_the_node_skipped_ones_do_not(tmp_path):
    c = node.Container(100, str(tmp_path / "a"), pod="vllm")
    failed = node.combine("n", [(c, node.Outcome(node.NOT_AUDITED, "not audited (exit 2): x", 2))])
    assert failed["verdict"] == "fail" and failed["facts"]["not_audited"] == 1
    (f,) = failed["findings"]
    assert (f["rule"], f["severity"], f["subject"]) == ("container-unaudited", "high", "vllm")
    denied = node.combine("n", [(c, node.Outcome(node.UNREADABLE, "cannot read"))], "critical")
    assert denied["verdict"] == "fail"  # whatever --fail-on says: it was not checked
    for status in (node.NO_PYTHON, node.EXITED):
        skipped = node.combine("n", [(c, node.Outcome(status, "why"))], "info")
        assert skipped["verdict"] == "pass", status  # an info finding, even at --fail-on info
        assert [e["status"] for e in skipped["target"]["containers"]] == [status]
        assert skipped["findings"][0]["rule"] == "container-skipped"
    empty = node.combine("n", [])
    assert empty["verdict"] == "pass" and empty["warnings"] == [
        "no container processes found on this node"
    ]


def test_container_without_python_is_skipped_not_failed(tmp_path):
    """A root without any Python distribution (pause, nginx, Go sidecars) is counted and
    listed as such, with an info finding; the node passes."""
    clean = _image(tmp_path / "a", "2.4.1+das.opt1.dtk25041")
    sidecar = tmp_path / "pause"
    (sidecar / "bin").mkdir(parents=True)
    (sidecar / "bin" / "pause").write_bytes(b"\x7fELF")
    proc = _proc(tmp_path, {1: (0, Path("/")), 101: (1, clean), 200: (1, sidecar)})
    for command in ("check", "audit"):
        run = run_in_process(
            "report", "node", "--proc", str(proc), "--out", "-", "--node", "n", "--command", command
        )
        assert run.code == 0, run.err
        report = json.loads(run.out)
        assert report["verdict"] == "pass"
        assert [(c["pid"], c["status"]) for c in report["target"]["containers"]] == [
            (101, "audited"),
            (200, "no-python"),
        ]
        why = report["target"]["containers"][1]["reason"]
        assert why == "no Python environment: nothing to audit"
        assert report["facts"] == {
            "containers": 2, "audited": 1, "no_python": 1, "exited": 0, "unreadable": 0,
            "not_audited": 0,
        }  # fmt: skip
        assert [(f["rule"], f["severity"]) for f in report["findings"]] == [
            ("container-skipped", "info")
        ]
    fleet = merge([_write(tmp_path / "n.json", run.out)])
    assert fleet.nodes[0].status == "ok" and fleet.nodes[0].containers["no_python"] == 1


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_real_proc_finds_a_chrooted_process(tmp_path):
    """A real process in another root (a chroot, like a container's), found through /proc."""
    need.root("chroot")
    image = _image(tmp_path / "image", "2.4.1")
    code = "import os, sys, time; os.chroot(sys.argv[1]); print('in', flush=True); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code, str(image)], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"in\n"
        found = {c.pid: c for c in node.container_processes("/proc")}
        assert found[child.pid].root == str(image)
        out = tmp_path / "reports"
        argv = [
            "--out",
            str(out),
            "--node",
            "real",
        ]  # audit --pid, else --root; check without audit
        assert run_in_process("report", "node", *argv).code == 1
        report = json.loads((out / "real.json").read_text())
        mine = [f for f in report["findings"] if f["evidence"]["pid"] == child.pid]
        assert [f["rule"] for f in mine] == ["vendor-replaced"]
    finally:
        child.kill()
        child.wait()


def test_report_node_passes_options_after_dashes_to_every_audit_and_needs_a_proc(tmp_path):
    """``report node ... -- OPTIONS`` hands OPTIONS to each container's audit (here a policy
    that cannot be read, so the container is not audited and the node fails); without a /proc
    holding process 1 it exits 3 before auditing anything."""
    image = _image(tmp_path / "a", "2.4.1+das.opt1.dtk25041")
    proc = _proc(tmp_path, {1: (0, Path("/")), 101: (1, image)})
    missing = tmp_path / "no-such-policy.toml"
    base = ["report", "node", "--proc", str(proc), "--out", "-", "--node", "n", "--command"]
    clean = run_in_process(*base, "check")
    assert clean.code == 0, clean.err
    run = run_in_process(*base, "check", "--", "--policy", str(missing))
    report = json.loads(run.out)
    assert run.code == 1 and report["verdict"] == "fail"
    (entry,) = report["target"]["containers"]
    assert entry["status"] == "not-audited" and "not audited (exit 2)" in entry["reason"]
    assert str(missing) in entry["reason"]
    nothing = run_in_process("report", "node", "--proc", str(tmp_path / "empty"), "--out", "-")
    assert nothing.code == 3 and nothing.err.count("\n") == 1 and "is hostPID set?" in nothing.err


def test_a_process_whose_root_is_refused_is_an_unreadable_container(tmp_path, monkeypatch):
    """/proc/PID/root refused (EACCES: no SYS_PTRACE) for a process whose cgroup names a
    container: that container is listed as unreadable and fails the node; a refused host
    process (no container in its cgroup) and a container read through another of its
    processes are not."""
    image = _image(tmp_path / "a", "2.4.1+das.opt1.dtk25041")
    proc = _proc(tmp_path, {1: (0, Path("/")), 101: (1, image), 103: (101, image), 300: (1, image)})
    (proc / "300" / "cgroup").write_text("0::/system.slice/sshd.service\n")  # a host process
    (proc / "103" / "cgroup").write_text((proc / "101" / "cgroup").read_text())  # 101's container
    refused = {str(proc / pid / "root") for pid in ("103", "300")}
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if str(path) in refused:
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(node.os, "stat", stat)
    assert [(c.pid, c.error) for c in node.container_processes(proc)] == [(101, "")]
    refused.add(str(proc / "101" / "root"))  # now no process of that container can be read
    (c,) = node.container_processes(proc)
    assert (
        c.pid == 101 and c.id == f"{101:064x}" and "Permission denied (needs SYS_PTRACE)" in c.error
    )
    report = node.combine(
        "n", [(c, node.audit_container(c, proc, [], "check", [], tmp_path / "x"))]
    )
    assert report["verdict"] == "fail"
    assert [e["status"] for e in report["target"]["containers"]] == ["unreadable"]
