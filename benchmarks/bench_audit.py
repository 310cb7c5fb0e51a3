"""Benchmark `dtkguard audit`: metadata-only audit vs ``pip list`` / ``pip inspect``, and
``--verify-files`` vs ``sha256sum`` over the same files. One run, ratios printed.

Run from the repository root (Python 3.10+ with dtkguard's dependencies; creates venvs and
about 600 MB of files under a temporary folder, removed afterwards)::

    PYTHONPATH=. python benchmarks/bench_audit.py [--dists 150] [--large-mb 512] [--small 20000]

1. A venv with ~150 distributions built from ``tests/data/pip-reports`` (tiny wheels with the
   real metadata, installed by ``pip install --no-deps --no-index --find-links``): wall time of
   ``dtkguard audit --python VENV/bin/python -f json`` against ``pip list`` and ``pip inspect``
   run by the same interpreter.
2. A site-packages with many files (``--small`` files of 1-16 KiB and ``--large-mb`` MiB in 16 MiB
   files, recorded in RECORD as pip would): `verify` with threads and with processes (all
   cores), and ``dtkguard audit --path SITE --verify-files`` end to end, against
   ``sha256sum`` over the same file list (page cache warmed first for both). Goal: at least 0.8
   of sha256sum's throughput.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.reports import load_report, make_wheelhouse, report_names  # noqa: E402
from tests.support.venvs import hermetic_env, make_venv  # noqa: E402


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode not in (0, 1):  # 1: findings (community torch, nvidia wheels ...)
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {proc.stderr[-500:]!r}")
    return time.perf_counter() - start


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
    env = hermetic_env(PYTHONPATH=str(REPO), NO_COLOR="1", DTKGUARD_NO_PROGRESS="1")
    dtk = [sys.executable, "-m", "dtkguard", "audit", "--python", str(venv.python), "-f", "json"]
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


def verify_bench(work: Path, small: int, large_mb: int) -> None:
    from dtkguard.audit.verify import verify
    from dtkguard.env.environment import from_paths

    site = work / "big" / "lib" / "python3.10" / "site-packages"
    files, total = build_large_site(site, small, large_mb)
    listing = work / "files.list"
    listing.write_bytes(b"\0".join(str(f).encode() for f in files) + b"\0")
    sha = ["sh", "-c", f"xargs -0 sha256sum < {listing} > /dev/null"]
    env = hermetic_env(PYTHONPATH=str(REPO), NO_COLOR="1", DTKGUARD_NO_PROGRESS="1")
    timed(sha, env)  # warm the page cache
    t_sha = timed(sha, env)
    results = {}
    for executor in ("thread", "process"):
        envir = from_paths([site])
        start = time.perf_counter()
        out = verify(envir.dists, envir.root, executor=executor)
        results[executor] = time.perf_counter() - start
        assert out.matched == len(files) + 10, (out.matched, out.issues[:3])
    single = from_paths([site])
    start = time.perf_counter()
    verify(single.dists, single.root, workers=1)
    t_one = time.perf_counter() - start
    cli = [
        sys.executable,
        "-m",
        "dtkguard",
        "audit",
        "--path",
        str(site),
        "--verify-files",
        "-f",
        "json",
    ]
    t_cli = timed(cli, env)
    mb = total / (1 << 20)
    cores = os.cpu_count()
    print(f"\n== --verify-files over {len(files)} files, {mb:.0f} MiB ({cores} cores)")
    print(f"sha256sum (xargs)          : {t_sha:6.2f} s  {mb / t_sha:7.0f} MiB/s")
    for name, t in (
        ("verify, 1 thread", t_one),
        ("verify, threads", results["thread"]),
        ("verify, processes", results["process"]),
        ("dtkguard audit CLI (auto)", t_cli),
    ):
        print(
            f"{name:27s}: {t:6.2f} s  {mb / t:7.0f} MiB/s   "
            f"throughput vs sha256sum = {t_sha / t:.2f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dists", type=int, default=150)
    parser.add_argument("--small", type=int, default=20000)
    parser.add_argument("--large-mb", type=int, default=512)
    parser.add_argument("--smoke", action="store_true", help="smallest sizes: does it still run?")
    args = parser.parse_args()
    if args.smoke:
        args.dists, args.small, args.large_mb = 5, 50, 1
    work = Path(tempfile.mkdtemp(prefix="dtkguard-bench-"))
    try:
        metadata_bench(work, args.dists)
        verify_bench(work, args.small, args.large_mb)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
