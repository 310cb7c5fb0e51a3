"""The transaction journal with real pip: dtkpip installs are journalled, `history` lists them,
`undo` returns the exact previous set (and is a transaction itself), a failed pip run and a
killed transaction are rolled back, byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.guard.test_restore import files
from tests.support.venvs import hermetic_env

pytestmark = pytest.mark.wheel_cache


@pytest.fixture
def fresh(pip_version: str, tmp_path: Path, build_guarded: Callable[..., Guarded]) -> Guarded:
    """A new guarded venv without the vendor vllm: the fixture installs vllm without its ~40
    requirements, and undoing an install that happened to bring one of them (pyyaml) is rightly
    refused as vendor-deps-broken; these cases are about the journal, not that rule."""
    return build_guarded(tmp_path / "venv", pip_version, with_vllm=False)


def _history(g: Guarded) -> list[dict]:
    proc = g.dtkguard("history", "--python", str(g.venv.python), "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_undo_after_allowed_install_returns_exact_previous_set(fresh: Guarded) -> None:
    g = fresh
    before_set = g.venv.installed()
    before = files(g)
    proc = g.dtkpip("install", *g.index_args, "accelerate==1.6.0")
    assert proc.returncode == 0, proc.stderr
    after_set, after = g.venv.installed(), files(g)
    added = set(after_set) - set(before_set)
    assert "accelerate" in added
    [txn] = _history(g)
    assert txn["state"] == "committed" and txn["tool"] == "dtkpip"
    assert txn["argv"][:2] == ["dtkpip", "install"]
    assert {k for k, v in txn["after"].items() if k not in txn["before"]} == added
    text = g.dtkguard("history", "--python", str(g.venv.python)).stdout
    assert "(rev 1)  dtkpip install" in text and "+accelerate-1.6.0" in text

    proc = g.dtkguard("undo", "--python", str(g.venv.python), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "remove accelerate 1.6.0" in proc.stdout
    assert g.venv.installed() == before_set
    assert g.venv.installed()["torch"] == TORCH
    # every file as it was (pip's own bytecode of its run aside: snapshot skips __pycache__)
    assert changed(before, files(g)) == []
    txns = _history(g)
    assert [t["state"] for t in txns] == ["undone", "committed"]
    assert txns[1]["undoes"] == 1 and txns[1]["tool"] == "dtkguard undo"
    # the undo is a transaction: undoing it installs accelerate again, from the kept files,
    # byte for byte (its dependencies again without a REQUESTED marker)
    proc = g.dtkguard("undo", "--python", str(g.venv.python), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert g.venv.installed() == after_set
    assert changed(after, files(g)) == []


def test_undo_of_an_upgrade_puts_the_old_files_back(fresh: Guarded) -> None:
    g = fresh
    g.venv.pip("install", "--no-index", "-f", str(g.extra), "pins-torch==1.0")
    before = files(g)
    proc = g.dtkpip("install", "--no-index", "-f", str(g.extra), "pins-torch==2.0", "--no-deps")
    assert proc.returncode == 0, proc.stderr
    assert g.venv.installed()["pins-torch"] == "2.0"
    proc = g.dtkguard("undo", "--python", str(g.venv.python), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pins-torch 2.0 back to 1.0" in proc.stdout
    assert changed(before, files(g)) == []


def test_failed_pip_run_is_rolled_back(fresh: Guarded, tmp_path: Path) -> None:
    g = fresh
    before = files(g)
    # a wheel whose RECORD lies is fine for pip; one that cannot be installed at all: a
    # second requirement that does not exist makes pip fail after resolving nothing: use a
    # file that is not a wheel instead, after a good one in the same run
    bad = tmp_path / "broken-1.0-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    proc = g.dtkpip("install", "--no-index", "-f", str(g.extra), "pins-torch==1.0", str(bad))
    assert proc.returncode != 0
    assert changed(before, files(g)) == []
    assert all(t["state"] != "committed" for t in _history(g))


def test_killed_transaction_is_rolled_back_by_the_next(fresh: Guarded) -> None:
    """A transaction left open (its process killed after pip ran) is rolled back first."""
    g = fresh
    # what the killed run removes is a package no vendor build needs (removing filelock is
    # rightly refused: the vendor torch requires it)
    g.venv.pip("install", "--no-index", "-f", str(g.extra), "pins-torch==1.0")
    before = files(g)
    code = (
        "import os,subprocess,sys;from dtkguard.journal import transaction as journal;"
        "cm=journal.transaction(sys.argv[1],'test',['kill-me']);cm.__enter__();"
        "subprocess.run([sys.argv[1],'-m','pip','uninstall','-y','pins-torch'],check=True);"
        "os.kill(os.getpid(),9)"
    )
    env = hermetic_env(PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.run([sys.executable, "-c", code, str(g.venv.python)], env=env)
    assert proc.returncode == -9
    assert "pins-torch" not in g.venv.installed()
    hist = g.dtkguard("history", "--python", str(g.venv.python))
    assert "did not finish; rolling the environment back" in hist.stderr
    assert changed(before, files(g)) == []
    assert [t["state"] for t in _history(g)] == ["rolled-back"]


def test_undo_refuses_what_changed_since_and_nothing_to_undo(fresh: Guarded) -> None:
    g = fresh
    py = str(g.venv.python)
    proc = g.dtkguard("undo", "--python", py)
    assert proc.returncode == 1 and "nothing to undo" in proc.stderr
    start = g.venv.installed()["fsspec"]
    other = "2024.12.0" if start != "2024.12.0" else "2026.9.0"
    for version in (other, start):
        proc = g.dtkpip("install", *g.index_args, "--no-deps", f"fsspec=={version}")
        assert proc.returncode == 0, proc.stderr
    state = files(g)
    proc = g.dtkguard("undo", "1", "--python", py)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "fsspec changed since by transaction 2" in proc.stdout
    assert changed(state, files(g)) == []
    proc = g.dtkguard("undo", "7", "--python", py)
    assert proc.returncode == 2 and "no transaction 7" in proc.stderr
