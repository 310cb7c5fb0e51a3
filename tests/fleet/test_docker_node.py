"""The Kubernetes auditor on a real Docker engine (marker ``docker``): the image built by the
README's line from ``plugins/k8s/Dockerfile``, run as ``job.yaml`` runs it (hostPID, the host's
/proc read-only at /host/proc, read-only root, every capability dropped but the two it adds),
on a node with a DAS-like container, a busybox-like one without Python, and one that exits
mid-audit. No cluster: ``docker run`` stands for the kubelet, with the manifest's settings."""

from __future__ import annotations

import io
import json
import re
import subprocess
import tarfile
import uuid

import pytest

from tests.fleet.docker_recipe import checkout_copy, index_dir, recipe_env
from tests.fleet.nodes import doom_wrapper, sleep_root
from tests.fleet.test_docker_engine import BASE, engine, images  # noqa: F401 (fixtures)
from tests.fleet.test_k8s import K8S, _pod, load
from tests.support.cli import dtkguard
from tests.support.index import serve_index
from tests.support.readme import code_blocks, run_shell

pytestmark = pytest.mark.docker

SLEEP = ["python3", "-c", "import time; time.sleep(600)"]
NOT_DUMPABLE = "import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); time.sleep(600)"


def build_block() -> str:
    """The README's line that builds the auditor image (the first sh block of "Kubernetes")."""
    block = code_blocks("Kubernetes", "sh")[0]
    assert "plugins/k8s" in block and "docker build" in block, block
    return block


@pytest.fixture(scope="module")
def auditor(engine, tmp_path_factory):  # noqa: F811
    """The manifests' image, built by the README's line as written: only the base image's
    Python and name put in (the CI base: Debian bookworm, Python 3.11)."""
    checkout = checkout_copy(tmp_path_factory.mktemp("k8s-checkout"))
    py = engine(
        "run", "--rm", BASE, "python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"
    )
    assert py.returncode == 0, py.stderr
    script, n = re.subn(
        r"^PY=\S+ BASE=\S+", f"PY={py.stdout.strip()} BASE={BASE}", build_block(), flags=re.M
    )
    assert n == 1
    (tag,) = re.findall(r"-t (\S+) plugins/k8s", script)
    with serve_index(index_dir(tmp_path_factory.mktemp("k8s-index"))) as index:
        proc = run_shell(
            script, cwd=checkout, env=engine.environ(recipe_env(index.url)), timeout=900
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert tag == _manifest_container()["image"]
    return tag


def _manifest_container() -> dict:
    (container,) = _pod(load((K8S / "job.yaml").read_text()))["containers"]
    return container


def kubelet_argv(image: str, node: str, *, caps: bool = True) -> list[str]:
    """``docker run`` with job.yaml's pod settings; ``caps=False`` leaves out its added ones."""
    pod = _pod(load((K8S / "job.yaml").read_text()))
    container = _manifest_container()
    argv = ["run", "--rm", "--network", "none"]
    if pod["hostPID"]:
        argv += ["--pid", "host"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    for mount in container["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "hostPath" in volume:
            ro = ":ro" if mount.get("readOnly") else ""
            argv += ["-v", f"{volume['hostPath']['path']}:{mount['mountPath']}{ro}"]
        else:
            argv += ["--tmpfs", mount["mountPath"]]
    sec = container["securityContext"]
    if sec.get("readOnlyRootFilesystem"):
        argv.append("--read-only")
    if sec.get("allowPrivilegeEscalation") is False:
        argv += ["--security-opt", "no-new-privileges"]
    argv += [f"--cap-drop={c}" for c in sec["capabilities"]["drop"]]
    if caps:
        argv += [f"--cap-add={c}" for c in sec["capabilities"]["add"]]
    for env in container["env"]:
        value = node if "valueFrom" in env else env["value"]  # spec.nodeName
        argv += ["-e", f"{env['name']}={value}"]
    command = container["command"]
    return [*argv, "--entrypoint", command[0], image, *command[1:]]


@pytest.fixture(scope="module")
def busybox(engine, tmp_path_factory):  # noqa: F811
    """A busybox-like image: /bin/sleep and its libraries, no Python."""
    root = sleep_root(tmp_path_factory.mktemp("busybox") / "root")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(root, arcname=".")
    tag = f"dtkguard-test/busybox-like-{uuid.uuid4().hex[:8]}:1"
    proc = subprocess.run(
        [engine.client, "import", "-", tag], input=buf.getvalue(), env=engine.env,
        capture_output=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    yield tag
    engine("image", "rm", "-f", tag)


@pytest.fixture
def node(engine, images, busybox):  # noqa: F811
    """Running containers: {name: (container id, host pid of its init)}."""
    started = {}
    specs = {
        "das": [images[0], *SLEEP],
        "sidecar": [busybox, "/bin/sleep", "600"],
        "doomed": [images[0], *SLEEP],
        "guarded": [images[1], "python3", "-c", NOT_DUMPABLE],  # community torch, not dumpable
    }
    try:
        for name, argv in specs.items():
            run = engine("run", "-d", "--rm", "--network", "none", *argv)
            assert run.returncode == 0, run.stderr
            cid = run.stdout.strip()
            pid = engine("inspect", "-f", "{{.State.Pid}}", cid).stdout.strip()
            started[name] = (cid, int(pid))
        yield started
    finally:
        if started:
            engine("rm", "-f", *(cid for cid, _ in started.values()))


def _ours(report: dict, node: dict) -> dict[str, dict]:
    by_id = {c["id"]: c for c in report["target"]["containers"]}
    return {name: by_id.get(cid) for name, (cid, _pid) in node.items()}


def test_auditor_image_as_the_job_runs_it(engine, auditor, node):  # noqa: F811
    run = engine(*kubelet_argv(auditor, "docker-node"), timeout=600)
    report = json.loads(run.stdout)
    assert report["node"] == "docker-node" and report["schema_version"] == 1, run.stderr
    ours = _ours(report, node)
    # the DAS-like image holds the vendor vllm without its ~45 community requirements (the
    # fixture's wheelhouses do not have them), and with no baseline in a container they are
    # vendor-deps-broken (high); nothing else: no critical, no other severity
    das = ours["das"]
    assert das["status"] == "audited", das
    assert das["summary"]["critical"] == 0 and das["summary"]["high"] > 0, das
    assert das["summary"]["medium"] == das["summary"]["low"] == 0, das
    assert ours["sidecar"]["status"] == "no-python"
    assert ours["sidecar"]["reason"] == "no Python environment: nothing to audit"
    # not dumpable: read with the SYS_PTRACE the manifest adds, and found drifted
    assert ours["guarded"]["status"] == "audited" and ours["guarded"]["verdict"] == "fail"
    assert run.returncode == 1 and report["verdict"] == "fail"
    rules = {(f["rule"], f["evidence"].get("container", "")[-12:]) for f in report["findings"]}
    assert ("vendor-replaced", node["guarded"][0][:12]) in rules
    assert ("container-skipped", node["sidecar"][0][:12]) in rules


def test_auditor_without_sys_ptrace_fails_naming_what_it_could_not_read(engine, auditor, node):  # noqa: F811
    run = engine(*kubelet_argv(auditor, "docker-node", caps=False), timeout=600)
    report = json.loads(run.stdout)
    ours = _ours(report, node)
    assert ours["guarded"]["status"] == "unreadable", ours
    assert "needs SYS_PTRACE" in ours["guarded"]["reason"]
    assert run.returncode == 1 and report["verdict"] == "fail"
    assert any(f["rule"] == "container-unaudited" for f in report["findings"])


def test_a_container_that_exits_mid_audit(engine, node, tmp_path):  # noqa: F811
    """Found, then stopped by the engine before its audit (the wrapper kills it first)."""
    wrapper = doom_wrapper(tmp_path / "dtkguard-doomed")
    env = {"DOOMED": str(node["doomed"][1])}
    run = dtkguard("report", "node", "--out", "-", "--node", "n", "--dtkguard", str(wrapper),
                   env=env, timeout=600)  # fmt: skip
    report = json.loads(run.stdout)
    ours = _ours(report, node)
    assert ours["doomed"]["status"] == "exited", ours["doomed"]
    assert ours["das"]["status"] == "audited" and ours["sidecar"]["status"] == "no-python"
    assert not [f for f in report["findings"] if f["rule"] == "container-unaudited"
                and f["evidence"].get("pid") == node["doomed"][1]]  # fmt: skip
