"""Benchmark `dtkguard audit`: metadata-only audit vs ``pip list`` / ``pip inspect``, and
``--verify-files`` against the machine's hashing limit over the same files.

Run from the repository root (Python 3.10+ with dtkguard's dependencies; creates venvs and
about 650 MB of files under a temporary folder, removed afterwards)::

    PYTHONPATH=. python benchmarks/bench_audit.py [--dists 150] [--small 10000] [--large-mb 224]
    PYTHONPATH=. python benchmarks/bench_audit.py --only verify --runs 7

1. A venv with ~150 distributions built from ``tests/data/pip-reports`` (tiny wheels with the
   real metadata, installed by ``pip install --no-deps --no-index --find-links``): wall time of
   ``dtkguard audit --python VENV/bin/python -f json`` against ``pip list`` and ``pip inspect``
   run by the same interpreter.
2. A site-packages shaped like a torch install (``--small`` files of 1-16 KiB and
   ``--large-mb`` MiB in 16 MiB files, recorded in RECORD as pip would; 10k files, 306 MiB by
   default): `verify` (auto, threads, processes) and ``dtkguard audit --path SITE
   --verify-files`` end to end, against the hashing limit (sha256 of the same bytes in memory,
   split over one thread per core) and ``openssl dgst -sha256`` in two processes. Sides
   alternate, ``--runs`` rounds, medians; page cache warmed first. Goal: at least 0.5 of the
   limit.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._common import dtkguard_cmd  # noqa: E402
from tests.support.reports import load_report, make_wheelhouse, report_names  # noqa: E402
from tests.support.venvs import hermetic_env, make_venv  # noqa: E402


def timed(cmd: list[str], env: dict[str, str]) -> float:
    return timed_cpu(cmd, env)[0]


def timed_cpu(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the child and its children) of one run."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # 1: findings (community torch, nvidia wheels ...)
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {proc.stderr[-500:]!r}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _in_process(work: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU of every thread of this process and of children it waited for) of ``work``."""
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, start = time.process_time(), time.perf_counter()
    work()
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, used + after.ru_utime - kids.ru_utime + after.ru_stime - kids.ru_stime


def metadata_bench(work: Path, count: int) -> None:
    seen = {}
    for name in report_names():
        for pkg in load_report(name):
            seen.setdefault(pkg.key, pkg)
    pkgs = list(seen.values())[:count]
    wheels = make_wheelhouse(work / "wheels", pkgs, tag="py3-none-any")
    venv = make_venv(work / "venv150")
    venv.pip(
        "install",
        "--no-deps",
        "--no-index",
        "--find-links",
        str(work / "wheels"),
        *map(str, wheels),
    )
    n = len(venv.installed())
    env = hermetic_env(NO_COLOR="1", DTKGUARD_NO_PROGRESS="1")
    dtk = [*dtkguard_cmd(), "audit", "--python", str(venv.python), "-f", "json"]
    pip_list = [str(venv.python), "-m", "pip", "list", "--format", "json"]
    pip_inspect = [str(venv.python), "-m", "pip", "inspect"]
    for cmd in (dtk, pip_list, pip_inspect):  # warm the page cache and pyc files once
        timed(cmd, env)
    t_dtk, t_list, t_inspect = timed(dtk, env), timed(pip_list, env), timed(pip_inspect, env)
    print(f"\n== metadata-only audit of {n} installed distributions")
    print(f"dtkguard audit -f json : {t_dtk * 1000:8.0f} ms")
    print(
        f"pip list --format json : {t_list * 1000:8.0f} ms   "
        f"(dtkguard/pip list = {t_dtk / t_list:.2f})"
    )
    print(
        f"pip inspect            : {t_inspect * 1000:8.0f} ms   "
        f"(dtkguard/pip inspect = {t_dtk / t_inspect:.2f})"
    )


def b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def build_large_site(site: Path, small: int, large_mb: int) -> tuple[list[Path], int]:
    """Ten dists sharing ``small`` small files and ``large_mb`` MiB of 16 MiB files."""
    rng = random.Random(7)
    files: list[Path] = []
    total = 0
    blob = os.urandom(16 << 20)
    per = max(1, small // 10)
    large = max(1, large_mb // 16)
    for d in range(10):
        name = f"bulk{d}"
        info = site / f"{name}-1.0.dist-info"
        info.mkdir(parents=True)
        meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\n".encode()
        (info / "METADATA").write_bytes(meta)
        (info / "INSTALLER").write_text("pip\n")
        rows = [f"{info.name}/METADATA,sha256={b64(hashlib.sha256(meta).digest())},{len(meta)}"]
        for i in range(per):
            rel = f"{name}/m{i // 200}/f{i}.py"
            data = blob[i * 97 % (15 << 20) :][: rng.randint(1024, 16384)]
            files.append(_write(site, rel, data, rows))
            total += len(data)
        for i in range(large * (d + 1) // 10 - large * d // 10):
            rel = f"{name}/lib/big{i}.so"
            data = blob[i:] + blob[:i]
            files.append(_write(site, rel, data, rows))
            total += len(data)
        rows.append(f"{info.name}/RECORD,,")
        (info / "RECORD").write_text("\n".join(rows) + "\n")
    return files, total


def _write(site: Path, rel: str, data: bytes, rows: list[str]) -> Path:
    path = site / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    rows.append(f"{rel},sha256={b64(hashlib.sha256(data).digest())},{len(data)}")
    return path


def hash_limit(files: list[Path], total: int, threads: int) -> Callable[[], tuple[float, float]]:
    """The hashing limit: sha256 over the same bytes, held in memory, split into ``threads``
    equal parts hashed in parallel (hashlib releases the GIL), no file and no per-file work."""
    from concurrent.futures import ThreadPoolExecutor

    blob = bytearray(total)
    view = memoryview(blob)
    at = 0
    for f in files:
        data = f.read_bytes()
        view[at : at + len(data)] = data
        at += len(data)
    step = -(-total // threads)
    parts = [view[i : i + step] for i in range(0, total, step)]

    def hash_all() -> None:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda part: hashlib.sha256(part).digest(), parts))

    return lambda: _in_process(hash_all)


def verify_bench(work: Path, small: int, large_mb: int, runs: int) -> None:
    """``verify`` and the CLI against the 2-core hashing limit, alternating, medians."""
    from dtkguard.audit.verify import verify
    from dtkguard.env.environment import from_paths

    site = work / "big" / "lib" / "python3.10" / "site-packages"
    files, total = build_large_site(site, small, large_mb)
    listing = work / "files.list"
    listing.write_bytes(b"\0".join(str(f).encode() for f in files) + b"\0")
    per = -(-len(files) // 2)  # openssl over the file list in two processes
    sha = ["sh", "-c", f"xargs -0 -P 2 -n {per} openssl dgst -sha256 < {listing} > /dev/null"]
    env = hermetic_env(NO_COLOR="1", DTKGUARD_NO_PROGRESS="1")
    cores = os.cpu_count() or 1
    limit = hash_limit(files, total, cores)
    cli = [*dtkguard_cmd(), "audit", "--path", str(site), "--verify-files"]
    cli += ["-f", "json"]

    def library(executor: str) -> Callable[[], tuple[float, float]]:
        def run() -> tuple[float, float]:
            envir = from_paths([site])
            got: list = []
            took = _in_process(
                lambda: got.append(verify(envir.dists, envir.root, executor=executor))
            )
            assert got[0].matched == len(files) + 10, (got[0].matched, got[0].issues[:3])
            return took

        return run

    sides: dict[str, Callable[[], tuple[float, float]]] = {
        f"hashing limit (sha256, {cores} threads, in memory)": limit,
        "openssl dgst -sha256 (xargs, 2 processes)": lambda: timed_cpu(sha, env),
        "verify, auto": library("auto"),
        "verify, threads": library("thread"),
        "verify, processes": library("process"),
        "dtkguard audit --verify-files (CLI)": lambda: timed_cpu(cli, env),
    }
    for side in sides.values():  # warm the page cache and pyc files once
        side()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    for _ in range(runs):  # alternating: every side once per round
        for name, side in sides.items():
            times[name].append(side())
    mb = total / (1 << 20)
    wall = {n: statistics.median(w for w, _ in v) for n, v in times.items()}
    cpu = {n: statistics.median(c for _, c in v) for n, v in times.items()}
    base, base_cpu = next(iter(wall.values())), next(iter(cpu.values()))
    print(f"\n== --verify-files over {len(files)} files, {mb:.0f} MiB ({cores} cores)")
    print(
        f"{runs} rounds alternating, medians; share of the hashing limit = limit time / time "
        "(wall), limit CPU / CPU (user + system of every thread and child)"
    )
    for name in times:
        t, c = wall[name], cpu[name]
        print(
            f"{name:45s}: {t:6.3f} s  {mb / t:6.0f} MiB/s  share of limit {base / t:5.2f}"
            f"   CPU {c:6.3f} s  share {base_cpu / max(c, 1e-6):5.2f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dists", type=int, default=150)
    parser.add_argument("--small", type=int, default=10000)
    parser.add_argument("--large-mb", type=int, default=224)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=("metadata", "verify"))
    parser.add_argument("--smoke", action="store_true", help="smallest sizes: does it still run?")
    args = parser.parse_args()
    if args.smoke:
        args.dists, args.small, args.large_mb, args.runs = 5, 50, 1, 1
    ssl = subprocess.run(["openssl", "version"], capture_output=True, text=True).stdout.strip()
    impl = f"{platform.python_implementation()} {sys.version.split()[0]}"
    print(f"dtkguard side: {sys.executable} ({impl}); CLI: {dtkguard_cmd()[0]} (wheel)")
    print(f"openssl: {shutil.which('openssl')} ({ssl})")
    work = Path(tempfile.mkdtemp(prefix="dtkguard-bench-"))
    try:
        if args.only in (None, "metadata"):
            metadata_bench(work, args.dists)
        if args.only in (None, "verify"):
            verify_bench(work, args.small, args.large_mb, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
