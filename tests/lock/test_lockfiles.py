"""The committed image lock regenerates byte for byte and is a valid, closed PEP 751 lock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dtkguard.decision import canonical
from dtkguard.lock.read import files, read_lock
from tests.support.venvs import hermetic_env

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "lockfiles" / "pylock.das-25041-vllm.toml"


def test_committed_lock_regenerates_identically():
    proc = subprocess.run(
        [sys.executable, str(REPO / "lockfiles" / "regenerate.py"), "--check"],
        env=hermetic_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pylock.das-25041-vllm.toml: identical" in proc.stdout


def test_committed_lock_content():
    lock = read_lock(LOCK)
    versions = lock.versions()
    assert versions["vllm"] == "0.8.5.post1+das.opt1.dtk25041"
    assert versions["torch"] == "2.4.1+das.opt1.dtk25041"
    assert len(versions) > 130
    vendor = {p.name for p in lock.pylock.packages if p.tool["dtkguard"].get("vendor-build")}
    image = REPO / "tests" / "data" / "das-25.04.1-pip-list.txt"
    assert vendor == {canonical(line.split()[0]) for line in image.read_text().splitlines()}
    assert {k: versions[k] for k in vendor} == {
        canonical(name): version
        for name, version in (line.split() for line in image.read_text().splitlines())
    }
    assert all(
        f.path.startswith("wheelhouse/vendor/") for k in vendor for f in files(lock.by_name()[k])
    )
    assert "test wheelhouse" in lock.dtkguard.table["note"]
    text = LOCK.read_text()
    assert "://" not in text  # no registry, no machine path
