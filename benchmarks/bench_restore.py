"""Benchmark `dtkguard restore` against the pip commands a person would type, in one run.

The env: the DAS-like venv of ``_common.das_venv`` (23 vendor builds + the vLLM 0.8.5 closure,
~150 dists), guarded (baseline recorded). Each round clobbers it the way ``pip install
vllm==0.9.2`` does (every package of the real vLLM 0.9.2 pip report whose version differs is
installed with ``--no-deps``: torch 2.7.0, triton, vllm, 14 nvidia-* wheels ...), then brings it
back, alternating the sides so both share the machine's noise:

* ``restore``: ``dtkguard restore --python PY`` (plan, journal, pip, final check), vendor
  wheels from the policy's wheelhouse;
* ``restore (vault)``: the same, wheels from the vault of ``guard install --vault``;
* ``by hand``: ``pip uninstall -y <what came in>`` then ``pip install --no-deps
  --force-reinstall`` of all 23 vendor wheels (what a person does who does not know which
  vendor builds were hit) and of the community packages that were replaced;
* ``by hand, minimal``: the same but only the builds that were replaced (needs knowing them:
  the lower bound).

Every side must end with exactly the baseline's set (checked). Also: the vault's size and the
time ``guard install --vault`` takes for the 23 builds.

    PYTHONPATH=. python benchmarks/bench_restore.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import CACHE, bench_env, das_venv, dtkguard_cmd
from tests.support.reports import das_25041_packages, load_report, make_wheelhouse


def _run(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="one round: does it still run?")
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 1
    venv = das_venv("restore150")
    house = CACHE / "restore150-wheels"
    # pip's configuration for everything that is not a vendor build: the community wheels
    env = {**bench_env(), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(house / "community")}
    vendor_dir = house / "vendor"
    clobber_dir = house / "vllm092"
    if not clobber_dir.is_dir():
        make_wheelhouse(clobber_dir, load_report("vllm092"))
    policy = house / "site.toml"
    policy.write_text(
        f'[policy]\nname = "bench"\nextends = ["dtk-25.04.1"]\n\n'
        f'[sources]\nfind-links = ["{vendor_dir}"]\n'
    )
    nowheels = house / "nowheels.toml"
    nowheels.write_text('[policy]\nname = "bench"\nextends = ["dtk-25.04.1"]\n')
    dtk = dtkguard_cmd()
    py = str(venv.python)
    shutil.rmtree(venv.path / "dtkguard", ignore_errors=True)
    _run([*dtk, "guard", "install", "--python", py, "--policy", policy], env)
    baseline = venv.installed()
    vendor_keys = {p.key for p in das_25041_packages()}
    clobber = [p for p in load_report("vllm092") if baseline.get(p.key) != p.version]
    added = sorted(p.name for p in clobber if p.key not in baseline)
    replaced = [p for p in clobber if p.key in baseline]
    vendor_all = sorted(str(w) for w in vendor_dir.glob("*.whl"))
    pin = {p.key: f"{p.name}=={baseline[p.key]}" for p in replaced}
    hit_vendor = [s for k, s in pin.items() if k in vendor_keys]
    hit_other = [s for k, s in pin.items() if k not in vendor_keys]
    override = {**env, "DTKGUARD_OVERRIDE": "benchmark clobber"}
    pip = [py, "-m", "pip"]

    def do_clobber() -> None:
        specs = [f"{p.name}=={p.version}" for p in clobber]
        _run([*pip, "install", "--no-deps", "--no-index", "-f", clobber_dir, *specs], override)

    def hand(minimal: bool) -> float:
        took = _run([*pip, "uninstall", "-y", *added], override)
        specs = (hit_vendor if minimal else vendor_all) + hit_other
        cmd = [*pip, "install", "--no-deps", "--force-reinstall", "-f", vendor_dir, *specs]
        return took + _run(cmd, override)

    def restore() -> float:
        return _run([*dtk, "restore", "--python", py], env)

    def rounds(sides: dict) -> dict[str, list[float]]:
        times: dict[str, list[float]] = {k: [] for k in sides}
        for _ in range(args.rounds):
            for name, fn in sides.items():
                do_clobber()
                times[name].append(fn())
                now = venv.installed()
                if now != baseline:
                    diff = sorted(
                        k for k in set(now) | set(baseline) if now.get(k) != baseline.get(k)
                    )
                    raise SystemExit(f"{name} did not restore the baseline set: {diff}")
        return times

    # alternate the sides round by round so that they share the machine's noise
    times = rounds(
        {
            "restore (wheelhouse)": restore,
            "by hand": lambda: hand(False),
            "by hand, minimal": lambda: hand(True),
        }
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [*dtk, "guard", "install", "--python", py, "--vault"], env=env, capture_output=True,
        text=True,
    )  # fmt: skip
    vault_cli = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    vault_line = next(ln.strip() for ln in proc.stdout.splitlines() if " vault " in ln)
    wheels = sorted((venv.path / "dtkguard" / "vault").glob("*.whl"))
    vault_bytes = sum(w.stat().st_size for w in wheels)
    times.update(rounds({"restore (vault)": restore, "by hand ": lambda: hand(False)}))
    print(
        f"clobber: {len(replaced)} replaced ({len(hit_vendor)} vendor builds), "
        f"{len(added)} added; env of {len(baseline)} dists; median of {args.rounds} round(s)"
    )
    print(f"{'side':<22} {'seconds':>8}  ratio to `by hand` of the same phase")
    for phase in (
        ("restore (wheelhouse)", "by hand", "by hand, minimal"),
        ("restore (vault)", "by hand "),
    ):
        ref = statistics.median(times[phase[1]])
        for name in phase:
            med = statistics.median(times[name])
            print(f"{name:<22} {med:8.2f}  {med / ref:6.2f}x")
    site = venv.site_packages
    env_bytes = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    print(
        f"vault: {len(wheels)} wheels, {vault_bytes / 1024:.1f} KiB on disk "
        f"(site-packages: {env_bytes / 1024:.0f} KiB); {vault_line}; "
        f"`guard install --vault` took {vault_cli:.2f} s in all"
    )
    journal = venv.path / "dtkguard" / "journal"
    kept = sum(f.stat().st_size for f in journal.rglob("*") if f.is_file())
    print(f"journal after the rounds: {kept / 1024:.1f} KiB (removed files kept until pruned)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
