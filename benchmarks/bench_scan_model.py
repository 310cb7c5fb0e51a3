"""Benchmark: scan a DeepSeek-V3-shaped FP8 checkpoint (163 full-size sparse shards).

Two targets: the model folder, and a Hugging Face hub cache holding the same model as
``models--deepseek-ai--DeepSeek-V3`` with ``--snapshots`` revisions (snapshots are symlinks into
``blobs/``, as the hub library lays them out; ``refs/main`` names the newest). Compares, in one
run and on the same files:
  * ``dtkguard scan-model`` (the CLI, in-process: policy load, scan, rules, JSON report),
  * the ``dtkguard.modelscan.scan`` library call alone,
  * ``safetensors.safe_open`` reading the same metadata (keys, dtypes, __metadata__),
    run with ``--safetensors-python`` (a throwaway venv with safetensors; not a dependency),
and, as a user runs them (the goal's figure): the ``dtkguard scan-model`` console script
against a fresh interpreter running a ``safe_open`` script (``SAFE_OPEN_SCRIPT``), whole
processes, start-up and imports included, wall and CPU time (user + system) of the child.

Each method runs in a fresh worker process; time is the median of ``--repeat`` runs and bytes
read are the ``rchar`` delta of ``/proc/self/io`` around the work (mmap page-ins are not in
``rchar``; the ``minflt`` column shows them). Shards are sparse: ~4.2 GB apparent each, a
few hundred KB on disk.

    python benchmarks/bench_scan_model.py [--safetensors-python PY] [--repeat N] [--dir DIR]
    python benchmarks/bench_scan_model.py --smoke   # 2 shards of 4 layers, 2 snapshots: a run check
    python benchmarks/bench_scan_model.py --against ../main --repeat 7   # CPU time A/B

``--against CHECKOUT`` also times the library of another checkout of dtkguard on the same folder,
runs of the two interleaved, as CPU time (``time.process_time``: less disturbed by other jobs on
a shared machine than wall time) and prints the ratio of the medians.

Every run also checks that the library read headers only: its ``bytes_read`` must equal the
safetensors headers plus the index and config.json, byte for byte.

``--safetensors-python`` defaults to this interpreter when it can import safetensors (the
``test`` extra installs it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARDS = 163
LAYERS, DENSE, EXPERTS = 61, 3, 256
HIDDEN, MOE, INTER, VOCAB = 7168, 2048, 18432, 129280
BITS = {"F8_E4M3": 8, "BF16": 16, "F32": 32}
#: the options of every dtkguard scan-model run (no hy-smi here: the card is named)
CLI_OPTIONS = ("--policy", "dtk-25.04.1", "--card", "K100_AI", "--format", "json")


def _linear(out: list, name: str, rows: int, cols: int) -> None:
    out.append((f"{name}.weight", "F8_E4M3", [rows, cols]))
    out.append((f"{name}.weight_scale_inv", "F32", [math.ceil(rows / 128), math.ceil(cols / 128)]))


def deepseek_v3_tensors(layers: int = LAYERS) -> list[tuple[str, str, list[int]]]:
    t: list[tuple[str, str, list[int]]] = [("model.embed_tokens.weight", "BF16", [VOCAB, HIDDEN])]
    for i in range(layers):
        p = f"model.layers.{i}"
        for norm, size in (
            ("input_layernorm", HIDDEN),
            ("post_attention_layernorm", HIDDEN),
            ("self_attn.q_a_layernorm", 1536),
            ("self_attn.kv_a_layernorm", 512),
        ):
            t.append((f"{p}.{norm}.weight", "BF16", [size]))
        for name, rows, cols in (
            ("q_a_proj", 1536, HIDDEN),
            ("q_b_proj", 24576, 1536),
            ("kv_a_proj_with_mqa", 576, HIDDEN),
            ("kv_b_proj", 32768, 512),
            ("o_proj", HIDDEN, 16384),
        ):
            _linear(t, f"{p}.self_attn.{name}", rows, cols)
        if i < DENSE:
            for name, rows, cols in (
                ("gate_proj", INTER, HIDDEN),
                ("up_proj", INTER, HIDDEN),
                ("down_proj", HIDDEN, INTER),
            ):
                _linear(t, f"{p}.mlp.{name}", rows, cols)
            continue
        t.append((f"{p}.mlp.gate.weight", "BF16", [EXPERTS, HIDDEN]))
        t.append((f"{p}.mlp.gate.e_score_correction_bias", "F32", [EXPERTS]))
        for e in [*(f"experts.{k}" for k in range(EXPERTS)), "shared_experts"]:
            for name, rows, cols in (
                ("gate_proj", MOE, HIDDEN),
                ("up_proj", MOE, HIDDEN),
                ("down_proj", HIDDEN, MOE),
            ):
                _linear(t, f"{p}.mlp.{e}.{name}", rows, cols)
    t.append(("model.norm.weight", "BF16", [HIDDEN]))
    t.append(("lm_head.weight", "BF16", [VOCAB, HIDDEN]))
    return t


def build(folder: Path, shards: int = SHARDS, layers: int = LAYERS) -> int:
    """Write config, index and ``shards`` sparse shards; returns the apparent size in bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    tensors = deepseek_v3_tensors(layers)
    per = math.ceil(len(tensors) / shards)
    weight_map, total = {}, 0
    for k in range(shards):
        name = f"model-{k + 1:05d}-of-{shards:06d}.safetensors"
        header, offset = {"__metadata__": {"format": "pt"}}, 0
        for tname, dtype, shape in tensors[k * per : (k + 1) * per]:
            size = math.prod(shape) * BITS[dtype] // 8
            header[tname] = {
                "dtype": dtype,
                "shape": shape,
                "data_offsets": [offset, offset + size],
            }
            offset += size
            weight_map[tname] = name
        raw = json.dumps(header, separators=(",", ":")).encode()
        raw += b" " * (-len(raw) % 8)
        with open(folder / name, "wb") as fh:
            fh.write(struct.pack("<Q", len(raw)) + raw)
            fh.truncate(8 + len(raw) + offset)
        total += 8 + len(raw) + offset
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map})
    )
    (folder / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["DeepseekV3ForCausalLM"],
                "model_type": "deepseek_v3",
                "torch_dtype": "bfloat16",
                "quantization_config": {
                    "activation_scheme": "dynamic",
                    "fmt": "e4m3",
                    "quant_method": "fp8",
                    "weight_block_size": [128, 128],
                },
            }
        )
    )
    return total


def build_cache(base: Path, folder: Path, snapshots: int) -> tuple[Path, Path]:
    """A hub cache with ``snapshots`` revisions of ``folder``; returns (repo, main snapshot)."""
    repo = base / "hub" / "models--deepseek-ai--DeepSeek-V3"
    blobs = repo / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    names = sorted(p.name for p in folder.iterdir())
    for i, name in enumerate(names):
        os.link(folder / name, blobs / f"{i:064x}")  # hard link: no copy of the sparse shards
    revs = [f"{k:040x}" for k in range(1, snapshots + 1)]
    for rev in revs:
        snap = repo / "snapshots" / rev
        snap.mkdir(parents=True)
        for i, name in enumerate(names):
            os.symlink(f"../../blobs/{i:064x}", snap / name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revs[-1])
    return repo, repo / "snapshots" / revs[-1]


def _io() -> dict[str, int]:
    out = {}
    with open("/proc/self/io") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            out[key] = int(value)
    return out


def worker(method: str, folder: str) -> None:
    """Run one method once and print {seconds, rchar, syscr, minflt, tensors} as JSON."""
    if method == "safetensors":
        import numpy  # noqa: F401 - safe_open(framework="numpy") imports it: not reading
        from safetensors import safe_open
    else:
        sys.path.insert(0, os.environ.get("BENCH_DTKGUARD_ROOT") or str(ROOT))
        import dtkguard.cli
        from dtkguard.modelscan.scan import scan
    target = Path(folder)
    if (target / "refs" / "main").is_file():  # a hub cache repo: a loader reads refs/main
        target = target / "snapshots" / (target / "refs" / "main").read_text().strip()
    files = sorted(str(p) for p in target.glob("*.safetensors"))
    io0, flt0, t0 = _io(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
    cpu0 = time.process_time()
    tensors = bytes_read = 0
    if method == "safetensors":
        for path in files:
            with safe_open(path, framework="numpy") as f:
                f.metadata()
                for key in f.keys():  # noqa: SIM118 - safe_open is not a dict
                    f.get_slice(key).get_dtype()
                    tensors += 1
    elif method == "dtkguard-lib":
        scans = scan([folder])
        tensors = sum(s.tensors for s in scans)
        bytes_read = sum(s.bytes_read for s in scans)
    else:
        with open(os.devnull, "w") as sink:
            saved, sys.stdout = sys.stdout, sink
            try:
                dtkguard.cli.main(["scan-model", folder, *CLI_OPTIONS])
            finally:
                sys.stdout = saved
        tensors = -1
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    io1, flt1 = _io(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu": cpu,
                "rchar": io1["rchar"] - io0["rchar"],
                "syscr": io1["syscr"] - io0["syscr"],
                "minflt": flt1 - flt0,
                "tensors": tensors,
                "bytes_read": bytes_read,
            }
        )
    )


def _once(python: str, method: str, folder: Path, root: str | None = None) -> dict:
    env = {**os.environ, "BENCH_DTKGUARD_ROOT": root} if root else None
    out = subprocess.run(
        [python, __file__, "--worker", method, str(folder)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


#: the anchor as a user runs it: a fresh interpreter that imports safetensors and reads the
#: metadata, keys and dtypes of every shard of the model (refs/main's snapshot of a hub repo)
SAFE_OPEN_SCRIPT = """
import sys
from pathlib import Path
from safetensors import safe_open
target = Path(sys.argv[1])
if (target / "refs" / "main").is_file():
    target = target / "snapshots" / (target / "refs" / "main").read_text().strip()
for path in sorted(target.glob("*.safetensors")):
    with safe_open(str(path), framework="numpy") as f:
        f.metadata()
        for key in f.keys():
            f.get_slice(key).get_dtype()
"""


def dtkguard_process(folder: Path) -> list[str]:
    """``dtkguard scan-model`` as a user types it: the console script beside this interpreter
    (``python -m dtkguard`` where there is none)."""
    script = Path(sys.executable).with_name("dtkguard")
    head = [str(script)] if script.is_file() else [sys.executable, "-m", "dtkguard"]
    return [*head, "scan-model", str(folder), *CLI_OPTIONS]


def process_once(cmd: list[str]) -> dict:
    """Wall and CPU seconds (user + system of the child) of one run of ``cmd``, start-up and
    imports included."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # 1: FP8 findings on a K100_AI
        raise SystemExit(f"{cmd[:3]} failed ({done.returncode}): {done.stderr[-400:]!r}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"seconds": seconds, "cpu": cpu}


def processes(folder: Path, st_python: str, repeat: int) -> list[tuple[str, dict]]:
    """[(label, medians)] of the two whole processes, run in turn (one warm-up each)."""
    cmds = {
        "dtkguard scan-model (process)": dtkguard_process(folder),
        "safe_open script (process)": [st_python, "-c", SAFE_OPEN_SCRIPT, str(folder)],
    }
    for cmd in cmds.values():
        process_once(cmd)
    runs: dict[str, list[dict]] = {label: [] for label in cmds}
    for i in range(repeat):
        order = list(cmds) if i % 2 == 0 else list(reversed(cmds))
        for label in order:
            runs[label].append(process_once(cmds[label]))
    return [
        (label, {k: statistics.median(r[k] for r in got) for k in got[0]})
        for label, got in runs.items()
    ]


def alternating(rows: list[tuple[str, str, str]], folder: Path, repeat: int) -> list:
    """[(label, medians)] of every row, the rows run in turn ``repeat`` times (so the
    machine's load falls on all of them alike)."""
    runs: dict[str, list[dict]] = {label: [] for label, _, _ in rows}
    for _ in range(repeat):
        for label, python, method in rows:
            runs[label].append(_once(python, method, folder))
    return [
        (label, {k: statistics.median(r[k] for r in got) for k in got[0]})
        for label, got in runs.items()
    ]


def against(other: str, folder: Path, repeat: int) -> None:
    """CPU time of the library here and in the checkout ``other``, runs interleaved."""
    times: dict[str, list[float]] = {"this": [], "other": []}
    for _ in range(repeat):
        times["this"].append(_once(sys.executable, "dtkguard-lib", folder, str(ROOT))["cpu"])
        times["other"].append(_once(sys.executable, "dtkguard-lib", folder, other)["cpu"])
    this, base = (statistics.median(times[k]) for k in ("this", "other"))
    print(
        f"\nCPU time of dtkguard.modelscan.scan, median of {repeat} interleaved runs "
        f"(Python {sys.version.split()[0]}): this checkout {this:.3f} s, {other} {base:.3f} s, "
        f"ratio {this / base:.3f}"
    )


def _print_processes(results: list[tuple[str, dict]]) -> None:
    ref = results[-1][1]
    print(f"as a user runs it (start-up and imports included){'':2} {'seconds':>8} {'CPU s':>7}"
          f" {'time x':>7} {'CPU x':>6}")  # fmt: skip
    for label, r in results:
        print(
            f"{label:50} {r['seconds']:8.3f} {r['cpu']:7.3f} "
            f"{r['seconds'] / ref['seconds']:7.2f} {r['cpu'] / max(ref['cpu'], 1e-6):6.2f}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=2, metavar=("METHOD", "DIR"), help=argparse.SUPPRESS)
    ap.add_argument("--dir", help="where to build the model (default: a temporary folder)")
    ap.add_argument("--safetensors-python", help="a python with safetensors installed")
    ap.add_argument("--repeat", type=int, default=1, help="runs per method (median); default 1")
    ap.add_argument("--snapshots", type=int, default=50, help="revisions in the hub cache")
    ap.add_argument("--keep", action="store_true", help="keep the built folder")
    ap.add_argument("--smoke", action="store_true", help="smallest size: 2 shards, 2 snapshots")
    ap.add_argument("--against", metavar="CHECKOUT", help="also time another checkout's library")
    args = ap.parse_args()
    if args.smoke:
        args.snapshots, args.repeat = 2, 1
    if args.worker:
        worker(*args.worker)
        return 0
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-dsv3-"))
    base.mkdir(parents=True, exist_ok=True)
    folder = base / "DeepSeek-V3"
    free = shutil.disk_usage(base).free
    if free < 1 << 30:
        print(f"need ~1 GiB free for headers, have {free >> 20} MiB", file=sys.stderr)
        return 1
    shards = 2 if args.smoke else SHARDS
    t0 = time.perf_counter()
    apparent = build(folder, shards, 4 if args.smoke else LAYERS)
    on_disk = sum(p.stat().st_blocks * 512 for p in folder.iterdir())
    headers = sum(
        8 + struct.unpack("<Q", p.open("rb").read(8))[0] for p in folder.glob("*.safetensors")
    )
    expected_read = (
        headers
        + (folder / "model.safetensors.index.json").stat().st_size
        + (folder / "config.json").stat().st_size
    )
    print(
        f"built {shards} shards in {time.perf_counter() - t0:.1f}s: apparent "
        f"{apparent / 1e9:,.1f} GB, on disk {on_disk / 1e6:,.1f} MB, "
        f"headers {headers / 1e6:.2f} MB, index "
        f"{(folder / 'model.safetensors.index.json').stat().st_size / 1e6:.2f} MB"
    )
    t0 = time.perf_counter()
    shutil.rmtree(base / "hub", ignore_errors=True)  # a kept --dir of an earlier run
    repo, _ = build_cache(base, folder, args.snapshots)
    links = sum(1 for _ in (repo / "snapshots").rglob("*"))
    print(
        f"built a hub cache in {time.perf_counter() - t0:.1f}s: {args.snapshots} snapshots of "
        f"the model, {links:,} entries (symlinks into blobs/)"
    )
    st_python = args.safetensors_python
    if st_python is None and importlib.util.find_spec("safetensors") is not None:
        st_python = sys.executable
    versions = [f"dtkguard side: {sys.executable} (Python {sys.version.split()[0]})"]
    if st_python:
        got = subprocess.run(
            [st_python, "-c", "import sys, safetensors; print(sys.version.split()[0], "
             "safetensors.__version__)"],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        versions.append(f"safetensors side: {st_python} (Python {got[0]}, safetensors {got[1]})")
    print("\n".join(versions))
    targets = (("model folder", folder), (f"hub cache repo, {args.snapshots} snapshots", repo))
    for title, target in targets:
        rows = [
            ("dtkguard scan-model (CLI)", sys.executable, "dtkguard-cli"),
            ("dtkguard.modelscan.scan (library)", sys.executable, "dtkguard-lib"),
        ]
        if st_python:
            rows.append(("safetensors.safe_open", st_python, "safetensors"))
        results = alternating(rows, target, args.repeat)
        lib_read = int(dict(results)["dtkguard.modelscan.scan (library)"]["bytes_read"])
        if lib_read != expected_read:
            print(f"not headers only: read {lib_read:,}, expected {expected_read:,}")
            return 1
        ref = results[-1][1] if st_python else results[0][1]
        print(
            f"\n{title}\n{'method':34} {'seconds':>8} {'CPU s':>7} {'bytes read':>14} "
            f"{'read calls':>10} {'minflt':>8} {'time x':>7} {'CPU x':>6} {'bytes x':>8}"
        )
        for label, r in results:
            print(
                f"{label:34} {r['seconds']:8.3f} {r['cpu']:7.3f} {int(r['rchar']):14,} "
                f"{int(r['syscr']):10,} {int(r['minflt']):8,} "
                f"{r['seconds'] / ref['seconds']:7.2f} {r['cpu'] / max(ref['cpu'], 1e-6):6.2f} "
                f"{r['rchar'] / max(ref['rchar'], 1):8.2f}"
            )
        if st_python:
            _print_processes(processes(target, st_python, args.repeat))
    print(
        f"\n(ratios relative to {rows[-1][0]}; headers total {headers:,} bytes; the library "
        f"read exactly the headers, the index and config.json: {expected_read:,} bytes; "
        f"{'single run' if args.repeat == 1 else f'median of {args.repeat} runs'} per method)"
    )
    if args.against:
        against(args.against, folder, args.repeat)
    if not args.keep and not args.dir:
        shutil.rmtree(base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
