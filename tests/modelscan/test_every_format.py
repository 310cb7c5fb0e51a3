"""Every format and layout gets the library's verdict through every command a user types.

One table (`formats.ROWS`: config-only, config + sidecar, index without shards, safetensors,
sharded, pickle zip and legacy, GGUF, a single file, an HF cache snapshot; each FP8, FP4 and
clean) run through ``scan-model``, ``audit --models`` and ``exec --`` with a stand-in server. A
shared gate (nothing read is not clean; a model that could not be checked) that drops a format
fails its rows. Each reader's ``bytes_read`` is checked against the file it read.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest
from formats import ROWS, Row

from dtkguard.modelscan.detect import detect
from dtkguard.modelscan.scan import scan
from tests.support.cli import dtkguard, run_in_process

COMMANDS = ("scan-model", "audit", "exec")
needs_torch = pytest.mark.skipif(
    sys.version_info[:2] != (3, 11),
    reason="torch is in the test extra for Python 3.11 only (CPU torch 2.13.0)",
)


def _cases() -> list:
    return [
        pytest.param(row, cmd, id=f"{row.id}-{cmd}", marks=[needs_torch] if row.torch else [])
        for row in ROWS
        for cmd in COMMANDS
    ]


def library_verdict(path: Path) -> set[str]:
    return {d.rule for m in scan([str(path)]) for d in detect(m)}


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "demo-1.0.dist-info").mkdir(parents=True)
    (site / "demo-1.0.dist-info" / "METADATA").write_text("Name: demo\nVersion: 1.0\n")
    return site


def _hy_smi(tmp_path: Path, series: str = "K100_AI") -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    hy = bindir / "hy-smi"
    hy.write_text(f"#!/bin/sh\necho 'HCU[0]\t\t: Card Series: \t\t{series}'\n")
    hy.chmod(0o755)
    return bindir


def _fp8_rules(report: dict) -> set[str]:
    return {f["rule"] for f in report["findings"] if f["rule"].startswith(("fp8-", "fp4-"))}


def _check_read(row: Row, facts: list[dict]) -> None:
    """Each reader that produced evidence reports the bytes it really read."""
    read: dict[str, int] = {}
    for model in facts:
        for reader, n in model["read"].items():
            read[reader] = read.get(reader, 0) + n
        assert model["bytes_read"] == sum(model["read"].values())
    assert set(read) == row.readers, read
    for (reader, n), files in zip(read.items(), map(_files_of(facts), read), strict=True):
        assert n == expected_bytes(reader, files) or reader in ("pickle", "gguf"), (reader, n)
        if reader == "pickle":  # the zip directory and data.pkl, or the leading pickles
            assert 0 < n < sum(f.stat().st_size for f in files) - 64 * 1024
        if reader == "gguf":  # the header and tensor infos, never tensor data
            assert 0 < n <= sum(gguf_data_offset(f) for f in files)


def _files_of(facts: list[dict]):
    suffixes = {
        "config": ("config.json",),
        "sidecar": ("hf_quant_config.json",),
        "index": (".index.json",),
        "safetensors": (".safetensors",),
        "pickle": (".bin", ".pt", ".pth", ".ckpt"),
        "gguf": (".gguf",),
    }

    def files(reader: str) -> list[Path]:
        out = []
        for model in facts:
            top = Path(model["path"])
            found = [top] if top.is_file() else sorted(p for p in top.iterdir() if p.is_file())
            out += [p for p in found if p.name.endswith(suffixes[reader])]
        if reader == "config":
            out = [p for p in out if p.name == "config.json"]
        return out

    return files


def expected_bytes(reader: str, files: list[Path]) -> int:
    """What a reader that reads headers only must have read: whole JSON files, and of a
    safetensors file the 8-byte length and the header it gives."""
    if reader == "safetensors":
        return sum(8 + struct.unpack("<Q", f.read_bytes()[:8])[0] for f in files)
    return sum(f.stat().st_size for f in files)


def gguf_data_offset(path: Path) -> int:
    import gguf

    return gguf.GGUFReader(str(path)).data_offset


def _server(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "started"
    script = tmp_path / "vllm"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    return script, marker


@pytest.mark.parametrize(("row", "command"), _cases())
def test_every_format_gets_the_library_verdict(tmp_path, row: Row, command: str):
    folder = tmp_path / "m"
    folder.mkdir()
    path = row.build(folder, row.variant)
    verdict = library_verdict(path)
    assert verdict == row.expect, f"library: {verdict}"
    if command == "scan-model":
        out = run_in_process(
            "scan-model", path, "--policy", "dtk-25.04.1", "--card", "K100_AI", "-f", "json"
        )
        assert out.code == (1 if row.expect else 0), out.err
        report = json.loads(out.out)
        assert _fp8_rules(report) == verdict
        _check_read(row, report["facts"]["models"])
    elif command == "audit":
        bindir = _hy_smi(tmp_path)
        env = {"PATH": f"{bindir}:/usr/bin:/bin"}
        site = _site(tmp_path)
        out = dtkguard("audit", "--path", site, "--models", path, "-f", "json", env=env)
        assert out.returncode == (1 if row.expect else 0), out.stderr
        report = json.loads(out.stdout)
        assert _fp8_rules(report) == verdict
        _check_read(row, report["facts"]["models"])
    else:
        script, marker = _server(tmp_path)
        model = f"org/{row.variant}" if row.hub else str(path)
        env = {"HF_HUB_CACHE": str(folder / "hub")} if row.hub else {}
        out = dtkguard(
            "exec", "--policy", "dtk-25.04.1", "--card", "K100_AI", "--",
            script, "serve", model, env=env, cwd=tmp_path,
        )  # fmt: skip
        assert "not checked" not in out.stderr, out.stderr
        if row.expect:
            assert out.returncode == 1 and not marker.exists(), out.stderr
            assert all(rule in out.stderr for rule in verdict) and "veto" in out.stderr
        else:
            assert out.returncode == 0 and marker.exists(), out.stderr


def test_config_only_folder_is_judged_by_its_config_and_says_so(tmp_path):
    """A folder of config.json alone (weights not downloaded) gets the config's verdict, exit
    0 for a clean one, and a note that no weight file was read; with `exec` under
    ``unresolved-model = "deny"`` too: its config was checked."""
    folder = tmp_path / "llama"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    out = run_in_process("scan-model", folder, "--card", "K100_AI", "-f", "json")
    assert out.code == 0, out.err
    (model,) = json.loads(out.out)["facts"]["models"]
    assert model["read"] == {"config": 23} and model["weights_read"] is False
    assert f"note: {folder}: no weight file read; judged by the config only" in out.err
    policy = tmp_path / "deny.toml"
    policy.write_text('[policy]\nextends = ["dtk-25.04.1"]\n\n[fp8]\nunresolved-model = "deny"\n')
    script, marker = _server(tmp_path)
    argv = ("exec", "--policy", policy, "--card", "K100_AI", "--", script, "serve", folder)
    out = dtkguard(*argv)
    assert out.returncode == 0 and marker.exists(), out.stderr
    assert "judged by the config only" in out.stderr


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_help_docs_and_readme_say_what_is_read_per_format():
    from dtkguard.modelscan.reads import CONFIG_ONLY, WHAT_IS_READ

    out = run_in_process("scan-model", "--help")
    assert out.code == 0
    help_text = _flat(out.out)
    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "fp8.md").read_text()
    for reader, files, read, never in WHAT_IS_READ:
        assert _flat(f"{files} [{reader}]: {read}; never {never}") in help_text
        assert f"| `{reader}` | {files} | {read} | {never} |" in doc
    assert _flat(CONFIG_ONLY) in help_text and _flat(CONFIG_ONLY) in _flat(doc)
    readme = _flat((root / "README.md").read_text())
    assert "A folder of config files only" in readme and "is exit 3" in readme
