"""Benchmark: dtkguard lock vs pip 26.3 vs uv on the same inputs, side by side, cold and warm.

    PYTHONPATH=. python benchmarks/bench_lock.py            # needs `python tests/prepare.py` once
    PYTHONPATH=. python benchmarks/bench_lock.py --only pyrax-index

Scenarios (Python 3.10, manylinux_2_35_x86_64 target for every tool):

- ``vllm-index``: the vendor vLLM 0.8.5 closure from a local PEP 503/691/658 index on
  127.0.0.1 (tiny wheels with the real metadata of ``tests/data/pip-reports/vllm085.json``
  plus the 23 DAS 25.04.1 vendor builds); pip and uv get the policy's vendor builds as
  constraints (what a careful user would pass). dtkguard: ``lock --vendor-index-url IDX
  --index-url IDX``.
- ``vllm-find-links``: the same wheels from two local folders (``--vendor-find-links`` /
  ``--find-links``, ``--no-index`` for everyone).
- ``pyrax-index``: ``pyrax==1.9.8`` on resolvelib's 2020-02-15 PyPI snapshot (metadata-only
  wheels, served as an index): unsatisfiable, and a resolver that lets its preferences defeat
  backjumping thrashes on it. Every tool must refuse it (exit 1).

Commands: dtkguard ``lock ... -o pylock.bench.toml`` (resolve + write a validated PEP 751
lock), pip ``install --dry-run --report R --ignore-installed --only-binary :all:
--python-version 3.10 --platform (every manylinux tag down from 2_35, which pip does not add
itself)``, uv ``pip compile --format pylock.toml --python-version 3.10 --python-platform
x86_64-manylinux_2_35``. Cold = empty cache folder (``DTKGUARD_CACHE_DIR``, ``--cache-dir``),
warm = the same folder again. Prints seconds, index requests and the ratios dtkguard/pip and
dtkguard/uv. Goals: <= 1.0x uv warm and cold; on pyrax <= pip and <= 3x uv. Wall-clock times on
a shared machine vary by run.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.cache import uv_binary  # noqa: E402
from tests.support.das_image import build_community, build_vendor  # noqa: E402
from tests.support.index import serve_index  # noqa: E402
from tests.support.snapshots import snapshot_wheelhouse  # noqa: E402
from tests.support.venvs import hermetic_env, make_venv  # noqa: E402

VLLM = "vllm==0.8.5.post1+das.opt1.dtk25041"
PYRAX = "pyrax==1.9.8"
SCENARIOS = ("vllm-index", "vllm-find-links", "pyrax-index")


def _commands(tool: str, request: str, where: dict[str, str], cache: Path, ctx) -> list[str]:
    """The command line of ``tool`` for one scenario (``where``: index or folders)."""
    if tool == "dtkguard":
        if "index" in where:
            src = ["--vendor-index-url", where["index"], "--index-url", where["index"]]
        else:
            src = ["--vendor-find-links", where["vendor"], "--find-links", where["community"],
                   "--no-index"]  # fmt: skip
        return [sys.executable, "-m", "dtkguard", "lock", request, "--policy", "dtk-25.04.1",
                *src, "-o", "pylock.bench.toml"]  # fmt: skip
    if "index" in where:
        src = ["--index-url", where["index"]]
    else:
        src = ["--no-index", "--find-links", where["community"], "--find-links", where["vendor"]]
    cons = ["-c", "vendor.txt"] if request == VLLM else []
    if tool == "pip":
        return [str(ctx.pip), "-m", "pip", "install", "--dry-run", "--report", "report.json",
                "--ignore-installed", "--only-binary", ":all:", "--python-version", "3.10",
                *ctx.platforms, "--cache-dir", str(cache), *src, *cons, request]  # fmt: skip
    return [ctx.uv, "pip", "compile", "--format", "pylock.toml", "--python-version", "3.10",
            "--python-platform", "x86_64-manylinux_2_35", "--cache-dir", str(cache), *src,
            *cons, "-o", "pylock.uv.toml", "-"]  # fmt: skip


def _run(cmd: list[str], request: str, cwd: Path, cache: Path, expect: int) -> tuple[float, str]:
    env = hermetic_env(PYTHONPATH=str(REPO), DTKGUARD_CACHE_DIR=str(cache))
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, input=request + "\n", capture_output=True,
                          text=True)  # fmt: skip
    took = time.perf_counter() - start
    if proc.returncode != expect:
        raise SystemExit(f"exit {proc.returncode}, expected {expect}: {' '.join(cmd)}\n"
                         f"{proc.stdout}\n{proc.stderr}")  # fmt: skip
    return took, proc.stdout + proc.stderr


class _Ctx:
    pip: Path
    uv: str
    platforms: list[str]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=SCENARIOS, action="append")
    args = parser.parse_args()
    from dtkguard.policy.load import load_policy
    from dtkguard.resolve.target import expand_platform

    policy = load_policy("dtk-25.04.1")
    scenarios = args.only or list(SCENARIOS)
    with tempfile.TemporaryDirectory(prefix="dtkguard-bench-") as tmp:
        base = Path(tmp)
        community, vendor, both = base / "community", base / "vendor", base / "both"
        build_community(community, ("vllm085",))
        build_vendor(vendor)
        shutil.copytree(community, both)
        for wheel in vendor.iterdir():
            shutil.copy(wheel, both / wheel.name)
        (base / "vendor.txt").write_text(
            "".join(f"{name}=={version}\n" for name, version in sorted(policy.vendor.items()))
        )
        pyrax = snapshot_wheelhouse("pypi-2020-02-15-pyrax", base / "pyrax")
        ctx = _Ctx()
        ctx.platforms = [a for t in expand_platform("manylinux_2_35_x86_64")
                         for a in ("--platform", t)]  # fmt: skip
        ctx.pip = make_venv(base / "pipvenv", pip_version="26.3").python
        ctx.uv = uv_binary()
        rows = []
        for scenario in scenarios:
            request = PYRAX if scenario.startswith("pyrax") else VLLM
            expect = 1 if request == PYRAX else 0
            folder = pyrax if request == PYRAX else both
            with serve_index(folder) as index:
                urllib.request.urlopen(index.url).read()  # the server hashes files once
                if scenario.endswith("index"):
                    where = {"index": index.url}
                else:
                    where = {"community": str(community), "vendor": str(vendor)}
                times: dict[str, dict[str, float]] = {}
                note = ""
                for tool in ("dtkguard", "pip", "uv"):
                    cache = base / f"cache-{scenario}-{tool}"
                    for phase in ("cold", "warm"):
                        if phase == "cold":
                            shutil.rmtree(cache, ignore_errors=True)
                        cache.mkdir(exist_ok=True)
                        index.clear()
                        cmd = _commands(tool, request, where, cache, ctx)
                        took, out = _run(cmd, request, base, cache, expect)
                        times.setdefault(tool, {})[phase] = took
                        times[tool][phase + "-requests"] = len(index.requests)
                        m = re.search(r"(\d+) resolver rounds, (\d+) backtracks", out)
                        if tool == "dtkguard" and m:
                            note = f"{m.group(1)} rounds, {m.group(2)} backtracks"
                rows.append((scenario, times, note))
    print(f"{'scenario':18}{'tool':10}{'cold s':>8}{'warm s':>8}   requests cold/warm")
    for scenario, times, note in rows:
        for tool, t in times.items():
            print(f"{scenario:18}{tool:10}{t['cold']:8.2f}{t['warm']:8.2f}   "
                  f"{t['cold-requests']}/{t['warm-requests']}")  # fmt: skip
        d, p, u = times["dtkguard"], times["pip"], times["uv"]
        ratios = ", ".join(
            f"{phase}: {d[phase] / p[phase]:.2f}x pip, {d[phase] / u[phase]:.2f}x uv"
            for phase in ("cold", "warm")
        )
        print(f"{scenario:18}dtkguard/others  {ratios}" + (f"  ({note})" if note else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
