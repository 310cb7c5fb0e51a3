"""Shared helpers of the benchmarks: the ~150-dist DAS-like venv, timing, ratio tables."""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
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
    from tests.support.venvs import _venv_paths

    path = CACHE / name
    with one_builder(path) as build:
        if build:
            _build_das_venv(path, pip_version)
    return _venv_paths(path)


def _build_das_venv(path: Path, pip_version: str | None) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    house = CACHE / f"{path.name}-wheels"
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
    (path / ".complete").write_text("ok\n")


@contextlib.contextmanager
def one_builder(path: Path) -> Iterator[bool]:
    """Held while the cached folder ``path`` is checked and built; says whether it must be
    built (no ``.complete`` in it). Benchmarks that run side by side (the suite's smoke runs,
    ``pytest -n auto``) would otherwise build the same folder into each other."""
    import fcntl

    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield not (path / ".complete").exists()


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


#: what goes into dtkguard's wheel (pyproject's packages, package dirs and readme): the digest
#: of these names the user venv, so any change to them builds a new one
_WHEEL_INPUTS = ("dtkguard", "policies", "plugins", "scripts", "pyproject.toml", "README.md")


def dtkguard_cmd(tree: Path = REPO) -> list[str]:
    """``dtkguard`` as a user runs it: the console script of a venv where the checkout ``tree``
    is installed from its built wheel (not editable) beside its dependencies. Run it with
    `bench_env` (no ``PYTHONPATH``: the checkout must not shadow the installed package)."""
    return [str(user_venv(tree) / "bin" / "dtkguard")]


def tree_digest(tree: Path) -> str:
    """sha256 over the relative paths and bytes of the wheel's inputs of ``tree``."""
    import hashlib

    digest = hashlib.sha256()
    for name in _WHEEL_INPUTS:
        top = tree / name
        files = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for path in files:
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(str(path.relative_to(tree)).encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


_USER_VENVS: dict[Path, Path] = {}


def user_venv(tree: Path = REPO) -> Path:
    """The venv of `dtkguard_cmd` for ``tree``: built once under ``.cache/bench/user-DIGEST``
    (rebuilt when the wheel's inputs change), offline: the wheel by ``pip wheel --no-deps
    --no-build-isolation`` from a copy of the inputs, installed by the venv's own pip
    (``--no-deps --no-index``, byte-compiled as pip does), its dependencies copied file by file
    from their installed RECORDs in this interpreter (the wheel cache holds no copy of them),
    then byte-compiled."""
    tree = tree.resolve()
    if tree in _USER_VENVS:
        return _USER_VENVS[tree]
    path = CACHE / f"user-{tree_digest(tree)}"
    with one_builder(path) as build:
        if build:
            import shutil
            import tempfile

            shutil.rmtree(path, ignore_errors=True)
            venv = make_venv(path)
            with tempfile.TemporaryDirectory() as tmp:
                wheel = _build_wheel(tree, Path(tmp))
                venv.pip("install", "--no-deps", "--no-index", str(wheel))
            _copy_dependencies(venv.site_packages)
            (path / ".complete").write_text(f"{tree}\n")
            _prune_user_venvs(keep=3)
        (path / ".complete").touch()
    _USER_VENVS[tree] = path
    return path


def _prune_user_venvs(keep: int) -> None:
    """Remove all but the ``keep`` user venvs used last (each source change builds one)."""
    import shutil

    done = sorted(CACHE.glob("user-*/.complete"), key=lambda m: m.stat().st_mtime, reverse=True)
    for marker in done[keep:]:
        shutil.rmtree(marker.parent, ignore_errors=True)


def _build_wheel(tree: Path, tmp: Path) -> Path:
    import shutil

    src = tmp / "src"
    for name in _WHEEL_INPUTS:
        if (tree / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(tree / name, src / name, ignore=ignore)
        elif (tree / name).is_file():
            src.mkdir(exist_ok=True)
            shutil.copy2(tree / name, src / name)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    cmd += ["--no-index", "-q", "-w", str(tmp / "dist"), str(src)]
    subprocess.run(cmd, env=hermetic_env(), check=True, stdout=subprocess.DEVNULL)
    return next((tmp / "dist").glob("dtkguard-*.whl"))


def _copy_dependencies(site: Path) -> None:
    """Copy dtkguard's runtime dependency closure, as installed here, into ``site``."""
    import compileall
    import importlib.metadata as md
    import shutil

    from packaging.requirements import Requirement

    own = md.Distribution.at(next(site.glob("dtkguard-*.dist-info")))
    todo, seen = list(own.requires or []), {"dtkguard"}
    while todo:
        req = Requirement(todo.pop())
        key = req.name.lower().replace("_", "-")
        if key in seen or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(key)
        dist = md.distribution(req.name)
        todo += dist.requires or []
        for file in dist.files or []:
            if file.parts[0] == ".." or "__pycache__" in file.parts:
                continue  # console scripts of the dependencies; byte code is compiled below
            (site / file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(dist.locate_file(file), site / file)
    compileall.compile_dir(site, quiet=1, workers=0)


def bench_env() -> dict[str, str]:
    env = hermetic_env(NO_COLOR="1")
    env["DTKGUARD_CACHE_DIR"] = str(CACHE / "dtkguard-cache")
    # the guard's store of the benchmark envs (never /var/lib/dtkguard of a root run)
    env["DTKGUARD_STORE"] = str(CACHE / "store")
    return env
