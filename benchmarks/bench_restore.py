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
  --force-reinstall`` of all 23 vendor wheels by their paths (what a person does who does not
  know which vendor builds were hit) and of the community packages that were replaced, by
  ``name==version`` from pip's configured find-links;
* ``by hand, minimal``: the same but only the vendor builds that were replaced (needs knowing
  them: the lower bound), by the paths of the wheels they were installed from (pip writes
  the same ``direct_url.json`` again: by name it would write none).

Both commands of a hand side are what `restore` does too (it does the same removals and the
same installs, from the same wheels, plus its plan, hash checks, journal and final check).
Every side must end with exactly the baseline's set, and every file of the env (but
``__pycache__``) must be the same bytes after `restore` as after ``by hand, minimal``
(checked each round; what both leave different from before the clobber is printed: the
replaced community packages come back from find-links by name, so without the
``direct_url.json`` their first install by path wrote). Also: the vault's size and the time
``guard install --vault`` takes for the 23 builds.

Then a wiped env (``python -m venv --clear``: no torch, no guard): ``dtkguard restore`` rebuilds
it from the store (pip's files, the guard, the vendor builds from the vault, the other packages
from pip's configured find-links) against the commands a person would type (``pip install
--no-deps`` of every wheel of the baseline, then ``dtkguard guard install``).

    PYTHONPATH=. python benchmarks/bench_restore.py [--rounds 3] [--smoke]

``--smoke``: one round of each phase, to show the benchmark still works.
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
    parser.add_argument("--smoke", action="store_true", help="one round of each phase")
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 1
    venv = das_venv("restore150")
    if not _pristine(venv):  # a run stopped half-way left it clobbered or wiped: build it again
        shutil.rmtree(venv.path)
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
    shutil.rmtree(Path(env["DTKGUARD_STORE"]), ignore_errors=True)
    _run([*dtk, "guard", "install", "--python", py, "--policy", policy], env)
    baseline = venv.installed()
    vendor_keys = {p.key for p in das_25041_packages()}
    clobber = [p for p in load_report("vllm092") if baseline.get(p.key) != p.version]
    added = sorted(p.name for p in clobber if p.key not in baseline)
    replaced = [p for p in clobber if p.key in baseline]
    vendor_all = sorted(str(w) for w in vendor_dir.glob("*.whl"))
    pin = {p.key: f"{p.name}=={baseline[p.key]}" for p in replaced}
    hit_vendor = [
        w
        for p in replaced
        if p.key in vendor_keys and (w := _wheel_of(vendor_dir, p.key, baseline[p.key]))
    ]
    hit_other = [s for k, s in pin.items() if k not in vendor_keys]
    override = {**env, "DTKGUARD_OVERRIDE": "benchmark clobber"}
    pip = [py, "-m", "pip"]

    def do_clobber() -> None:
        specs = [f"{p.name}=={p.version}" for p in clobber]
        _run([*pip, "install", "--no-deps", "--no-index", "-f", clobber_dir, *specs], override)

    def hand(minimal: bool) -> float:
        took = _run([*pip, "uninstall", "-y", *added], override)
        specs = (hit_vendor if minimal else vendor_all) + hit_other
        return took + _run([*pip, "install", "--no-deps", "--force-reinstall", *specs], override)

    def restore() -> float:
        return _run([*dtk, "restore", "--python", py, "--yes"], env)

    pristine = _files(venv)
    ends: dict[str, dict[str, str]] = {}

    def rounds(sides: dict, pair: tuple[str, str]) -> dict[str, list[float]]:
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
                ends[name] = _files(venv)
            _same_end(ends, *pair)
        return times

    # alternate the sides round by round so that they share the machine's noise
    times = rounds(
        {
            "restore (wheelhouse)": restore,
            "by hand": lambda: hand(False),
            "by hand, minimal": lambda: hand(True),
        },
        ("restore (wheelhouse)", "by hand, minimal"),
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
    store = _env_store(venv.path, env)
    wheels = sorted(store.vault.glob("*.whl"))
    vault_bytes = sum(w.stat().st_size for w in wheels)
    times.update(
        rounds(
            {
                "restore (vault)": restore,
                "by hand ": lambda: hand(False),
                "by hand, minimal ": lambda: hand(True),
            },
            ("restore (vault)", "by hand, minimal "),
        )
    )
    print(
        f"clobber: {len(replaced)} replaced ({len(hit_vendor)} vendor builds), "
        f"{len(added)} added; env of {len(baseline)} dists; median of {args.rounds} round(s)"
    )
    left = sorted({k for k in set(pristine) | set(ends["restore (wheelhouse)"])
                   if pristine.get(k) != ends["restore (wheelhouse)"].get(k)})  # fmt: skip
    print(
        f"restore and `by hand, minimal` end byte-identical; both differ from before the "
        f"clobber in {len(left)} file(s): {', '.join(left[:4])}{' ...' if len(left) > 4 else ''}"
    )
    print(f"pip {_pip_version(py, env)} on {_python_version(py)}; load average {_load()}")
    print(f"{'side':<22} {'seconds':>8}  ratio to `by hand` of the same phase")
    for phase in (
        ("restore (wheelhouse)", "by hand", "by hand, minimal"),
        ("restore (vault)", "by hand ", "by hand, minimal "),
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
    kept = sum(f.stat().st_size for f in store.journal.rglob("*") if f.is_file())
    print(f"journal after the rounds: {kept / 1024:.1f} KiB (removed files kept until pruned)")
    wheels = [*vendor_all, *_community(house, baseline, vendor_keys)]
    _wiped(venv, env, args.rounds, wheels, policy)
    return 0


def _wheel_of(folder: Path, key: str, version: str) -> str | None:
    """The wheel of ``key`` ``version`` in ``folder`` (the one the baseline was installed from)."""
    from packaging.utils import canonicalize_name, parse_wheel_filename

    for wheel in sorted(folder.glob("*.whl")):
        name, ver, _, _ = parse_wheel_filename(wheel.name)
        if canonicalize_name(name) == key and str(ver) == version:
            return str(wheel)
    return None


def _files(venv) -> dict[str, str]:
    """Every file of the env as bytes (sha256) but ``__pycache__`` and dtkguard's own state."""
    return {k: v for k, v in venv.snapshot().items() if not k.startswith("dtkguard/")}


def _same_end(ends: dict[str, dict[str, str]], a: str, b: str) -> None:
    """`restore` (``a``) and the hand-made commands (``b``) left the same bytes."""
    diff = sorted(k for k in set(ends[a]) | set(ends[b]) if ends[a].get(k) != ends[b].get(k))
    if diff:
        raise SystemExit(f"{a} and {b} did not leave the same files: {diff[:10]}")


def _pip_version(py: str, env: dict[str, str]) -> str:
    out = subprocess.run([py, "-m", "pip", "--version"], env=env, capture_output=True, text=True)
    return out.stdout.split()[1] if out.stdout else "?"


def _python_version(py: str) -> str:
    out = subprocess.run([py, "-V"], capture_output=True, text=True)
    return (out.stdout or out.stderr).strip()


def _load() -> str:
    import os

    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def _pristine(venv) -> bool:
    """Every vendor build of the DAS set is installed at its version (the state each phase
    starts from)."""
    installed = venv.installed()
    return all(installed.get(p.key) == p.version for p in das_25041_packages())


def _env_store(prefix: Path, env: dict[str, str]):
    import os

    from dtkguard.env import store

    old = os.environ.get(store.STORE_VAR)
    os.environ[store.STORE_VAR] = env[store.STORE_VAR]
    try:
        return store.env_store(prefix)
    finally:
        if old is None:
            os.environ.pop(store.STORE_VAR)
        else:
            os.environ[store.STORE_VAR] = old


def _community(house: Path, baseline: dict[str, str], vendor: set[str]) -> list[str]:
    """The community wheels of the baseline's other packages."""
    from packaging.utils import canonicalize_name, parse_wheel_filename

    out = []
    for wheel in sorted((house / "community").glob("*.whl")):
        name, version, _, _ = parse_wheel_filename(wheel.name)
        key = canonicalize_name(name)
        if key not in vendor and baseline.get(key) == str(version):
            out.append(str(wheel))
    return out


def _wiped(venv, env: dict[str, str], rounds: int, wheels: list[str], policy: Path) -> None:
    """``venv --clear``, then `restore` (from the store) against the hand-made commands."""
    py, dtk = str(venv.python), dtkguard_cmd()
    baseline = venv.installed()

    def wipe() -> None:
        _run([sys.executable, "-m", "venv", "--clear", venv.path], env)

    def by_hand() -> float:
        took = _run([py, "-m", "pip", "install", "--no-deps", "--no-index", *wheels], env)
        return took + _run([*dtk, "guard", "install", "--python", py, "--policy", policy], env)

    def restore() -> float:
        return _run([*dtk, "restore", "--python", py, "--yes"], env)

    times: dict[str, list[float]] = {"restore (wiped env)": [], "by hand (wiped env)": []}
    sides = [("restore (wiped env)", restore), ("by hand (wiped env)", by_hand)]
    for i in range(rounds):  # the order alternates from round to round: both share the noise
        for name, fn in sides[i % 2 :] + sides[: i % 2]:
            wipe()
            times[name].append(fn())
            if venv.installed() != baseline:
                raise SystemExit(f"{name} did not bring the baseline set back")
    ref = statistics.median(times["by hand (wiped env)"])
    for name, values in times.items():
        med = statistics.median(values)
        print(f"{name:<22} {med:8.2f}  {med / ref:6.2f}x")


if __name__ == "__main__":
    raise SystemExit(main())
