"""Benchmark the guard against plain pip, side by side in one run.

1. Interpreter start (``python -c pass``) in a venv with the pip hook installed against the same
   venv without it: the hook's .pth and meta-path finder must cost nothing measurable
   (goal: ratio <= 1.03).
2. ``import torch`` in the same two venvs, timed inside the interpreter: the guarded one runs
   the import tripwire (stat of the vendor RECORD and key files against the baseline; goal:
   added cost <= 1 ms).
3. ``dtkpip install torch`` (already satisfied: answered from the installed metadata, no pip
   run; goal: <= 1.0x) against ``pip install torch`` of the same venv.
4. ``dtkuv pip install torch`` (already satisfied: answered from the installed metadata, no uv
   run; goal: <= 2x CPU) against ``uv pip install torch`` of the same venv; then ``dtkuv pip
   install rich tomlkit`` (5 real wheels of the offline cache; goal: <= 2x) against ``uv pip
   install`` of the same (and against two floors of judging before uv runs: uv's dry run, then
   uv's real run; the same, then a Python process that stats the vendor files), and ``dtkpip
   install rich tomlkit`` against ``pip install`` of the same (``pipset``; goal: <= 1.1x: the
   hook pauses pip's one real run for dtkpip's verdict, no dry run before it).
5. Judging files: ``pip install`` of a wheel with ``--files`` files into the guarded venv (the
   hook lists the wheel and checks every file against the vendor builds' installed RECORDs,
   here a vendor torch of ``--vendor-files`` files) against the same install into the unguarded
   venv.
6. A real sdist build: ``pip install`` of a setuptools sdist under build isolation (pip builds
   its build environment, runs the PEP 517 backend, then installs) into both venvs: the hook
   records and compares (size, inode, ctime) of the protected set and the vendor files around
   the build.
7. Native code: ``pip install`` of a wheel holding ``--native-libs`` real shared objects of
   ``--native-mb`` MB in all (gcc-built, their bulk real machine code in a read-only section
   before ``.dynamic``, as in libtorch; deflated) into the unguarded venv, the guarded venv with
   its ELF reader (``_dtkguard_elf.py``: every ``.so`` member judged by what it links before pip
   unpacks) and the same guarded venv without it. The ELF judgement's added cost is the median
   over the rounds of the difference of the last two (adjacent in every round), as a share of
   plain pip's own install time (goal: <= 10 %). The judgement alone
   (in this process, stored and deflated copies of the wheel) is timed too.

``--smoke`` runs every step at its smallest size (CI checks the benchmark still runs).

Every pair is measured the same way: one untimed warm-up of each side (byte code, page cache,
pip's and uv's caches; the venvs' pip is installed without byte code), then rounds that
alternate which side runs first; medians of wall time and of CPU time (the process and the
children it waited for). dtkpip and dtkuv run as users run them: the ``dtkguard`` console
script beside this interpreter when it runs this checkout, else ``python -m dtkguard``.

Run (needs the offline wheel cache of ``python tests/prepare.py``)::

    PYTHONPATH=. python benchmarks/bench_guard.py [--runs 200] [--pip-runs 5] [--native-mb 300]
        [--native-libs 1]
        [--only start|satisfied|uv|pipset|files|sdist|native ...]
    PYTHONPATH=. python benchmarks/bench_guard.py --smoke     # smallest sizes, one round
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.cache import PIP_VERSIONS, uv_binary, wheel_dir  # noqa: E402
from tests.support.reports import DAS_25041, das_25041_packages, make_wheelhouse  # noqa: E402
from tests.support.venvs import hermetic_env, make_venv  # noqa: E402
from tests.support.wheels import build_sdist, build_wheel  # noqa: E402


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
    """How users run dtkguard: the console script of a venv with this checkout installed from
    its wheel (`benchmarks._common.dtkguard_cmd`), without ``PYTHONPATH``; dtkuv is told the
    uv binary the uv rows run (a user's is on PATH)."""
    from benchmarks._common import dtkguard_cmd

    denv = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    return dtkguard_cmd(), {**denv, "DTKGUARD_UV": uv_binary()}


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


def native_wheel(base: Path, mb: int, libs: int = 1) -> Path:
    """A wheel holding ``libs`` shared objects of about ``mb`` MB in all, each linking the DTK
    HIP runtime."""
    from tests.support.elf import GALAXYHIP, build_large_shared

    files: dict[str, bytes | str] = {"big_native/__init__.py": ""}
    for i in range(libs):
        so = build_large_shared(base / "native-so" / f"libbig{i}.so", (mb << 20) // libs,
                                (GALAXYHIP,))  # fmt: skip
        files[f"big_native/lib/libbig{i}.so"] = so.read_bytes()
        so.unlink()
    return build_wheel(base / "native", "big-native", "1.0", tag="py3-none-linux_x86_64",
                       files=files)  # fmt: skip


def _stored(wheel: Path, dest: Path) -> Path:
    import zipfile

    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(dest / wheel.name, "w") as out:
        for info in src.infolist():
            copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            out.writestr(copy, src.read(info), compress_type=zipfile.ZIP_STORED)
    return dest / wheel.name


def judge_alone(wheels: dict[str, Path], runs: int) -> None:
    """The ELF judgement of a wheel's members in this process (what the hook adds)."""
    import zipfile

    from dtkguard.elf import wheel_linkages

    for kind, wheel in wheels.items():
        times = []
        for _ in range(max(runs, 3)):
            start = time.perf_counter()
            with zipfile.ZipFile(wheel) as zf:
                found = wheel_linkages(zf)
            times.append((time.perf_counter() - start) * 1000)
        exact = all(link is not None and link.exact for _, link, _ in found)
        print(
            f"  judge {kind:8} {wheel.stat().st_size / 1e6:7.1f} MB wheel   "
            f"{statistics.median(times):8.2f} ms   ({'DT_NEEDED' if exact else 'head names'})"
        )


def bench_native(base: Path, plain: Path, guarded: Path, env: dict[str, str], args) -> None:
    """Section 6: pip install of a large native wheel: plain, guarded, guarded without ELF."""
    wheel = native_wheel(base, args.native_mb, args.native_libs)
    elf_copy = next(guarded.parent.parent.glob("lib/python3*/site-packages/_dtkguard_elf.py"))
    aside = elf_copy.with_suffix(".aside")
    install = ["-m", "pip", "install", "--no-deps", "--no-index", "--no-compile", str(wheel)]
    sides: dict[str, list[float]] = {"pip": [], "guarded": [], "no-elf": []}
    for i in range(args.pip_runs):
        order = ["pip", "guarded", "no-elf"] if i % 2 == 0 else ["no-elf", "guarded", "pip"]
        for side in order:
            python = plain if side == "pip" else guarded
            if side == "no-elf":
                elf_copy.rename(aside)
            try:
                sides[side].append(_run([str(python), *install], env)[0])
            finally:
                if side == "no-elf":
                    aside.rename(elf_copy)
            subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "big-native"],
                           env=env, check=True, capture_output=True)  # fmt: skip
    m = {k: statistics.median(v) for k, v in sides.items()}
    # the two guarded runs of a round are adjacent: their difference is the judgement's cost
    # with the machine's load of that moment in both, and its median is robust to a slow round
    rounds = zip(sides["guarded"], sides["no-elf"], strict=True)
    added = statistics.median(g - n for g, n in rounds)
    print(
        f"install a {wheel.stat().st_size / 1e6:.0f} MB wheel ({args.native_mb} MB of .so in "
        f"{args.native_libs})   "
        f"pip {m['pip']:8.1f} ms   guarded {m['guarded']:8.1f} ms   "
        f"guarded without ELF {m['no-elf']:8.1f} ms   (wall, median of {args.pip_runs})"
    )
    print(
        f"  ELF judgement adds {added:+.1f} ms (median of the rounds' guarded minus guarded "
        f"without ELF) = {100 * added / m['pip']:+.1f} % of pip's own install time "
        f"(budget 10 %); load average {os.getloadavg()[0]:.2f}"
    )
    judge_alone({"deflated": wheel, "stored": _stored(wheel, base / "stored")}, args.pip_runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="python -c pass runs per side")
    parser.add_argument("--pip-runs", type=int, default=5, help="pip/dtkpip runs per side")
    parser.add_argument("--files", type=int, default=2000, help="files of the judged wheel")
    parser.add_argument("--vendor-files", type=int, default=10000, help="files of vendor torch")
    parser.add_argument("--native-mb", type=int, default=300, help="size of the native .so")
    parser.add_argument("--native-libs", type=int, default=1, help="split it into this many")
    parser.add_argument("--smoke", action="store_true", help="smallest sizes: does it still run?")
    parser.add_argument(
        "--only",
        action="append",
        choices=STEPS,
        help="run only these steps (repeatable; default: all)",
    )
    args = parser.parse_args()
    want = set(args.only or STEPS)
    if args.smoke:
        args.runs, args.pip_runs, args.files, args.vendor_files = 3, 1, 20, 50
        args.native_mb = 4
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
        if "start" in want:
            start = [str(plain.python), "-c", "pass"], [str(guarded.python), "-c", "pass"]
            medians = pair((start[0], env), (start[1], env), args.runs)
            show("python -c pass", ("plain", "hooked"), medians, args.runs)
            bench_import(plain.python, guarded.python, env, args.runs)
        req = ["install", "--no-index", "-f", str(vendor), "--no-deps", "torch"]
        if "satisfied" in want:
            pip_cmd = [str(guarded.python), "-m", "pip", *req]
            dtkpip_cmd = [*dtk, "pip", "--python", str(guarded.python), *req]
            medians = pair((pip_cmd, env), (dtkpip_cmd, denv), args.pip_runs)
            show("install torch (satisfied)", ("pip", "dtkpip"), medians, args.pip_runs)
        uenv = {**env, "UV_CACHE_DIR": str(base / "uv-cache")}
        if "uv" in want:
            ureq = ["pip", "install", "--python", str(guarded.python), *req[1:]]
            uv_cmds = ([uv_binary(), *ureq], uenv), ([*dtk, "uv", *ureq], {**denv, **uenv})
            medians = pair(*uv_cmds, args.pip_runs)
            show("install torch (satisfied)", ("uv", "dtkuv"), medians, args.pip_runs)
            uv_set_pair(guarded.python, guarded.site_packages, dtk, denv, uenv, args.pip_runs)
        if "pipset" in want:
            pip_set_pair(guarded.python, dtk, denv, env, args.pip_runs)
        if "files" in want:
            install = ["-m", "pip", "install", "--no-deps", "--no-index", "--no-compile"]
            label = f"install a wheel of {args.files} files beside a torch of {args.vendor_files}"
            install_pair(
                label, (plain, guarded), [*install, str(judged)], "many-files", env, args.pip_runs
            )
        if "sdist" in want:
            sdist = build_sdist(base / "sdist", "tiny-sdist", "1.0")
            build = ["-m", "pip", "install", "--no-deps", "--no-index", "-f", str(wheel_dir())]
            build += ["--no-compile", "--no-cache-dir", str(sdist)]
            install_pair(
                "build and install a setuptools sdist",
                (plain, guarded),
                build,
                "tiny-sdist",
                env,
                args.pip_runs,
            )
        if "native" in want:
            bench_native(base, plain.python, guarded.python, env, args)
    return 0


#: the steps ``--only`` picks (numbered as in the module's docstring; ``pipset``: step 4's
#: five real wheels through ``dtkpip`` against plain pip)
STEPS = ("start", "satisfied", "uv", "pipset", "files", "sdist", "native")

#: a small real set from the offline cache: rich (markdown-it-py, mdurl, pygments), tomlkit
UV_SET = ("rich", "tomlkit")
UV_SET_ALL = (*UV_SET, "markdown-it-py", "mdurl", "pygments")


#: the least a guard written in Python does after uv ran, when uv may have run an sdist's build
#: (its dry run builds too): start an interpreter and ``lstat`` every file the vendor builds'
#: RECORDs list (a build may have written any of them, through any hard link); no listing, no
#: comparison, no verdict; each folder's files by name relative to it, as dtkuv does. argv[1]:
#: the site folder.
_WATCH_FLOOR = (
    "import os, sys\n"
    "site, by = sys.argv[1], {}\n"
    "for entry in os.listdir(site):\n"
    "    if entry.startswith('torch-') and entry.endswith('.dist-info'):\n"
    "        with open(os.path.join(site, entry, 'RECORD'), encoding='utf-8') as fh:\n"
    "            for row in filter(str.strip, fh):\n"
    "                folder, _, name = row.split(',', 1)[0].rpartition('/')\n"
    "                by.setdefault(folder, []).append(name)\n"
    "flags = os.O_RDONLY | os.O_DIRECTORY | os.O_PATH\n"
    "for folder, names in by.items():\n"
    "    fd = os.open(os.path.join(site, folder), flags)\n"
    "    for name in names:\n"
    "        os.lstat(name, dir_fd=fd)\n"
    "    os.close(fd)\n"
)


def uv_set_pair(python, site, dtk, denv, uenv, runs) -> None:
    """``uv pip install`` of `UV_SET` (5 real wheels) against ``dtkuv pip install`` of it into
    the guarded venv, alternating which goes first, each followed by an untimed uninstall. Two
    more sides in the same rounds are floors of any guard that judges before uv changes
    anything: uv's ``--dry-run`` of the same command, then uv's real run, timed as one; and
    the same with a Python process after it that stats the vendor torch's files
    (`_WATCH_FLOOR`: what no guard that lets uv build can leave out)."""
    uv = uv_binary()
    req = ["pip", "install", "--python", str(python), "--no-index"]
    req += ["-f", str(wheel_dir() / "image"), *UV_SET]
    sides = (([uv, *req], uenv), ([*dtk, "uv", *req], {**denv, **uenv}))
    dry = [uv, *req, "--dry-run"]
    watch = [sys.executable, "-I", "-S", "-c", _WATCH_FLOOR, str(site)]
    remove = [uv, "pip", "uninstall", "--python", str(python), *UV_SET_ALL]
    times: dict[int, list[tuple[float, float]]] = {0: [], 1: [], 2: [], 3: []}
    for i in range(runs + 1):
        for side in (0, 1, 2, 3) if i % 2 == 0 else (3, 2, 1, 0):
            if side >= 2:
                parts = [_run(dry, uenv), _run(*sides[0])]
                if side == 3:
                    parts.append(_run(watch, uenv))
                took = (sum(w for w, _ in parts), sum(c for _, c in parts))
            else:
                took = _run(*sides[side])
            done = subprocess.run(remove, env=uenv, capture_output=True, text=True)
            if "Uninstalled 5 packages" not in done.stderr:  # a refusal is no measurement
                raise SystemExit(f"uv set: not installed by side {side}: {done.stderr}")
            if i:  # the first round is the warm-up
                times[side].append(took)
    medians = {
        s: (statistics.median(w for w, _ in times[s]), statistics.median(c for _, c in times[s]))
        for s in times
    }
    label = f"install {len(UV_SET_ALL)} real wheels"
    show(label, ("uv", "dtkuv"), (medians[0], medians[1]), runs)
    show(label, ("uv", "uv dry run + uv"), (medians[0], medians[2]), runs)
    show(label, ("uv dry run + uv", "dtkuv"), (medians[2], medians[1]), runs)
    show(label, ("uv", "uv dry run + uv + watch"), (medians[0], medians[3]), runs)
    show(label, ("uv dry run + uv + watch", "dtkuv"), (medians[3], medians[1]), runs)


def pip_set_pair(python, dtk, denv, env, runs) -> None:
    """``pip install`` of `UV_SET` (5 real wheels) against ``dtkpip install`` of it into the
    guarded venv, alternating which goes first, each followed by an untimed uninstall."""
    req = ["install", "--no-index", "-f", str(wheel_dir() / "image"), *UV_SET]
    sides = (
        ([str(python), "-m", "pip", *req], env),
        ([*dtk, "pip", "--python", str(python), *req], denv),
    )
    remove = [str(python), "-m", "pip", "uninstall", "-y", *UV_SET_ALL]
    times: dict[int, list[tuple[float, float]]] = {0: [], 1: []}
    for i in range(runs + 1):
        for side in (0, 1) if i % 2 == 0 else (1, 0):
            took = _run(*sides[side])
            done = subprocess.run(remove, env=env, capture_output=True, text=True)
            if done.stdout.count("Successfully uninstalled") != len(UV_SET_ALL):
                raise SystemExit(f"pip set: not installed by side {side}: {done.stdout}")
            if i:  # the first round is the warm-up
                times[side].append(took)
    medians = tuple(
        (statistics.median(w for w, _ in times[s]), statistics.median(c for _, c in times[s]))
        for s in (0, 1)
    )
    show(f"install {len(UV_SET_ALL)} real wheels", ("pip", "dtkpip"), medians, runs)


def install_pair(label, venvs, install, name, env, runs) -> None:
    """Install with ``install`` (then uninstall ``name``) in the plain and the guarded venv,
    alternating which goes first; print the medians of wall and CPU time and their ratios."""
    times: dict[int, list[tuple[float, float]]] = {0: [], 1: []}
    for i in range(runs + 1):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for side in order:
            took = _run([str(venvs[side].python), *install], env)
            dist = name.replace("-", "_") + "-*.dist-info"
            if not any(venvs[side].site_packages.glob(dist)):  # a refusal is no measurement
                raise SystemExit(f"{label}: {name} was not installed into {venvs[side].path}")
            venvs[side].pip("uninstall", "-y", name)
            if i:  # the first round is the warm-up
                times[side].append(took)
    wall = [statistics.median(t[0] for t in times[s]) for s in (0, 1)]
    cpu = [statistics.median(t[1] for t in times[s]) for s in (0, 1)]
    print(
        f"{label}   pip {wall[0]:7.1f} ms   hooked pip {wall[1]:7.1f} ms   ratio "
        f"{wall[1] / wall[0]:.3f}   (cpu {cpu[0]:.1f} / {cpu[1]:.1f} ms, ratio "
        f"{cpu[1] / cpu[0]:.3f}; {runs} runs)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
