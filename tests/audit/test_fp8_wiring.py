"""audit --models and --processes reach the FP8 rules, with the card series from hy-smi."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.audit.conftest import run_cli, site
from tests.modelscan.modelkit import deepseek_model


def fake_hy_smi(bindir, series: str) -> None:
    bindir.mkdir(exist_ok=True)
    hy = bindir / "hy-smi"
    hy.write_text(f"#!/bin/sh\necho 'HCU[0]\t\t: Card Series: \t\t{series}'\n")
    hy.chmod(0o755)


def test_models_on_a_card_without_fp8(venv, tmp_path, monkeypatch):
    fake_hy_smi(tmp_path / "bin", "K100_AI")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    model = deepseek_model(tmp_path / "ds-fp8")
    result = run_cli("audit", "--path", site(venv), "--models", str(model), "-f", "json")
    assert result.code == 1, result.err
    report = result.json()
    fp8 = [f for f in report["findings"] if f["rule"] == "fp8-weights"]
    assert fp8 and fp8[0]["evidence"]["card"] == "K100_AI"
    assert report["facts"]["models"][0]["path"].endswith("ds-fp8")


def test_processes_asking_for_fp8(venv, tmp_path, monkeypatch):
    fake_hy_smi(tmp_path / "bin", "BW1000")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    launcher = tmp_path / "vllm"
    launcher.write_text(
        f"#!{sys.executable}\nimport time\nprint('up', flush=True)\ntime.sleep(60)\n"
    )
    launcher.chmod(0o755)
    proc = subprocess.Popen(
        [str(launcher), "serve", "/models/m", "--quantization", "fp8"], stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout.readline() == b"up\n"
        result = run_cli("audit", "--path", site(venv), "--processes", "-f", "json")
    finally:
        proc.kill()
        proc.wait()
    serving = [f for f in result.json()["findings"] if f["rule"] == "fp8-serving"]
    assert any(f["evidence"]["pid"] == proc.pid for f in serving), result.out[-2000:]
    assert result.code == 1
