"""`dtkguard check` on a ~150-dist DAS-like environment against `pip list` and `pip inspect`.

Run: ``python benchmarks/bench_check.py [--runs N] [--smoke]`` (after ``pip install -e
'.[test]'`` and ``python tests/prepare.py``). The first run builds the venvs under
``.cache/bench``. The goal is ``dtkguard check`` <= 0.15x the time of ``pip list`` unguarded and
<= 0.3x on the same env guarded (the store's baseline, guard layers and protected files, the
size/inode/ctime pass), both with the venv's own pip (the one ``venv`` bundles: its version is
printed). The guarded env is measured twice: as installed, and after every file's ctime changed
(a journal's hard links do that: the first check hashes, then the store's stat cache holds). It
also prints ``-X importtime`` of the check path, to show that rich, pydantic, tomlkit and pip-api
stay out of it. ``--smoke``: one run of each, to show the benchmark still works.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from _common import bench_env, das_venv, dtkguard_cmd, table, timeit


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="one run each")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    venv = das_venv()
    env = bench_env()
    n = len(venv.installed())
    check = [*dtkguard_cmd(), "check", "--format", "json", "-o", "/dev/null"]
    guarded = _guarded(env)
    gcheck = [*check, "--python", str(guarded.python)]
    rows = [
        ("pip list", timeit([str(venv.python), "-m", "pip", "list"], args.runs, env)),
        ("pip inspect", timeit([str(venv.python), "-m", "pip", "inspect"], args.runs, env)),
        (
            "dtkguard check --path",
            timeit([*check, "--path", str(venv.site_packages)], args.runs, env),
        ),
        ("dtkguard check --python", timeit([*check, "--python", str(venv.python)], args.runs, env)),
        ("check --python, guarded", timeit(gcheck, args.runs, env)),
        ("check, guarded, ctimes new", _after_ctime_change(guarded, gcheck, env)),
        ("python -c pass", timeit([sys.executable, "-c", "pass"], args.runs, env)),
    ]
    pip = venv.pip_version()
    print(f"environment: {n} distributions, pip {pip}, {args.runs} runs each, median wall time\n")
    print(table(rows, "pip list"))
    out = subprocess.run(
        [*check, "--path", str(venv.site_packages)], env={**env}, capture_output=True, text=True
    ).returncode
    imports = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "dtkguard",
            "check",
            "--path",
            str(venv.site_packages),
            "-f",
            "json",
            "-o",
            "/dev/null",
        ],
        env=env,
        capture_output=True,
        text=True,
    ).stderr
    heavy = sorted(
        {
            line.split("|")[-1].strip().split(".")[0]
            for line in imports.splitlines()
            if any(m in line for m in ("pydantic", "rich", "tomlkit", "pip_api"))
        }
    )
    total = [line for line in imports.splitlines() if line.rstrip().endswith("| dtkguard.cli")]
    print(f"\ncheck exit code on the DAS-like env: {out}")
    print(f"heavy modules imported by the check path: {', '.join(heavy) or 'none'}")
    if total:
        print(f"dtkguard.cli import (cumulative us): {total[0].split('|')[1].strip()}")
    return 0


def _guarded(env: dict[str, str]):
    """The same DAS-like env, guarded (`guard install`: baseline, layers, protected files)."""
    venv = das_venv("das150-guarded")
    proc = subprocess.run(
        [*dtkguard_cmd(), "guard", "install", "--python", str(venv.python)],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    return venv


def _after_ctime_change(venv, cmd: list[str], env: dict[str, str]) -> float:
    """The first check after every file of site-packages got a new ctime (a hard link made and
    dropped, as a journal transaction does): it hashes what changed, then the stat cache holds.
    Returns the time of that first check."""
    import os
    import time

    for root, _, files in os.walk(venv.site_packages):
        for name in files:
            path = os.path.join(root, name)
            os.link(path, path + ".bench-link")
            os.unlink(path + ".bench-link")
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


if __name__ == "__main__":
    raise SystemExit(main())
