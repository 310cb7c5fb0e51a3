"""`sbatch --wait plugins/slurm/audit.sbatch` on a real two-node Slurm (n1, n2 on 127.0.0.1).

The cluster comes from `.ci/slurm-up.sh` (run by `.ci/run`, or by the fixture below when it is not
up yet; then the fixture also stops it). Each node audits its own environment, picked by
``$SLURMD_NODENAME`` through ``DTKGUARD_TARGET="--path .../%n"``: one clean, one drifted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fleet.factory import write_lock
from tests.support.need import root
from tests.support.readme import code_blocks, run_shell
from tests.support.reports import DAS_25041

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]
SBATCH = REPO / "plugins" / "slurm" / "audit.sbatch"
STATE = Path(os.environ.get("DTKGUARD_SLURM_DIR", "/tmp/dtkguard-slurm"))
TORCH = DAS_25041["torch"]


def _running() -> bool:
    pid_file = STATE / "slurmctld.pid"
    try:
        os.kill(int(pid_file.read_text().strip()), 0)
    except (OSError, ValueError):
        return False
    return True


@pytest.fixture(scope="module")
def cluster():
    """SLURM_CONF of the running test cluster; started (and stopped) here when not up."""
    root("the test Slurm cluster")
    started = False
    if not _running():
        up = subprocess.run([str(REPO / ".ci" / "slurm-up.sh")], capture_output=True, text=True)
        assert up.returncode == 0, up.stdout + up.stderr
        started = True
    yield str(STATE / "slurm.conf")
    if started:
        subprocess.run([str(REPO / ".ci" / "slurm-down.sh")], check=True)


def _dist(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("pip\n")


def _clean(site: Path) -> Path:
    _dist(site, "torch", "2.4.1+das.opt1.dtk25041")
    _dist(site, "numpy", "1.26.4")
    return site


def _drifted(site: Path) -> Path:
    _dist(site, "torch", "2.4.1")  # the community CUDA build replaced the vendor one
    _dist(site, "nvidia-cudnn-cu12", "9.1.0.70")
    _dist(site, "numpy", "1.26.4")
    return site


def _sbatch(cluster: str, tmp_path: Path, **settings: str) -> tuple[int, str, Path]:
    reports = tmp_path / "reports"
    env = dict(os.environ, SLURM_CONF=cluster, PYTHONPATH=str(REPO))
    env.pop("DTKGUARD_POLICY", None)
    exports = {
        "DTKGUARD": f"{sys.executable} -m dtkguard",
        "DTKGUARD_TARGET": f"--path {tmp_path}/envs/%n",
        "DTKGUARD_REPORT_DIR": str(reports),
        **settings,
    }
    env.update(exports)
    out = tmp_path / "job.out"
    proc = subprocess.run(
        ["sbatch", "--wait", "-N", "2", "-o", str(out), "--export=ALL", str(SBATCH)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Submitted batch job" in proc.stdout, proc.stderr
    return proc.returncode, out.read_text(), reports


def _fleet(reports: Path) -> dict:
    return json.loads((reports / "fleet.json").read_text())


def test_clean_and_drifted_node(cluster, tmp_path):
    _clean(tmp_path / "envs" / "n1")
    _drifted(tmp_path / "envs" / "n2")
    rc, log, reports = _sbatch(cluster, tmp_path)
    assert rc == 1, log
    assert sorted(p.name for p in (reports / "nodes").glob("*.json")) == ["n1.json", "n2.json"]
    fleet = _fleet(reports)
    assert fleet["verdict"] == "fail" and fleet["expected"] == 2
    nodes = {n["name"]: n for n in fleet["nodes"]}
    assert nodes["n1"]["status"] == "ok" and nodes["n1"]["verdict"] == "pass"
    assert nodes["n2"]["status"] == "fail" and nodes["n2"]["summary"]["critical"] == 2
    assert nodes["n2"]["target"].endswith("envs/n2")
    common = {(c["rule"], c["subject"]): c["nodes"] for c in fleet["common_findings"]}
    assert common == {("vendor-replaced", "torch"): 1, ("denied-package", "nvidia-cudnn-cu12"): 1}
    # the job log carries the markdown view; the html sits next to the reports
    assert "## dtkguard fleet: FAIL" in log and "| n2 | FAIL | 2 critical |" in log
    assert (reports / "fleet.html").read_text().startswith("<!DOCTYPE html>")
    # each node's own report says which node ran it
    n2 = json.loads((reports / "nodes" / "n2.json").read_text())
    assert n2["verdict"] == "fail" and n2["schema_version"] == 1


def test_clean_fleet_exits_0(cluster, tmp_path):
    _clean(tmp_path / "envs" / "n1")
    _clean(tmp_path / "envs" / "n2")
    rc, log, reports = _sbatch(cluster, tmp_path)
    assert rc == 0, log
    assert _fleet(reports)["by_status"] == {"ok": 2}


def test_node_that_cannot_audit_is_missing(cluster, tmp_path):
    _clean(tmp_path / "envs" / "n1")  # n2 has no environment: the audit exits 3, no report
    rc, log, reports = _sbatch(cluster, tmp_path)
    assert rc == 1, log
    nodes = {n["name"]: n["status"] for n in _fleet(reports)["nodes"]}
    assert nodes == {"n1": "ok", "n2": "missing"}
    assert "n2: dtkguard: error: not a directory" in log
    assert "exit 3" in log


def test_policy_is_passed_through(cluster, tmp_path):
    site = _clean(tmp_path / "envs" / "n1")
    shutil.copytree(site, tmp_path / "envs" / "n2")
    rc, log, reports = _sbatch(cluster, tmp_path, DTKGUARD_POLICY="no-such-policy")
    assert rc == 1, log  # neither node could load the policy: both reports missing
    assert _fleet(reports)["by_status"] == {"missing": 2}
    assert "no-such-policy" in (reports / "nodes" / "n1.log").read_text()


def test_drift_from_the_lock(cluster, tmp_path):
    lock = write_lock(
        tmp_path / "pylock.test.toml", {"torch": "2.4.1+das.opt1.dtk25041", "numpy": "1.26.4"}
    )
    _clean(tmp_path / "envs" / "n1")
    site = _clean(tmp_path / "envs" / "n2")
    shutil.rmtree(next(site.glob("numpy-*.dist-info")))
    _dist(site, "numpy", "2.0.0")
    _dist(site, "six", "1.16.0")
    rc, log, reports = _sbatch(cluster, tmp_path, DTKGUARD_LOCK=str(lock), DTKGUARD_FAIL_ON="low")
    assert rc == 1, log
    fleet = _fleet(reports)
    assert fleet["drift_by_lock"] == {"pylock.test.toml": ["n2"]}
    n2 = next(n for n in fleet["nodes"] if n["name"] == "n2")
    drift = {(d["rule"], d["package"]): (d["locked"], d["installed"]) for d in n2["drift"]}
    assert drift[("drift-version", "numpy")] == ("1.26.4", "2.0.0")
    assert drift[("drift-extra", "six")] == (None, "1.16.0")
    assert "| pylock.test.toml | n2 | " in log


def test_readme_sbatch_line_as_written(cluster, tmp_path):
    """The README's line, with only the cluster's size and partition and the paths put in. Both
    slurmd "nodes" run on one host and audit the same environment: their reports differ only
    by the node, which the merge must keep apart (not one "duplicate" and one "missing").
    dtkguard is on PATH from its own venv, and nothing is activated."""
    (line,) = code_blocks("Slurm fleet audit", "sh")
    env_dir = tmp_path / "env"  # the environment to audit, named by DTKGUARD_PYTHON
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    (site,) = env_dir.glob("lib/python3*/site-packages")
    _clean(site)
    lock = write_lock(tmp_path / "pylock.vllm.toml", {"torch": TORCH, "numpy": "1.26.4"})
    script = line.replace("-N 64 -p k100ai", "-N 2 -p debug")
    script = script.replace("/public/locks/pylock.vllm.toml", str(lock))
    script = script.replace("/public/audit/", f"{tmp_path}/audit/")
    script = script.replace("/opt/conda/bin/python", str(env_dir / "bin" / "python"))
    assert script.count(str(tmp_path)) == 3, script
    (tmp_path / "plugins" / "slurm").mkdir(parents=True)
    shutil.copy2(SBATCH, tmp_path / "plugins" / "slurm" / "audit.sbatch")
    env = dict(os.environ, SLURM_CONF=cluster)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # dtkguard on PATH
    for name in ("DTKGUARD_POLICY", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH"):
        env.pop(name, None)
    proc = run_shell(script, cwd=tmp_path, env=env, timeout=300)
    (out,) = tmp_path.glob("slurm-*.out")
    assert proc.returncode == 0, proc.stdout + proc.stderr + out.read_text()
    assert proc.stdout.splitlines()[-1] == "fleet clean"
    (reports,) = (tmp_path / "audit").iterdir()
    fleet = json.loads((reports / "fleet.json").read_text())
    assert fleet["by_status"] == {"ok": 2} and fleet["duplicates"] == []
    assert sorted(n["name"] for n in fleet["nodes"]) == ["n1", "n2"]
    for name in ("n1", "n2"):
        report = json.loads((reports / "nodes" / f"{name}.json").read_text())
        assert report["node"] == name and report["target"]["python"].startswith(str(env_dir))


def test_readme_line_without_a_target_stops_and_says_so(cluster, tmp_path):
    """dtkguard in its own venv, nothing activated, no DTKGUARD_PYTHON: the job would audit
    dtkguard's own venv on every node; it exits 2 before srun instead, naming the setting."""
    (line,) = code_blocks("Slurm fleet audit", "sh")
    script = line.replace("-N 64 -p k100ai", "-N 2 -p debug")
    script = script.replace("DTKGUARD_PYTHON=/opt/conda/bin/python,", "")
    script = script.replace("/public/locks/pylock.vllm.toml", str(tmp_path / "no-lock.toml"))
    script = script.replace("/public/audit/", f"{tmp_path}/audit/")
    (tmp_path / "plugins" / "slurm").mkdir(parents=True)
    shutil.copy2(SBATCH, tmp_path / "plugins" / "slurm" / "audit.sbatch")
    env = dict(os.environ, SLURM_CONF=cluster)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    for name in ("DTKGUARD_POLICY", "VIRTUAL_ENV", "CONDA_PREFIX", "DTKGUARD_TARGET"):
        env.pop(name, None)
    proc = run_shell(script, cwd=tmp_path, env=env, timeout=300)
    (out,) = tmp_path.glob("slurm-*.out")
    log = out.read_text()
    assert proc.returncode == 2, proc.stdout + proc.stderr + log
    assert "fleet clean" not in proc.stdout
    assert "audit.sbatch: no target: set DTKGUARD_PYTHON" in log
    assert not (tmp_path / "audit").exists()  # stopped before anything was audited or written
