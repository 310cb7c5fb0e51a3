"""Bounded fuzz of every parser of untrusted input: mutated policies, locks, safetensors and
GGUF headers, pickles, ELF shared objects (in a dist and inside a wheel), node reports
(through the real CLI, in process, so a traceback is an
exception that escapes `main`) and policy cache entries (which must always be misses).

Every case must end with an exit code of 0, 1, 2 or 3. The seed is fixed, so a failure names
its case and reproduces. The normal run does `CASES` cases per format; ``-m fuzz`` does
`LONG_CASES` per format.
"""

from __future__ import annotations

import io
import json
import pickle
import random
import struct
import zipfile
from pathlib import Path

import pytest

from dtkguard.policy.locate import bundled_dir
from tests.fleet.factory import finding, node_report, write_lock
from tests.support.cli import run_in_process

SEED = 20261130
CASES = 60
LONG_CASES = 600
#: tokens that break parsers: huge numbers, deep nesting, quotes, table headers, bad bytes
TOKENS = [
    b"9" * 5000, b"[" * 3000, b"{" * 3000, b'"', b"'''", b'"""', b"[[", b"]]", b"[vendor]",
    b"=", b"\\", b"\xff\xfe", b"\x00", b"\x1b[31m", b"NaN", b"-Infinity", b"1e999999",
    b"\n", b"\r\n", b"#", b"torch", b"+das", b"\xe4\xb8\xad", b"\xed\xa0\x80", b"true",
]  # fmt: skip


def _mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        at = rng.randint(0, len(out))
        if op == 0 and out:  # flip bytes
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(out))
                out[i] = rng.randrange(256)
        elif op == 1:  # insert a hostile token
            out[at:at] = rng.choice(TOKENS)
        elif op == 2:  # delete a range
            del out[at : at + rng.randint(1, 64)]
        elif op == 3:  # duplicate a range (duplicate keys, repeated tables)
            end = min(len(out), at + rng.randint(1, 200))
            out[at:at] = out[at:end]
        elif op == 4:  # truncate
            del out[at:]
        else:  # random bytes
            out[at:at] = rng.randbytes(rng.randint(1, 16))
    return bytes(out)


def _safetensors_header(header: bytes) -> bytes:
    return struct.pack("<Q", len(header)) + header


def _gguf() -> bytes:
    def s(text: bytes) -> bytes:
        return struct.pack("<Q", len(text)) + text

    kv = s(b"general.architecture") + struct.pack("<I", 8) + s(b"llama")
    kv += s(b"llama.block_count") + struct.pack("<I", 4) + struct.pack("<I", 2)
    tensor = s(b"blk.0.attn_q.weight") + struct.pack("<I", 2) + struct.pack("<QQ", 8, 8)
    tensor += struct.pack("<I", 1) + struct.pack("<Q", 0)
    return b"GGUF" + struct.pack("<IQQ", 3, 1, 2) + kv + tensor + b"\0" * 256


def _elf_seed(tmp: Path) -> bytes:
    """A real shared object (gcc) that needs the stub libcudart.so.12."""
    from tests.support.elf import CUDART, build_shared

    return build_shared(tmp / "elf-seed" / "cuda.so", (CUDART,)).read_bytes()


def _elf_dist(site: Path) -> None:
    """The dist-info that ships the fuzzed ``site/pkg/_C.so``."""
    info = site / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n\n")
    (info / "RECORD").write_text("pkg/_C.so,,\npkg-1.0.dist-info/METADATA,,\n")


def _seeds(tmp: Path) -> dict[str, tuple[str, bytes]]:
    """format -> (file name, valid bytes)."""
    lock = write_lock(tmp / "seed.toml", {"torch": "2.4.1+das.opt1.dtk25041", "vllm": "0.8.5"})
    tensors = {
        "model.layers.0.weight": {"dtype": "F8_E4M3", "shape": [8, 8], "data_offsets": [0, 64]},
        "model.layers.0.weight_scale_inv": {"dtype": "F32", "shape": [1], "data_offsets": [64, 68]},
        "__metadata__": {"format": "pt"},
    }
    header = json.dumps(tensors).encode()
    report = node_report("n1", [finding("vendor-replaced", "torch", "low", installed="2.4.1")])
    pickled = pickle.dumps({"w": [1.0, 2.0], "cls": Path}, protocol=2)
    return {
        "policy": ("policy.toml", (bundled_dir() / "dtk-25.04.1.toml").read_bytes()),
        "lock": ("pylock.fuzz.toml", lock.read_bytes()),
        "safetensors": ("model.safetensors", _safetensors_header(header) + b"\0" * 68),
        "gguf": ("model.gguf", _gguf()),
        "pickle": ("pytorch_model.bin", pickled),
        "report": ("node.json", json.dumps(report).encode()),
        "elf": ("site/pkg/_C.so", _elf_seed(tmp)),
    }


def _argv(fmt: str, path: Path, out: Path) -> list[str]:
    if fmt == "policy":
        return ["policy", "check", str(path)]
    if fmt == "lock":
        return ["export", "requirements", str(path), "-o", str(out)]
    if fmt == "report":
        return ["report", "merge", str(path), "-f", "json", "-o", str(out)]
    if fmt == "elf":
        return ["check", "--path", str(path.parents[1]), "-f", "json", "-o", str(out)]
    return ["scan-model", str(path), "-f", "json", "-o", str(out)]


def _run(fmt: str, cases: int, tmp: Path, monkeypatch) -> dict[int, int]:
    monkeypatch.setenv("DTKGUARD_CACHE_DIR", str(tmp / "cache"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("DTKGUARD_DEBUG", raising=False)
    name, seed = _seeds(tmp)[fmt]
    rng = random.Random(f"{SEED}:{fmt}")
    codes: dict[int, int] = {}
    for case in range(cases):
        folder = tmp / f"{fmt}-{case}"
        folder.mkdir()
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_mutate(rng, seed) if case else seed)
        if fmt == "elf":
            _elf_dist(folder / "site")
        try:
            result = run_in_process(*_argv(fmt, path, folder / "out"))
        except BaseException as exc:
            raise AssertionError(f"{fmt} case {case} (seed {SEED}): {exc!r}") from exc
        code = result.code
        assert code in (0, 1, 2, 3), f"{fmt} case {case}: exit {code}"
        if code == 2:
            lines = result.err.strip().splitlines()
            assert len(lines) <= 1 and "Traceback" not in result.err, (fmt, case, lines)
        codes[code] = codes.get(code, 0) + 1
    return codes


FORMATS = ["policy", "lock", "safetensors", "gguf", "pickle", "report", "elf"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzz(fmt, tmp_path, monkeypatch):
    codes = _run(fmt, CASES, tmp_path, monkeypatch)
    assert sum(codes.values()) == CASES
    assert len(codes) > 1 or fmt in ("pickle", "gguf"), codes  # the mutations reach the parser


@pytest.mark.fuzz
@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzz_long(fmt, tmp_path, monkeypatch):
    codes = _run(fmt, LONG_CASES, tmp_path, monkeypatch)
    assert sum(codes.values()) == LONG_CASES


def _run_cache(cases: int, tmp: Path, monkeypatch) -> None:
    """Mutated cache entries are misses: the policy served is always the one on disk."""
    from dtkguard.policy.load import _cache_file
    from tests.support.policies import compile_policy, load_policy

    monkeypatch.setenv("DTKGUARD_CACHE_DIR", str(tmp / "cache"))
    policy = tmp / "site.toml"
    policy.write_bytes((bundled_dir() / "dtk-25.04.1.toml").read_bytes())
    truth = compile_policy(policy)
    assert load_policy(str(policy)) == truth
    entry = Path(_cache_file(str(policy.resolve())))
    seed = entry.read_bytes()
    rng = random.Random(f"{SEED}:cache")
    for case in range(cases):
        entry.write_bytes(_mutate(rng, seed))
        assert load_policy(str(policy)) == truth, f"cache case {case}"


def test_fuzz_policy_cache(tmp_path, monkeypatch):
    _run_cache(CASES, tmp_path, monkeypatch)


@pytest.mark.fuzz
def test_fuzz_policy_cache_long(tmp_path, monkeypatch):
    _run_cache(LONG_CASES, tmp_path, monkeypatch)


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_fuzz_elf_wheel_members(method, tmp_path):
    """Mutated shared objects inside a wheel, read as the pip hook reads them: every member is
    judged or refused in words, never raised."""
    from dtkguard import elf

    seed = _elf_seed(tmp_path)
    rng = random.Random(f"{SEED}:elf-member:{method}")
    for case in range(CASES):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr(zipfile.ZipInfo("pkg/_C.so"), _mutate(rng, seed), compress_type=method)
        with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
            try:
                found = elf.wheel_linkages(zf)
            except BaseException as exc:
                raise AssertionError(f"elf member case {case} (seed {SEED}): {exc!r}") from exc
        for _, linkage, error in found:
            assert (linkage is None) == bool(error), (case, error)
