"""Benchmark: dtkguard lock vs pip 26.3 vs uv on the same inputs, side by side, cold and warm.

    PYTHONPATH=. python benchmarks/bench_lock.py              # every scenario, 3 runs each
    PYTHONPATH=. python benchmarks/bench_lock.py --smoke      # smallest: packse-like cases, 1 run
    PYTHONPATH=. python benchmarks/bench_lock.py --only yanked-pin --runs 5

Scenarios, each on a local index on 127.0.0.1 served by ``tests/support/index.py``:

- packse-like cases built here (tiny wheels and sdists; target: the interpreter running the
  benchmark, ``manylinux_2_17_x86_64``): ``yanked-pin`` (an exactly pinned yanked release),
  ``requires-python`` (newer releases need a later Python), ``wheel-tags`` (newer releases only
  for macOS), ``backtrack`` (the newest candidates must be given up), ``extras``,
  ``prerelease`` (only a pre-release satisfies), ``local-version`` (``+das`` labels),
  ``sdist-static`` (an sdist with PEP 643 static metadata), ``unsat-chain`` (refused, exit 1);
- ``vllm-index`` / ``vllm-find-links``: the vendor vLLM 0.8.5 closure (141 packages, Python 3.10,
  manylinux_2_35) from a PEP 691/658 index and from two folders (not in ``--smoke``);
  ``vllm-index-etag``: the same index sending an ``ETag`` with each project page and answering
  ``If-None-Match`` with 304, as real indexes do (no ``Cache-Control``: every warm run must
  still ask);
- ``pyrax-index``: the unsatisfiable ``pyrax==1.9.8`` on resolvelib's 2020-02-15 PyPI snapshot
  (not in ``--smoke``);
- ``big-wheel``: one 300 MiB wheel (16 MiB with ``--smoke``) on an index without PEP 658 files:
  the peak RSS of each tool is the figure (issue 25's budget for dtkguard: 100 MB).

Each run is cold (empty cache folder) then warm (the same folder again); the tables give the
median of ``--runs`` runs per tool and phase, and the ratios of medians dtkguard/uv and
dtkguard/pip. uv always gets ``--python`` with the real interpreter of the pip venv (it never
looks for interpreters on PATH or in pyenv shims); dtkguard runs as ``_common.dtkguard_cmd``
says; the versions of Python, pip and uv that ran are printed first.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._common import dtkguard_cmd  # noqa: E402
from tests.support.cache import uv_binary  # noqa: E402
from tests.support.index import serve_index  # noqa: E402
from tests.support.rss import measure  # noqa: E402
from tests.support.venvs import hermetic_env, make_venv  # noqa: E402
from tests.support.wheels import build_big_wheel, build_sdist, build_wheel  # noqa: E402

VLLM = "vllm==0.8.5.post1+das.opt1.dtk25041"
PLATFORM = "manylinux_2_17_x86_64"
HERE = f"{sys.version_info.major}.{sys.version_info.minor}"


@dataclass
class Scenario:
    name: str
    requests: list[str]
    folder: Path
    expect: int = 0
    target: str = "here"  # "here": this interpreter; "das": Python 3.10 manylinux_2_35
    index: dict = field(default_factory=dict)  # serve_index options
    #: find-links scenarios: (vendor folder, public folder)
    folders: tuple[Path, Path] | None = None
    smoke: bool = True


def _yanked(w: Path) -> None:
    for v in ("1.0.0", "1.1.0"):
        build_wheel(w, "bee", v)


def _requires_python(w: Path) -> None:
    build_wheel(w, "new", "1.0")
    for v in ("2.0", "2.1"):
        build_wheel(w, "new", v, requires_python=">=3.99")


def _wheel_tags(w: Path) -> None:
    build_wheel(w, "tagged", "1.0", tag=f"cp{HERE.replace('.', '')}-none-{PLATFORM}")
    build_wheel(w, "tagged", "2.0", tag="cp312-cp312-macosx_11_0_arm64")


def _backtrack(w: Path) -> None:
    build_wheel(w, "a", "3.0", requires_dist=["b==1.0"])
    build_wheel(w, "a", "2.0", requires_dist=["b==1.0", "c<1"])
    build_wheel(w, "a", "1.0", requires_dist=["b>=1", "c>=1"])
    build_wheel(w, "x", "1.0", requires_dist=["y"])
    build_wheel(w, "y", "1.0", requires_dist=["b>=2"])
    for v in ("1.0", "2.0"):
        build_wheel(w, "b", v)
    for v in ("0.5", "1.5"):
        build_wheel(w, "c", v)


def _extras(w: Path) -> None:
    build_wheel(w, "ex", "1.0", requires_dist=["dep; extra == 'x'"], provides_extra=["x"])
    build_wheel(w, "dep", "1.0")


def _prerelease(w: Path) -> None:
    build_wheel(w, "pre", "1.0")
    build_wheel(w, "pre", "2.0b1")


def _local(w: Path) -> None:
    for v in ("2.4.1", "2.4.1+das.opt1.dtk25041"):
        build_wheel(w, "tor", v)


def _sdist(w: Path) -> None:
    from tests.support.cache import find_wheel

    build_sdist(w, "src", "1.0", requires_dist=["dep"], metadata_version="2.2")
    build_wheel(w, "dep", "1.0")
    for name in ("setuptools", "wheel"):  # pip and uv build it even so
        shutil.copy(find_wheel(name), w)


def _unsat(w: Path) -> None:
    build_wheel(w, "top", "1.0", requires_dist=["mid>=1"])
    build_wheel(w, "mid", "1.0", requires_dist=["low>=2"])
    for v in ("1.0", "2.0"):
        build_wheel(w, "low", v)


#: (name, requirements, builder of its folder, expected exit code, serve_index options)
_PACKSE = (
    (
        "yanked-pin",
        ["bee==1.0.0"],
        _yanked,
        0,
        {"yanked": {"bee-1.0.0-py3-none-any.whl": "broken"}},
    ),
    ("requires-python", ["new"], _requires_python, 0, {}),
    ("wheel-tags", ["tagged"], _wheel_tags, 0, {}),
    ("backtrack", ["a", "x"], _backtrack, 0, {}),
    ("extras", ["ex[x]"], _extras, 0, {}),
    ("prerelease", ["pre>1.0"], _prerelease, 0, {}),
    ("local-version", ["tor==2.4.1+das.opt1.dtk25041"], _local, 0, {}),
    ("sdist-static", ["src"], _sdist, 0, {}),
    ("unsat-chain", ["top", "low<2"], _unsat, 1, {}),
)


def _packse(base: Path) -> list[Scenario]:
    """Small cases in the spirit of uv's packse scenarios, built as real wheels and sdists."""
    out = []
    for name, reqs, build, expect, index in _PACKSE:
        folder = base / name
        build(folder)
        out.append(Scenario(name, list(reqs), folder, expect, index=dict(index)))
    return out


def _das(base: Path) -> list[Scenario]:
    from tests.support.das_image import build_community, build_vendor
    from tests.support.snapshots import snapshot_wheelhouse

    community, vendor, both = base / "community", base / "vendor", base / "both"
    build_community(community, ("vllm085",))
    build_vendor(vendor)
    shutil.copytree(community, both)
    for wheel in vendor.iterdir():
        shutil.copy(wheel, both / wheel.name)
    pyrax = snapshot_wheelhouse("pypi-2020-02-15-pyrax", base / "pyrax")
    return [
        Scenario("vllm-index", [VLLM], both, target="das", smoke=False),
        Scenario(
            "vllm-index-etag", [VLLM], both, target="das", smoke=False, index={"validators": True}
        ),
        Scenario(
            "vllm-find-links", [VLLM], both, target="das", folders=(vendor, community), smoke=False
        ),
        Scenario("pyrax-index", ["pyrax==1.9.8"], pyrax, expect=1, target="das", smoke=False),
    ]


class Tools:
    """The anchors, pinned: pip 26.3 in its own venv; uv told which interpreter to use."""

    def __init__(self, base: Path) -> None:
        from dtkguard.policy.load import load_policy
        from dtkguard.resolve.target import expand_platform
        from dtkguard.rules.catalog import is_known

        self.pip = make_venv(base / "pipvenv", pip_version="26.3").python
        self.uv = uv_binary()
        self.policy = load_policy("dtk-25.04.1", known_rule=is_known)
        self.das_platforms = [a for t in expand_platform("manylinux_2_35_x86_64")
                              for a in ("--platform", t)]  # fmt: skip
        (base / "vendor.txt").write_text(
            "".join(f"{n}=={v}\n" for n, v in sorted(self.policy.vendor.items()))
        )

    def versions(self) -> str:
        def out(cmd):
            return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()

        py = out([str(self.pip), "-c", "import sys; print(sys.version.split()[0])"])
        pip = out([str(self.pip), "-m", "pip", "--version"]).split()[1]
        return (f"python {sys.version.split()[0]} (dtkguard), python {py} (pip venv: "
                f"{self.pip}), pip {pip}, {out([self.uv, '--version'])}")  # fmt: skip

    def command(self, tool: str, sc: Scenario, url: str, cache: Path) -> list[str]:
        das = sc.target == "das"
        src = ["--index-url", url]
        if sc.folders:
            src = ["--no-index", "--find-links", str(sc.folders[1]), "--find-links",
                   str(sc.folders[0])]  # fmt: skip
        if tool == "dtkguard":
            target = (["--python-version", "3.10"] if das
                      else ["--python-version", HERE, "--platform", PLATFORM])  # fmt: skip
            extra = ["--vendor-index-url", url] if das else []
            if sc.folders:
                src = ["--no-index", "--find-links", str(sc.folders[1])]
                extra = ["--vendor-find-links", str(sc.folders[0])]
            return [*dtkguard_cmd(), "lock", *sc.requests, "--policy",
                    "dtk-25.04.1", *target, *src, *extra, "-o", "pylock.bench.toml"]  # fmt: skip
        cons = ["-c", "vendor.txt"] if sc.requests == [VLLM] else []
        if tool == "pip":
            target = (["--only-binary", ":all:", "--python-version", "3.10", *self.das_platforms]
                      if das else [])  # fmt: skip
            return [str(self.pip), "-m", "pip", "install", "--dry-run", "--report", "report.json",
                    "--ignore-installed", *target, "--cache-dir", str(cache), *src, *cons,
                    *sc.requests]  # fmt: skip
        target = (["--python-version", "3.10", "--python-platform", "x86_64-manylinux_2_35"]
                  if das else [])  # fmt: skip
        return [self.uv, "pip", "compile", "--python", str(self.pip), *target, "--format",
                "pylock.toml", "--cache-dir", str(cache), *src, *cons, "-o", "pylock.uv.toml",
                "-"]  # fmt: skip


def _run(cmd: list[str], sc: Scenario, cwd: Path, cache: Path) -> tuple[float, int, float]:
    """(wall seconds, peak RSS bytes, CPU seconds) of one command, which must exit as the
    scenario expects. CPU time moves much less than wall time on a loaded machine; the peak
    is the command's own (measured by a small launcher, not by this big process)."""
    env = hermetic_env(DTKGUARD_CACHE_DIR=str(cache))
    start = time.perf_counter()
    got = measure(cmd, env=env, cwd=cwd, input="\n".join(sc.requests) + "\n")
    took = time.perf_counter() - start
    if got.returncode != sc.expect:
        raise SystemExit(f"{sc.name}: exit {got.returncode}, expected {sc.expect}: "
                         f"{' '.join(cmd)}\n{got.output}")  # fmt: skip
    return took, got.peak_rss, got.cpu


def _measure(sc: Scenario, tools: Tools, base: Path, runs: int) -> dict:
    """{tool: {"cold": [s...], "warm": [s...], "cold-cpu": [s...], ..., "rss": [bytes...]}}."""
    times: dict = {}
    with serve_index(sc.folder, **sc.index) as index:
        for _ in range(runs):  # alternating: each tool once per round, so load hits all alike
            for tool in ("dtkguard", "pip", "uv"):
                t = times.setdefault(tool, {k: [] for k in ("cold", "warm", "cold-cpu",
                                                            "warm-cpu", "rss")})  # fmt: skip
                cache = base / f"cache-{sc.name}-{tool}"
                shutil.rmtree(cache, ignore_errors=True)
                cache.mkdir()
                for phase in ("cold", "warm"):
                    cmd = tools.command(tool, sc, index.url, cache)
                    took, rss, cpu = _run(cmd, sc, base, cache)
                    t[phase].append(took)
                    t[f"{phase}-cpu"].append(cpu)
                    t["rss"].append(rss)
    return times


def _report(rows: list[tuple[Scenario, dict]], runs: int) -> None:
    med = statistics.median
    print(f"\nmedian of {runs} run(s); ratio = median dtkguard / median other; wall seconds, "
          "then CPU seconds (user+sys, less moved by the machine's load)\n")  # fmt: skip
    for unit, suffix in (("wall s", ""), ("CPU s", "-cpu")):
        print(f"| scenario | dtkguard cold / warm {unit} | pip cold / warm | uv cold / warm "
              "| dtkguard/uv cold; warm | dtkguard/pip cold; warm |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|")
        cold_uv, cold_pip = [], []
        for sc, t in rows:
            d, p, u = (t[k] for k in ("dtkguard", "pip", "uv"))
            phases = ("cold" + suffix, "warm" + suffix)
            cells = [f"{med(x[phases[0]]):.2f} / {med(x[phases[1]]):.2f}" for x in (d, p, u)]
            ru = [med(d[ph]) / max(med(u[ph]), 1e-3) for ph in phases]
            rp = [med(d[ph]) / max(med(p[ph]), 1e-3) for ph in phases]
            cold_uv.append(ru[0])
            cold_pip.append(rp[0])
            print(f"| {sc.name} | {' | '.join(cells)} | {ru[0]:.2f}x; {ru[1]:.2f}x "
                  f"| {rp[0]:.2f}x; {rp[1]:.2f}x |")  # fmt: skip
        print(f"\nmedian over scenarios, cold, {unit}: dtkguard/uv {med(cold_uv):.2f}x, "
              f"dtkguard/pip {med(cold_pip):.2f}x\n")  # fmt: skip


def _big_wheel(base: Path, tools: Tools, size: int) -> None:
    folder = base / "big"
    build_big_wheel(folder, "big", "1.0", size, requires_dist=["dep"])
    build_wheel(folder, "dep", "1.0")
    sc = Scenario("big-wheel", ["big"], folder, index={"metadata": False})
    print(f"\nbig wheel ({size >> 20} MiB, index without PEP 658 metadata): peak RSS")
    with serve_index(folder, metadata=False) as index:
        for tool in ("dtkguard", "pip", "uv"):
            cache = base / f"cache-big-{tool}"
            shutil.rmtree(cache, ignore_errors=True)
            cache.mkdir()
            sent = index.file_bytes
            took, rss, _ = _run(tools.command(tool, sc, index.url, cache), sc, base, cache)
            print(f"  {tool:9} {rss / 1e6:7.1f} MB  {took:6.2f} s  "
                  f"{(index.file_bytes - sent) / 1e6:8.1f} MB of wheel read")  # fmt: skip


def _measured(sc: Scenario, times: dict) -> str:
    """One progress line: median cold/warm wall and CPU seconds per tool."""
    med = statistics.median
    parts = [
        f"{tool} {med(t['cold']):.2f}/{med(t['warm']):.2f} s "
        f"({med(t['cold-cpu']):.2f}/{med(t['warm-cpu']):.2f} CPU)"
        for tool, t in times.items()
    ]
    return f"  measured {sc.name}: " + ", ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="smallest size, one run")
    parser.add_argument("--runs", type=int, default=None, help="runs per tool (default 3)")
    parser.add_argument("--only", action="append", metavar="SCENARIO")
    args = parser.parse_args()
    runs = args.runs or (1 if args.smoke else 3)
    with tempfile.TemporaryDirectory(prefix="dtkguard-bench-") as tmp:
        base = Path(tmp)
        tools = Tools(base)
        print(tools.versions())
        scenarios = _packse(base / "packse")
        if not args.smoke:
            scenarios += _das(base / "das")
        if args.only:
            scenarios = [s for s in scenarios if s.name in args.only]
        rows = []
        for sc in scenarios:
            rows.append((sc, _measure(sc, tools, base, runs)))
            print(_measured(sc, rows[-1][1]), flush=True)
        if rows:
            _report(rows, runs)
        if not args.only or "big-wheel" in args.only:
            _big_wheel(base, tools, (16 if args.smoke else 300) << 20)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
