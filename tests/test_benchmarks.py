"""Every benchmark still runs: each `benchmarks/bench_*.py --smoke` at its smallest size.

Benchmarks are code: an API change that breaks one, or a benchmark that stops timing what it
claims, must fail here rather than on the day its figures are quoted. A smoke run checks that the
script runs to the end and prints its figures, never how fast anything was.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import REPO
from tests.support.venvs import hermetic_env

BENCHMARKS = sorted((REPO / "benchmarks").glob("bench_*.py"))


def test_every_benchmark_is_listed() -> None:
    assert len(BENCHMARKS) >= 7, BENCHMARKS


@pytest.mark.wheel_cache
@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.stem)
def test_benchmark_smoke_run(script: Path, tmp_path: Path) -> None:
    source = script.read_text()
    assert '"--smoke"' in source, f"{script.name} has no --smoke mode"
    proc = subprocess.run(
        [sys.executable, str(script), "--smoke"],
        env=hermetic_env(PYTHONPATH=str(REPO), TMPDIR=str(tmp_path), NO_COLOR="1"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"{script.name} --smoke failed:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip(), f"{script.name} --smoke printed no figures"
    assert "Traceback" not in proc.stderr, proc.stderr
