"""Benchmark: lock the vendor vLLM 0.8.5 closure with dtkguard, pip and uv, side by side.

    PYTHONPATH=. python benchmarks/bench_lock.py            # needs `python tests/prepare.py` once

One run of each tool against the same local PEP 503/691/658 index on 127.0.0.1 (tiny wheels
with the real metadata of ``tests/data/pip-reports/vllm085.json`` plus the 23 DAS 25.04.1
vendor builds), for Python 3.10 on manylinux_2_35_x86_64, with the policy's vendor builds as
constraints for pip and uv (what a careful user would pass), cold and warm caches:

- dtkguard: ``dtkguard lock vllm==... --vendor-index-url IDX --index-url IDX -o pylock.bench.toml``
  (resolve + write a validated PEP 751 lock). dtkguard keeps no cache between runs except the
  compiled policy: cold = empty ``DTKGUARD_CACHE_DIR``, warm = the same folder again.
- pip 26.3: ``pip install --dry-run --report R --ignore-installed --only-binary :all:
  --python-version 3.10 --platform manylinux_2_35_x86_64 (and every lower manylinux tag, which
  pip does not add itself) -c vendor.txt vllm==...``,
  cold = empty ``--cache-dir``, warm = the same again.
- uv: ``uv pip compile --format pylock.toml --python-version 3.10 --python-platform
  x86_64-manylinux_2_35 -c vendor.txt``, cold = empty ``--cache-dir``, warm = the same again.

Also times the floor: dtkguard's own requests fetched all at once (no resolving), i.e. what
the local index server costs. Prints seconds, ratios (dtkguard / pip, dtkguard / uv) and
dtkguard's resolver rounds.
Goal: <= 0.15x pip, <= 1.0x uv warm. Wall-clock times on a shared machine vary by run.
"""

from __future__ import annotations

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
from tests.support.venvs import hermetic_env, make_venv  # noqa: E402

REQUEST = "vllm==0.8.5.post1+das.opt1.dtk25041"


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    return took, proc.stdout + proc.stderr


def main() -> int:
    from dtkguard.policy.load import load_policy
    from dtkguard.resolve.target import expand_platform

    policy = load_policy("dtk-25.04.1")
    with tempfile.TemporaryDirectory(prefix="dtkguard-bench-") as tmp:
        base = Path(tmp)
        wheels = base / "wheels"
        build_community(wheels, ("vllm085",))
        build_vendor(wheels)
        (base / "vendor.txt").write_text(
            "".join(f"{name}=={version}\n" for name, version in sorted(policy.vendor.items()))
        )
        # pip does not expand manylinux_2_35 to the lower manylinux tags itself: list them
        platforms = [a for t in expand_platform("manylinux_2_35_x86_64") for a in ("--platform", t)]
        pipvenv = make_venv(base / "pipvenv", pip_version="26.3")
        uv = uv_binary()
        results: dict[str, dict[str, float]] = {}
        requests: dict[str, list[int]] = {}
        rounds = ""
        with serve_index(wheels) as index:
            # the test server hashes every file on its first scan: do that before timing anyone
            urllib.request.urlopen(index.url).read()
            for tool in ("dtkguard", "pip", "uv"):
                cache = base / f"cache-{tool}"
                for phase in ("cold", "warm"):
                    if phase == "cold":
                        shutil.rmtree(cache, ignore_errors=True)
                    cache.mkdir(exist_ok=True)
                    env = hermetic_env(PYTHONPATH=str(REPO), DTKGUARD_CACHE_DIR=str(cache))
                    if tool == "dtkguard":
                        cmd = [sys.executable, "-m", "dtkguard", "lock", REQUEST,
                               "--policy", "dtk-25.04.1", "--vendor-index-url", index.url,
                               "--index-url", index.url, "-o", "pylock.bench.toml"]  # fmt: skip
                    elif tool == "pip":
                        cmd = [str(pipvenv.python), "-m", "pip", "install", "--dry-run",
                               "--report", "report.json", "--ignore-installed",
                               "--only-binary", ":all:", "--python-version", "3.10",
                               *platforms, "--cache-dir", str(cache),
                               "--index-url", index.url, "-c", "vendor.txt", REQUEST]  # fmt: skip
                    else:
                        cmd = [uv, "pip", "compile", "--format", "pylock.toml",
                               "--python-version", "3.10",
                               "--python-platform", "x86_64-manylinux_2_35",
                               "--cache-dir", str(cache), "--index-url", index.url,
                               "-c", "vendor.txt", "-o", "pylock.uv.toml", "-"]  # fmt: skip
                    index.clear()
                    if tool == "uv":
                        start = time.perf_counter()
                        proc = subprocess.run(cmd, env=env, cwd=base, input=REQUEST + "\n",
                                              capture_output=True, text=True)  # fmt: skip
                        took = time.perf_counter() - start
                        if proc.returncode != 0:
                            raise SystemExit(f"uv failed:\n{proc.stderr}")
                        out = proc.stderr
                    else:
                        took, out = _timed(cmd, env, base)
                    results.setdefault(tool, {})[phase] = took
                    requests.setdefault(tool, []).append(len(index.requests))
                    if tool == "dtkguard":
                        paths = list(index.requests)
                    if tool == "dtkguard":
                        m = re.search(r"(\d+ packages).*?(\d+) resolver rounds, (\d+) backtracks",
                                      out)  # fmt: skip
                        if m:
                            rounds = f"{m.group(1)}, {m.group(2)} rounds, {m.group(3)} backtracks"
            # the floor: the same requests, all at once on 8 keep-alive threads, no resolving
            floor_code = (
                "import sys; from dtkguard.resolve.http import Fetcher, JSON_ACCEPT; "
                "f = Fetcher(); "
                "urls = sys.stdin.read().split(); "
                "f.prefetch([u for u in urls if u.endswith('/')], JSON_ACCEPT); "
                "f.prefetch([u for u in urls if not u.endswith('/')]); "
                "[f.get(u, JSON_ACCEPT if u.endswith('/') else '*/*') for u in urls]"
            )
            urls = "\n".join(index.base_url + p for p in paths)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", floor_code], input=urls, text=True, check=True,
                           env=hermetic_env(PYTHONPATH=str(REPO)))  # fmt: skip
            floor = time.perf_counter() - start
        pip_n = len(__import__("json").loads((base / "report.json").read_text())["install"])
    print(f"vendor vLLM 0.8.5 closure: dtkguard {rounds}; pip planned {pip_n} packages")
    print(f"{'':10}{'cold s':>10}{'warm s':>10}   index requests cold/warm")
    for tool, r in results.items():
        n = requests[tool]
        print(f"{tool:10}{r['cold']:10.2f}{r['warm']:10.2f}   {n[0]}/{n[1]}")
    print(f"fetch-only floor (dtkguard's {len(paths)} requests, 8 threads, no resolving): "
          f"{floor:.2f}s")  # fmt: skip
    d, p, u = results["dtkguard"], results["pip"], results["uv"]
    for phase in ("cold", "warm"):
        print(f"{phase}: dtkguard/pip = {d[phase] / p[phase]:.2f}x, "
              f"dtkguard/uv = {d[phase] / u[phase]:.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
