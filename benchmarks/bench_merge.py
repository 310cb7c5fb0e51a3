"""Fleet benchmarks: `report merge` over 1,000 node reports, and the per-node audit under srun.

Run from the repository root (the Slurm part needs the test cluster of `.ci/slurm-up.sh`, else it
is skipped with a note)::

    PYTHONPATH=. python benchmarks/bench_merge.py [--nodes 1000] [--runs 5]
    SLURM_CONF=<state dir>/slurm.conf PYTHONPATH=. python benchmarks/bench_merge.py

1. Merge: generates N schema-1 reports of realistic size (an inventory of ~150 dists in the facts;
   most nodes clean, one in ten drifted with vendor builds replaced, CUDA wheels added and drift
   from a lock, a few with dozens of findings), then times, side by side in one run:
   - the floor: ``json.loads`` of every file, nothing else;
   - ``dtkguard.fleet.merge.merge`` in-process (best of --runs), and its peak Python memory
     (tracemalloc, separate run) against the total size of the reports;
   - the CLI ``dtkguard report merge DIR --format html`` end to end, with its max RSS.
   Goal: the merge ≤ 2 s for 1,000 reports, memory bounded by a fleet summary, not the inputs.
2. Per-node audit: ``dtkguard check --path SITE`` on a 150-dist site, directly and as a task of
   ``srun -N2 --ntasks-per-node=1`` (timed inside the task, so the scheduler's start-up is shown
   apart). The audit inside the task should cost what it costs directly.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._common import dtkguard_cmd  # noqa: E402
from dtkguard.fleet.merge import merge  # noqa: E402

NAMES = [f"pkg-{i:03d}" for i in range(150)]
VENDOR = {
    "torch": "2.4.1+das.opt1.dtk25041",
    "vllm": "0.8.5.post1+das.opt1.dtk25041",
    "flash-attn": "2.6.1+das.opt1.dtk25041",
    "triton": "3.0.0+das.opt1.dtk25041",
}


def _finding(rule, sev, subject, **ev):
    return {
        "rule": rule,
        "severity": sev,
        "subject": subject,
        "message": f"{subject}: {rule} on this node, see evidence for the versions involved",
        "remediation": f"dtkpip install --no-deps --force-reinstall '{subject}'",
        "location": f"/usr/local/lib/python3.10/dist-packages/{subject}.dist-info/METADATA",
        "evidence": ev,
    }


def make_report(i: int, rng: random.Random) -> dict:
    inventory = [
        {
            "name": n,
            "version": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
            "location": "/usr/local/lib/python3.10/dist-packages",
            "installer": "pip",
        }
        for n in NAMES
    ]
    findings = [_finding("record-unverifiable", "info", n, rows=3) for n in NAMES[:20]]
    if i % 10 == 3:
        findings += [
            _finding("vendor-replaced", "critical", "torch", installed="2.4.1"),
            _finding("denied-package", "critical", "nvidia-cudnn-cu12", version="9.1.0.70"),
            _finding("drift-version", "high", "torch", installed="2.4.1", locked=VENDOR["torch"]),
            _finding("drift-extra", "medium", "nvidia-nccl-cu12", installed="2.20.5"),
        ]
    if i % 50 == 7:
        findings += [_finding("file-modified", "high", n, path=f"{n}/__init__.py") for n in NAMES]
    summary = dict.fromkeys(("critical", "high", "medium", "low", "info"), 0)
    for f in findings:
        summary[f["severity"]] += 1
    return {  # every key of report.schema.json: merge refuses a report without one
        "schema_version": 1,
        "tool": {"name": "dtkguard", "version": "0.1.0"},
        "command": "audit",
        "created": f"2026-11-30T01:{i % 60:02d}:00+00:00",
        "host": f"dcu{i:04d}",
        "node": None,
        "target": {"kind": "python", "python": "/usr/bin/python3", "lock": "pylock.vllm.toml"},
        "policy": "dtk-25.04.1",
        "verdict": "fail" if i % 10 == 3 or i % 50 == 7 else "pass",
        "fail_on": "high",
        "summary": summary,
        "headline": {"happened": [], "fix": None, "beyond_fix": [], "groups": []},
        "findings": findings,
        "facts": {
            "dists": len(inventory),
            "inventory": inventory,
            "device": {"dtk": "25.04.1", "cards": ["BW1000"] * 8, "gfx": "gfx936"},
        },
        "warnings": [],
    }


def bench_merge(nodes: int, runs: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="dtkguard-bench-merge-"))
    try:
        rng = random.Random(7)
        total = 0
        for i in range(nodes):
            text = json.dumps(make_report(i, rng), indent=2)
            (tmp / f"dcu{i:04d}.json").write_text(text)
            total += len(text)
        files = sorted(tmp.glob("*.json"))
        print(f"merge: {nodes} reports, {total / 1e6:.1f} MB ({total / nodes / 1e3:.0f} kB each)")

        def floor():
            for f in files:
                json.loads(f.read_bytes())

        t_floor = min(_timed(floor) for _ in range(runs))
        t_merge = min(_timed(lambda: merge(files)) for _ in range(runs))
        tracemalloc.start()
        fleet = merge(files)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        out = tmp / "fleet.html"
        cli = [*dtkguard_cmd(), "report", "merge", str(tmp), "-f", "html"]
        cli += ["-o", str(out)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        rc = subprocess.run(cli, env=env, capture_output=True, check=False).returncode
        t_cli = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        print(f"  json.loads of every file (floor) {t_floor:7.3f} s")
        print(
            f"  merge() in-process               {t_merge:7.3f} s   {t_merge / t_floor:.2f}x floor"
        )
        print(
            f"  dtkguard report merge (CLI,html) {t_cli:7.3f} s   "
            f"exit {rc}, max RSS {rss / 1024:.0f} MB"
        )
        print(
            f"  peak Python memory of merge()    {peak / 1e6:7.1f} MB  "
            f"({peak / total:.2f}x the reports' {total / 1e6:.0f} MB; largest report "
            f"{max(f.stat().st_size for f in files) / 1e3:.0f} kB)"
        )
        print(
            f"  verdict {fleet.verdict}, {fleet.by_status()}, "
            f"html {out.stat().st_size / 1e3:.0f} kB"
        )
        print(f"  goal <= 2 s for 1,000 reports: {'met' if t_merge <= 2 else 'NOT met'}")
        del before
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


TIMER = """
import subprocess, sys, time, os
t0 = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(f"{os.environ.get('SLURMD_NODENAME', '-')} {time.perf_counter() - t0:.4f} {rc}")
"""


def bench_node_audit(runs: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="dtkguard-bench-node-"))
    try:
        site = tmp / "site"
        for name in NAMES:
            info = site / f"{name.replace('-', '_')}-1.0.dist-info"
            info.mkdir(parents=True)
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (tmp / "timer.py").write_text(TIMER)
        check = [*dtkguard_cmd(), "check", "--path", str(site), "-f", "json"]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        timer = [sys.executable, str(tmp / "timer.py"), *check]
        have_slurm = bool(os.environ.get("SLURM_CONF") and shutil.which("srun"))
        direct: list[float] = []
        inside: dict[int, list[float]] = {1: [], 2: []}
        walls: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(runs):  # interleaved, so load from elsewhere hits every variant alike
            out = subprocess.run(timer, env=env, capture_output=True, text=True, check=True)
            direct.append(float(out.stdout.split()[1]))
            for nodes in (1, 2) if have_slurm else ():
                t0 = time.perf_counter()
                out = subprocess.run(
                    ["srun", f"-N{nodes}", "--ntasks-per-node=1", *timer],
                    env=env, capture_output=True, text=True, check=True,
                )  # fmt: skip
                walls[nodes].append(time.perf_counter() - t0)
                inside[nodes] += [float(line.split()[1]) for line in out.stdout.splitlines()]
        d = statistics.median(direct)
        print(f"per-node audit: dtkguard check of a {len(NAMES)}-dist site")
        print(f"  directly                         {d:7.3f} s (median of {runs})")
        if not have_slurm:
            print("  under srun: skipped (no SLURM_CONF; start the cluster with .ci/slurm-up.sh).")
            print("  The task runs the same command, so only srun's start-up is added.")
            return
        for nodes in (1, 2):
            s, w = statistics.median(inside[nodes]), statistics.median(walls[nodes])
            count = len(inside[nodes])
            print(
                f"  inside srun -N{nodes} tasks            {s:7.3f} s (median of {count})"
                f"  {s / d:.2f}x direct; step wall {w:.3f} s (srun start-up {w - s:.3f} s)"
            )
        print("  (n1 and n2 share this host's 2 CPUs, so -N2 runs two audits on the same cores)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="smallest sizes: does it still run?")
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.runs = 3, 1
    bench_merge(args.nodes, args.runs)
    bench_node_audit(args.runs)


if __name__ == "__main__":
    main()
