"""Benchmark the guard against plain pip, side by side in one run.

1. Interpreter start (``python -c pass``) in a venv with the pip hook installed against the same
   venv without it: the hook's .pth and meta-path finder must cost nothing measurable
   (goal: ratio <= 1.03).
2. ``import torch`` in the same two venvs, timed inside the interpreter: the guarded one runs
   the import tripwire (stat of the vendor RECORD and key files against the baseline; goal:
   added cost <= 1 ms).
3. ``dtkpip install torch`` (already satisfied: one dry run, no second pip) against
   ``pip install torch`` of the same venv.
4. ``dtkuv pip install torch`` (already satisfied: one uv dry run, no second uv) against
   ``uv pip install torch`` of the same venv.
5. Judging files: ``pip install`` of a wheel with ``--files`` files into the guarded venv (the
   hook lists the wheel and checks every file against the vendor builds' installed RECORDs,
   here a vendor torch of ``--vendor-files`` files) against the same install into the unguarded
   venv.

Every pair is measured the same way: one untimed warm-up of each side (byte code, page cache,
pip's and uv's caches; the venvs' pip is installed without byte code), then rounds that
alternate which side runs first; medians of wall time and of CPU time (the process and the
children it waited for). dtkpip and dtkuv run as users run them: the ``dtkguard`` console
script beside this interpreter when it runs this checkout, else ``python -m dtkguard``.

Run (needs the offline wheel cache of ``python tests/prepare.py``)::

    PYTHONPATH=. python benchmarks/bench_guard.py [--runs 200] [--pip-runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.cache import PIP_VERSIONS, uv_binary  # noqa: E402
from tests.support.reports import DAS_25041, das_25041_packages, make_wheelhouse  # noqa: E402
from tests.support.venvs import hermetic_env, make_venv  # noqa: E402
from tests.support.wheels import build_wheel  # noqa: E402


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one run; CPU is user + system time of the process and of every
    child it waited for (dtkpip's pip, dtkuv's uv): steadier than wall time on a shared
    machine."""
    import os

    with open(os.devnull, "wb") as null:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=null, stderr=null)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = (time.perf_counter() - start) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def pair(
    a: tuple[list[str], dict[str, str]], b: tuple[list[str], dict[str, str]], runs: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Median (wall, CPU) ms of ``a`` and of ``b``: one untimed warm-up each (byte code, page
    cache, pip's and uv's caches), then ``runs`` rounds that alternate which side goes first,
    so that both sides share the machine's noise."""
    _run(*a)
    _run(*b)
    out: tuple[list, list] = ([], [])
    for i in range(runs):
        for side in (0, 1) if i % 2 == 0 else (1, 0):
            out[side].append(_run(*(a, b)[side]))
    return tuple(  # type: ignore[return-value]
        (statistics.median(w for w, _ in side), statistics.median(c for _, c in side))
        for side in out
    )


def show(label: str, names: tuple[str, str], medians, runs: int) -> None:
    """One line of wall times and one of CPU times, each with b/a."""
    (aw, ac), (bw, bc) = medians
    width = max(len(n) for n in names)
    print(
        f"{label}   {names[0]:>{width}} {aw:8.2f} ms   {names[1]:>{width}} {bw:8.2f} ms   "
        f"ratio {bw / aw:.3f}   (wall, median of {runs})"
    )
    pad = " " * len(label)
    print(
        f"{pad}   {names[0]:>{width}} {ac:8.2f} ms   {names[1]:>{width}} {bc:8.2f} ms   "
        f"ratio {bc / ac:.3f}   (CPU)"
    )


def dtkguard_command(env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """How users run dtkguard: its console script beside this interpreter when that runs this
    checkout (an editable install), else ``python -m dtkguard`` with the checkout on
    ``PYTHONPATH`` (which then also reaches the pip that dtkpip runs)."""
    import importlib.util

    spec = importlib.util.find_spec("dtkguard")
    script = Path(sys.executable).with_name("dtkguard")
    origin = Path(spec.origin).resolve() if spec and spec.origin else None
    if script.exists() and origin is not None and REPO in origin.parents:
        return [str(script)], env
    return [sys.executable, "-m", "dtkguard"], {**env, "PYTHONPATH": str(REPO)}


_IMPORT = "import time;t=time.perf_counter_ns();import torch;print((time.perf_counter_ns()-t)/1e6)"


def import_ms(python: Path, env: dict[str, str], runs: int) -> list[float]:
    """``import torch`` times (ms) measured inside ``runs`` fresh interpreters."""
    return [
        float(
            subprocess.run(
                [str(python), "-c", _IMPORT], env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(runs)
    ]


def bench_import(plain: Path, guarded: Path, env: dict[str, str], runs: int) -> None:
    a, b = [], []
    for _ in range(runs):  # alternate, as for start-up
        a += import_ms(plain, env, 1)
        b += import_ms(guarded, env, 1)
    a_ms, b_ms = statistics.median(a), statistics.median(b)
    print(
        f"import torch     plain {a_ms:7.3f} ms   tripwire {b_ms:7.3f} ms   "
        f"added {b_ms - a_ms:+.3f} ms   ratio {b_ms / a_ms:.2f}   (median of {runs})"
    )
    # the tripwire alone, as `import torch` runs it first: import the module, read
    # tripwire.txt, stat the files, look the module up on sys.path
    code = (
        "import sys,time;f=[f for f in sys.meta_path if getattr(f,'_dtkguard',0)][0];"
        "t=time.perf_counter_ns();f.find_spec('torch');print((time.perf_counter_ns()-t)/1e6)"
    )
    alone = [
        float(
            subprocess.run(
                [str(guarded), "-c", code], env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(runs)
    ]
    print(f"  tripwire alone {statistics.median(alone):7.3f} ms   (budget 1 ms, median of {runs})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="python -c pass runs per side")
    parser.add_argument("--pip-runs", type=int, default=5, help="pip/dtkpip runs per side")
    parser.add_argument("--files", type=int, default=2000, help="files of the judged wheel")
    parser.add_argument("--vendor-files", type=int, default=10000, help="files of vendor torch")
    parser.add_argument("--smoke", action="store_true", help="smallest sizes: does it still run?")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.pip_runs, args.files, args.vendor_files = 3, 1, 20, 50
    env = hermetic_env()
    with tempfile.TemporaryDirectory(prefix="bench-guard-") as tmp:
        base = Path(tmp)
        vendor = base / "vendor"
        make_wheelhouse(vendor, [p for p in das_25041_packages() if p.key in ("torch",)])
        big_torch = build_wheel(
            base / "big",
            "torch",
            DAS_25041["torch"],
            files={
                "torch/__init__.py": "",
                "torch/version.py": "cuda = None\nhip = '6.3'\n",
                **{f"torch/part{i // 100}/m{i}.py": f"x = {i}\n" for i in range(args.vendor_files)},
            },
        )
        judged = build_wheel(
            base / "judged",
            "many-files",
            "1.0",
            files={f"many_files/sub{i // 100}/m{i}.py": f"y = {i}\n" for i in range(args.files)},
        )
        plain = make_venv(base / "plain", pip_version=PIP_VERSIONS[-1])
        guarded = make_venv(base / "guarded", pip_version=PIP_VERSIONS[-1])
        for venv in (plain, guarded):  # a vendor torch with a RECORD of --vendor-files rows
            venv.pip("install", "--no-index", "--no-deps", str(big_torch))
        state = {"XDG_STATE_HOME": str(base / "state")}  # the benchmark's own registry
        dtk, denv = dtkguard_command({**env, **state})
        subprocess.run(
            [*dtk, "guard", "install", "--python", str(guarded.python)],
            env=denv,
            check=True,
            capture_output=True,
        )
        start = [str(plain.python), "-c", "pass"], [str(guarded.python), "-c", "pass"]
        medians = pair((start[0], env), (start[1], env), args.runs)
        show("python -c pass", ("plain", "hooked"), medians, args.runs)
        bench_import(plain.python, guarded.python, env, args.runs)
        req = ["install", "--no-index", "-f", str(vendor), "--no-deps", "torch"]
        pip_cmd = [str(guarded.python), "-m", "pip", *req]
        dtkpip_cmd = [*dtk, "pip", "--python", str(guarded.python), *req]
        medians = pair((pip_cmd, env), (dtkpip_cmd, denv), args.pip_runs)
        show("install torch (satisfied)", ("pip", "dtkpip"), medians, args.pip_runs)
        uenv = {**env, "UV_CACHE_DIR": str(base / "uv-cache")}
        ureq = ["pip", "install", "--python", str(guarded.python), *req[1:]]
        medians = pair(
            ([uv_binary(), *ureq], uenv), ([*dtk, "uv", *ureq], {**denv, **uenv}), args.pip_runs
        )
        show("install torch (satisfied)", ("uv", "dtkuv"), medians, args.pip_runs)
        install = ["-m", "pip", "install", "--no-deps", "--no-index", "--no-compile", str(judged)]
        a, b = [], []
        for _ in range(args.pip_runs):
            for venv, out in ((plain, a), (guarded, b)):
                out.append(_run([str(venv.python), *install], env)[0])
                venv.pip("uninstall", "-y", "many-files")
        a_ms, b_ms = statistics.median(a), statistics.median(b)
        print(
            f"install a wheel of {args.files} files beside a torch of {args.vendor_files}   "
            f"pip {a_ms:7.1f} ms   hooked pip {b_ms:7.1f} ms   ratio {b_ms / a_ms:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
