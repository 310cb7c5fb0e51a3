"""The README's Kubernetes recipe, run as written against a stand-in ``kubectl``.

No cluster can run here, so ``kubectl`` is a small script that answers in kubectl's own output
formats (``-o name`` lines, ``logs`` = the container's stdout) and records what it was given:
the manifests it is asked to apply are validated against the API schemas, and the pods' logs
are real node reports, printed by ``python -m dtkguard report node --out -`` on built /proc
trees. ``dtkguard report merge`` is the real one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import yaml

from tests.fleet.test_k8s import K8S_VERSIONS, _image, _proc
from tests.support.cache import REPO_ROOT
from tests.support.cli import dtkguard_in
from tests.support.readme import code_blocks, run_shell

NODES = ("dcu-01", "dcu-02")

KUBECTL = """#!{python}
import sys, pathlib
state = pathlib.Path({state!r})
args = sys.argv[1:]
with open(state / "calls.log", "a") as log:
    log.write(" ".join(args) + "\\n")
if args[:2] == ["-n", "dtkguard"]:
    args = args[2:]
nodes = {nodes!r}
if args[:2] == ["apply", "-f"]:
    text = sys.stdin.read() if args[2] == "-" else open(args[2]).read()
    with open(state / "applied.yaml", "a") as out:
        out.write(text + "\\n---\\n")
elif args == ["get", "nodes", "-o", "name"]:
    print("\\n".join("node/" + n for n in nodes))
elif args[0] == "wait":
    print("job.batch/dtkguard-audit-once condition met")
elif args[:2] == ["get", "pods"] and "job-name=dtkguard-audit-once" in args:
    print("\\n".join(f"pod/dtkguard-audit-once-{{i}}-x{{i}}" for i in range(len(nodes))))
elif args[0] == "logs":
    sys.stdout.write((state / "logs" / (args[1].split("/")[-1] + ".json")).read_text())
else:
    sys.exit("kubectl stand-in: unexpected " + " ".join(args))
"""


def _cluster(tmp_path: Path, torches: dict[str, str]) -> dict[str, str]:
    """The stand-in kubectl on PATH, with each node's report as its pod's log."""
    state, bin_dir = tmp_path / "kubectl-state", tmp_path / "bin"
    (state / "logs").mkdir(parents=True)
    bin_dir.mkdir()
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(KUBECTL.format(python=sys.executable, state=str(state), nodes=NODES))
    kubectl.chmod(0o755)
    for i, name in enumerate(NODES):
        image = _image(tmp_path / f"image-{name}", torches[name])
        proc = _proc(tmp_path / name, {1: (0, Path("/")), 101: (1, image)})
        argv = ["-m", "dtkguard", "report", "node", "--proc", str(proc), "--out", "-"]
        env = dict(os.environ, DTKGUARD_NODE=name, PYTHONPATH=str(REPO_ROOT))
        run = subprocess.run(
            [sys.executable, *argv, "--command", "check"], env=env, capture_output=True, text=True
        )
        assert run.returncode in (0, 1), run.stderr
        (state / "logs" / f"dtkguard-audit-once-{i}-x{i}.json").write_text(run.stdout)
    path = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return dict(os.environ, PATH=path, PYTHONPATH=str(REPO_ROOT))


def _workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "plugins").mkdir(parents=True)
    (work / "plugins" / "k8s").symlink_to(REPO_ROOT / "plugins" / "k8s")
    return work


def test_readme_recipe_as_written(tmp_path):
    block = code_blocks("Kubernetes", "sh")[-1]
    clean = "2.4.1+das.opt1.dtk25041"
    env = _cluster(tmp_path, dict.fromkeys(NODES, clean))
    work = _workdir(tmp_path)
    proc = run_shell(block, cwd=work, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # what was applied: the namespace, then the Job for exactly the cluster's two nodes
    applied = tmp_path / "kubectl-state" / "applied.yaml"
    docs = [d for d in yaml.safe_load_all(applied.read_text()) if d]
    assert [d["kind"] for d in docs] == ["Namespace", "Job"]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSIONS[-1], strict=True)
    job = docs[1]["spec"]
    assert job["completions"] == job["parallelism"] == len(NODES)
    # one report a node collected, merged into the fleet view
    assert sorted(p.name for p in (work / "collected").iterdir()) == [
        "dtkguard-audit-once-0-x0.json",
        "dtkguard-audit-once-1-x1.json",
    ]
    assert (work / "fleet.html").read_text().startswith("<!DOCTYPE html>")
    merged = dtkguard_in(env, "report", "merge", "collected/", "--format", "json", cwd=work)
    fleet = json.loads(merged.stdout)
    assert sorted(n["name"] for n in fleet["nodes"]) == list(NODES)
    assert fleet["verdict"] == "pass"


def test_readme_recipe_fails_on_a_drifted_node(tmp_path):
    block = code_blocks("Kubernetes", "sh")[-1]
    env = _cluster(tmp_path, {"dcu-01": "2.4.1+das.opt1.dtk25041", "dcu-02": "2.4.1"})
    work = _workdir(tmp_path)
    proc = run_shell(block, cwd=work, env=env, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the merge's verdict
    html = (work / "fleet.html").read_text()
    assert "dcu-02" in html and "vendor-replaced" in html
