"""`dtkguard check` of a ~150-dist guarded DAS-like environment against `pip list` (pip 26.3)
and `uv pip list`.

Run: ``python benchmarks/bench_check.py [--runs N] [--smoke]`` (after ``pip install -e
'.[test]'`` and ``python tests/prepare.py``). The first run builds the venvs under
``.cache/bench`` with exactly pip 26.3 from the wheel cache. Goals: ``check --python`` of the
guarded env (the store's baseline, guard layers and protected files, the size/inode/ctime
pass) <= 0.3x ``pip list`` and <= 3x ``uv pip list`` of the same env; also measured: ``check``
of the same env unguarded (``--python``, ``--path``). Every command runs side by side with the
others, alternating, ``--runs`` rounds (at least 5) after one warm-up each; the ratios are of
the medians, of wall time and of CPU time (the process and its children: steadier on a busy
machine). The guarded env is then checked once more after every file's ctime changed (a
journal's hard links do that: that check hashes, then the store's stat cache holds). It also
prints the modules the check path imports that tests/test_imports.py keeps out of it.
dtkguard runs as a user runs it: the ``dtkguard`` console script of a venv where this
checkout is installed from its built wheel, beside its dependencies (``_common.dtkguard_cmd``:
built once under ``.cache/bench/user-DIGEST``, rebuilt when the sources change), with no
``PYTHONPATH``. ``--against CHECKOUT``: also the guarded check of another checkout of dtkguard
(the one before a change), installed the same way in its own venv, in the same rounds.
``--smoke``: one round, to show the benchmark still works.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from _common import alternate, bench_env, das_venv, dtkguard_cmd, user_venv

PIP = "26.3"
GOAL_PIP, GOAL_UV = 0.3, 3.0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--smoke", action="store_true", help="one round")
    parser.add_argument("--against", metavar="CHECKOUT", help="another checkout's check too")
    args = parser.parse_args()
    runs = 1 if args.smoke else max(args.runs, 5)
    env = bench_env()
    plain = das_venv(f"das150-pip{PIP}", pip_version=PIP)
    guarded = _guarded(env)
    uv = _uv()
    check = [*dtkguard_cmd(), "check", "--format", "json", "-o", "/dev/null"]
    gcheck = [*check, "--python", str(guarded.python)]
    cmds = {
        "pip list": [str(guarded.python), "-m", "pip", "list"],
        "uv pip list": [uv, "pip", "list", "--python", str(guarded.python)],
        "check --python, guarded": gcheck,
        "check --python": [*check, "--python", str(plain.python)],
        "check --path": [*check, "--path", str(plain.site_packages)],
        "python -c pass": [str(user_venv() / "bin" / "python"), "-c", "pass"],
    }
    if args.against:
        cmds["guarded, --against"] = [*dtkguard_cmd(Path(args.against)), *gcheck[1:]]
    times = alternate(cmds, runs, env)
    n = len(guarded.installed())
    print(
        f"environment: {n} distributions; Python {sys.version.split()[0]}, "
        f"pip {guarded.pip_version()} (the env's), {_version([uv, '--version'])}, "
        f"{_version([*dtkguard_cmd(), '--version'], env)} (its wheel in {user_venv()}); "
        f"{runs} alternating round(s), medians"
    )
    pip_wall, pip_cpu = times["pip list"]
    print(f"{'command':<26} {'wall':>9} {'x pip list':>10} {'cpu':>9} {'x pip list':>10}")
    for name, (wall, cpu) in times.items():
        print(
            f"{name:<26} {wall * 1000:6.0f} ms {wall / pip_wall:9.3f}x "
            f"{cpu * 1000:6.0f} ms {cpu / pip_cpu:9.3f}x"
        )
    ratios = []
    for ref, goal in (("pip list", GOAL_PIP), ("uv pip list", GOAL_UV)):
        wall = times["check --python, guarded"][0] / times[ref][0]
        cpu = times["check --python, guarded"][1] / times[ref][1]
        met = "met" if wall <= goal else "NOT met"
        ratios.append(f"{wall:.3f}x {ref} (cpu {cpu:.3f}x; goal <= {goal}x: {met})")
    print("guarded check: " + "; ".join(ratios))
    print(f"guarded check after every ctime changed: {_after_ctime_change(guarded, gcheck, env)}")
    print(f"heavy modules imported by the guarded check: {_heavy(gcheck, env) or 'none'}")
    return 0


def _version(cmd: list[str], env: dict[str, str] | None = None) -> str:
    out = subprocess.run(cmd, env=env, capture_output=True, text=True).stdout.strip()
    return out.splitlines()[0] if out else "?"


def _uv() -> str:
    from tests.support.cache import uv_binary

    return uv_binary()


def _guarded(env: dict[str, str]):
    """The same DAS-like env, guarded (`guard install`: baseline, layers, protected files)."""
    venv = das_venv(f"das150-pip{PIP}-guarded", pip_version=PIP)
    proc = subprocess.run(
        [*dtkguard_cmd(), "guard", "install", "--python", str(venv.python)],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    return venv


def _after_ctime_change(venv, cmd: list[str], env: dict[str, str]) -> str:
    """The first check after every file of site-packages got a new ctime (a hard link made and
    dropped, as a journal transaction does), and the one after it (the stat cache holds)."""
    import os
    import time

    for root, _, files in os.walk(venv.site_packages):
        for name in files:
            path = os.path.join(root, name)
            os.link(path, path + ".bench-link")
            os.unlink(path + ".bench-link")
    out = []
    for _ in range(2):
        start = time.perf_counter()
        code = subprocess.run(cmd, env=env, capture_output=True).returncode
        out.append(f"{(time.perf_counter() - start) * 1000:.0f} ms (exit {code})")
    return ", then ".join(out)


def _heavy(cmd: list[str], env: dict[str, str]) -> str:
    python = str(Path(cmd[0]).with_name("python"))  # the console script's own interpreter
    imports = subprocess.run(
        [python, "-X", "importtime", *cmd], env=env, capture_output=True, text=True
    ).stderr
    heavy = ("pydantic", "rich", "tomlkit", "pip_api", "resolvelib", "packaging.requirements")
    found = {
        line.split("|")[-1].strip()
        for line in imports.splitlines()
        if any(line.split("|")[-1].strip().startswith(m) for m in heavy)
    }
    return ", ".join(sorted(found))


if __name__ == "__main__":
    raise SystemExit(main())
