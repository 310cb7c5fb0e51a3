"""`dtkguard check` on a ~150-dist DAS-like environment against `pip list` and `pip inspect`.

Run: ``python benchmarks/bench_check.py [--runs N]`` (after ``pip install -e '.[test]'`` and
``python tests/prepare.py``). The first run builds the venv under ``.cache/bench``. The goal is
``dtkguard check`` <= 0.15x the time of ``pip list``; it also prints ``-X importtime`` of the
check path, to show that rich, pydantic, tomlkit and pip-api stay out of it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from _common import bench_env, das_venv, dtkguard_cmd, table, timeit


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="one run: does it still run?")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    venv = das_venv()
    env = bench_env()
    n = len(venv.installed())
    check = [*dtkguard_cmd(), "check", "--format", "json", "-o", "/dev/null"]
    rows = [
        ("pip list", timeit([str(venv.python), "-m", "pip", "list"], args.runs, env)),
        ("pip inspect", timeit([str(venv.python), "-m", "pip", "inspect"], args.runs, env)),
        (
            "dtkguard check --path",
            timeit([*check, "--path", str(venv.site_packages)], args.runs, env),
        ),
        ("dtkguard check --python", timeit([*check, "--python", str(venv.python)], args.runs, env)),
        ("python -c pass", timeit([sys.executable, "-c", "pass"], args.runs, env)),
    ]
    print(f"environment: {n} distributions, {args.runs} runs each, median wall time\n")
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


if __name__ == "__main__":
    raise SystemExit(main())
