"""Shared helpers of the benchmarks: the ~150-dist DAS-like venv, timing, ratio tables."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.reports import das_25041_packages, load_report, make_wheelhouse  # noqa: E402
from tests.support.venvs import Venv, hermetic_env, make_venv  # noqa: E402

CACHE = REPO / ".cache" / "bench"


def das_venv(name: str = "das150", pip_version: str | None = None) -> Venv:
    """A venv with the vendor DAS set plus the rest of the vLLM 0.8.5 closure (~150 dists).

    Built once (tiny wheels with the real metadata, installed by real pip with --no-deps) and
    reused; delete ``.cache/bench`` to rebuild. ``pip_version``: that pip from the wheel cache
    (default: the one ``venv`` bundles).
    """
    path = CACHE / name
    marker = path / ".complete"
    if marker.exists():
        from tests.support.venvs import _venv_paths

        return _venv_paths(path)
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    house = CACHE / f"{name}-wheels"
    shutil.rmtree(house, ignore_errors=True)
    vendor = das_25041_packages()
    make_wheelhouse(house / "vendor", vendor)
    taken = {p.key for p in vendor}
    community = []
    for pkg in load_report("vllm085") + load_report("hfstack"):
        if pkg.key in taken or pkg.key.startswith(("nvidia-", "cupy", "xformers", "cuda-")):
            continue
        taken.add(pkg.key)
        community.append(pkg)
    make_wheelhouse(house / "community", community)
    venv = make_venv(path, pip_version=pip_version)
    wheels = sorted(str(p) for p in (house / "vendor").glob("*.whl"))
    wheels += sorted(str(p) for p in (house / "community").glob("*.whl"))
    venv.pip("install", "--no-deps", "--no-index", *wheels)
    marker.write_text("ok\n")
    return venv


def timeit(cmd: Sequence[str], runs: int, env: dict[str, str] | None = None) -> float:
    """Median wall time of ``cmd`` over ``runs`` runs (one warm-up first), in seconds."""
    env = env or hermetic_env()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def alternate(
    cmds: dict[str, Sequence[str]], runs: int, env: dict[str, str] | None = None
) -> dict[str, tuple[float, float]]:
    """{name: (median wall seconds, median CPU seconds of the process and its children)} of
    each command, run side by side: one warm-up each, then ``runs`` rounds, each running every
    command once, in an order that rotates from round to round (so that all share the
    machine's noise)."""
    import resource

    env = env or hermetic_env()
    for cmd in cmds.values():
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    names = list(cmds)
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for i in range(runs):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(
                cmds[name], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            wall[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            cpu[name].append(used)
    return {n: (statistics.median(wall[n]), statistics.median(cpu[n])) for n in names}


def table(
    rows: list[tuple[str, float]],
    base: str,
    unit: Callable[[float], str] | None = None,
) -> str:
    """Rows of (name, seconds) with the ratio to the row named ``base``."""
    ref = dict(rows)[base]
    unit = unit or (lambda s: f"{s * 1000:8.1f} ms")
    width = max(len(n) for n, _ in rows)
    lines = [f"{'command':<{width}}  {'median':>11}  ratio to {base}"]
    lines += [f"{n:<{width}}  {unit(s):>11}  {s / ref:6.3f}x" for n, s in rows]
    return "\n".join(lines)


def dtkguard_cmd() -> list[str]:
    return [sys.executable, "-m", "dtkguard"]


def bench_env() -> dict[str, str]:
    env = hermetic_env(NO_COLOR="1")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["DTKGUARD_CACHE_DIR"] = str(CACHE / "dtkguard-cache")
    # the guard's store of the benchmark envs (never /var/lib/dtkguard of a root run)
    env["DTKGUARD_STORE"] = str(CACHE / "store")
    return env
