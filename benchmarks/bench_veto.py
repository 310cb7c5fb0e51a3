"""Benchmark a veto: ``dtkpip install vllm==0.9.2`` refused, against plain pip doing the damage.

Two copies of the DAS-like venv of ``_common.das_venv`` (23 vendor builds + the vLLM 0.8.5
closure, ~150 dists); one guarded (``guard install``, policy dtk-25.04.1). A local find-links
of stub wheels with the real metadata (the vendor builds, the vLLM 0.8.5 closure and every
package of the real vLLM 0.9.2 pip report) serves both sides, offline:

* ``dtkpip``: ``dtkguard pip --python GUARDED install --no-index -f ... vllm==0.9.2``: must exit
  1 with the veto and leave the env as it was (checked every round);
* ``pip``: ``PLAIN/bin/python -m pip install --no-index -f ... vllm==0.9.2``: the damage (torch
  2.7.0, triton, 14 nvidia-* wheels ...), put back after each round, untimed.

Sides alternate which goes first, ``--rounds`` rounds after one untimed warm-up each; medians of
wall time and of CPU time (user + system of the command and the children it waited for) and
their ratios (goal: veto <= 0.5x pip doing the damage). The interpreters and pip's
version are printed first.

    PYTHONPATH=. python benchmarks/bench_veto.py [--rounds 5] [--smoke]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import CACHE, bench_env, das_venv, dtkguard_cmd
from tests.support.reports import load_report, make_wheelhouse


def _cpu() -> float:
    """CPU seconds (user + system) of every child this process has waited for."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list, env: dict[str, str], expect: int) -> tuple[tuple[float, float], str]:
    """((wall s, CPU s), stderr) of one run of ``cmd``."""
    cpu = _cpu()
    start = time.perf_counter()
    proc = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True)
    took = time.perf_counter() - start, _cpu() - cpu
    if proc.returncode != expect:
        raise SystemExit(
            f"exit {proc.returncode}, expected {expect}: {' '.join(map(str, cmd))}\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    return took, proc.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one round: does it still run?")
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 1
    guarded, plain = das_venv("veto-guarded"), das_venv("veto-plain")
    house = CACHE / "veto-guarded-wheels"
    clobber_dir = CACHE / "veto-vllm092"
    if not clobber_dir.is_dir():
        make_wheelhouse(clobber_dir, load_report("vllm092"))
    links = ["-f", house / "vendor", "-f", house / "community", "-f", clobber_dir]
    env = bench_env()
    dtk = dtkguard_cmd()
    if not (guarded.path / "dtkguard").is_dir():
        _run([*dtk, "guard", "install", "--python", guarded.python], env, 0)
    for venv in (guarded, plain):
        version = subprocess.run(
            [str(venv.python), "-c", "import sys, pip; print(sys.version.split()[0], "
             "pip.__version__)"],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        print(f"{venv.path.name}: {venv.python} (Python {version[0]}, pip {version[1]})")
    print(f"dtkguard: {sys.executable} (Python {sys.version.split()[0]})")
    request = ["install", "--no-index", *links, "vllm==0.9.2"]
    baseline = plain.installed()
    before = guarded.installed()

    def veto() -> tuple[float, float]:
        took, err = _run([*dtk, "pip", "--python", guarded.python, *request], env, 1)
        if "nothing was installed or removed" not in err or guarded.installed() != before:
            raise SystemExit(f"dtkpip did not veto cleanly:\n{err[-2000:]}")
        return took

    def damage() -> tuple[float, float]:
        took, _ = _run([plain.python, "-m", "pip", *request], env, 0)
        now = plain.installed()
        if now.get("torch") == baseline.get("torch"):
            raise SystemExit("pip did not replace torch: no damage was measured")
        added = sorted(k for k in now if k not in baseline)
        back = [f"{k}=={v}" for k, v in baseline.items() if now.get(k) != v]
        _run([plain.python, "-m", "pip", "uninstall", "-y", *added], env, 0)
        _run(
            [plain.python, "-m", "pip", "install", "--no-deps", "--no-index", *links, *back], env, 0
        )
        if plain.installed() != baseline:
            raise SystemExit("could not put the plain venv back")
        return took

    sides = {"dtkpip veto": veto, "pip doing the damage": damage}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    for i in range(args.rounds + 1):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        for name in order:
            took = sides[name]()
            if i:  # round 0 is the warm-up
                times[name].append(took)
    med = {
        name: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
        for name, t in times.items()
    }
    print(f"\nveto of vllm==0.9.2, {args.rounds} rounds alternating, medians (wall, CPU)")
    for name, (wall, cpu) in med.items():
        print(f"{name:22s}: {wall:7.2f} s   CPU {cpu:7.2f} s")
    (vw, vc), (dw, dc) = med["dtkpip veto"], med["pip doing the damage"]
    print(f"ratio veto / damage   : {vw / dw:.2f}x   CPU {vc / dc:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
