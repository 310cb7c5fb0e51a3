"""A real dtkuv run killed (SIGKILL) at every durable write of its journal transaction: after
each kill the next command leaves the environment where it started or where the change took it
(never between), every transaction is in a final state, the journal's digest chain and its
transactions verify, and a committed change is undone byte for byte. The kill comes right after
the K-th fsync, rename or unlink the process makes in the journal, for every K until a run ends
unkilled (`dtkguard.journal.txn`: the order of its durable writes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cache import uv_binary
from tests.support.cli import dtkguard_in
from tests.support.venvs import Venv, hermetic_env, make_venv
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache
REPO = Path(__file__).resolve().parents[2]

#: ``python -c _KILL_AT K ARGS``: ``dtkguard ARGS``, killed by SIGKILL right after the K-th
#: fsync, rename or unlink of a file in a journal folder of the guard's store
_KILL_AT = """
import os, runpy, sys
k, seen = int(sys.argv[1]), [0]
def path(x):
    if isinstance(x, int):
        try:
            return os.readlink(f"/proc/self/fd/{x}")
        except OSError:
            return ""
    return os.path.abspath(os.fsdecode(x))
def killing(real):
    def op(x, *args, **kwargs):
        out = real(x, *args, **kwargs)
        if f"{os.sep}journal{os.sep}" in path(x):
            seen[0] += 1
            if seen[0] == k:
                os.kill(os.getpid(), 9)
        return out
    return op
for name in ("fsync", "replace", "rename", "unlink"):
    setattr(os, name, killing(getattr(os, name)))
sys.argv = ["dtkguard", *sys.argv[2:]]
runpy.run_module("dtkguard", run_name="__main__")
"""

BEFORE = {"first-pkg": "1.0"}
AFTER = {"first-pkg": "2.0", "later-pkg": "1.0"}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("kill-point-wheels")
    for version in ("1.0", "2.0"):
        files = {"first_pkg/__init__.py": f"V = {version!r}\n"}
        if version == "1.0":
            files["first_pkg/only_in_1.py"] = "OLD = True\n"
        build_wheel(dest, "first-pkg", version, files=files)
    build_wheel(dest, "later-pkg", "1.0", files={"later_pkg/__init__.py": "L = 1\n"})
    return dest


def _ours(venv: Venv) -> dict[str, str]:
    return {k: v for k, v in venv.installed().items() if k in ("first-pkg", "later-pkg")}


def _at_start(venv: Venv) -> bool:
    """first-pkg 1.0 with its own files, nothing of the change."""
    pkg = venv.site_packages / "first_pkg"
    return (
        _ours(venv) == BEFORE
        and (pkg / "__init__.py").read_text() == "V = '1.0'\n"
        and (pkg / "only_in_1.py").is_file()
        and not (venv.site_packages / "later_pkg").exists()
    )


def _chain_before_recovery(venv: Venv) -> list[str]:
    """What `check` says of the journal's chain right after the kill: nothing (a head left
    behind the log is not a truncation), but for a head not written yet after the very first
    record of a journal."""
    from dtkguard.env.chain import problems, records
    from dtkguard.journal.chain import CHAIN
    from dtkguard.journal.layout import layout

    chain = layout(str(venv.python)).journal / CHAIN
    found = problems(chain)
    if len(records(chain)) == 1 and found == [f"{CHAIN}.head is missing"]:
        return []
    return found


def _journal_holds(venv: Venv) -> list[dict]:
    """The transactions `history` lists, after asserting the journal verifies: its chain and
    every transaction, no folder left without a txn.json, no snapshot list left behind."""
    from dtkguard.journal.chain import problems
    from dtkguard.journal.layout import layout

    proc = dtkguard_in(hermetic_env(), "history", "--python", str(venv.python), "--json")
    assert proc.returncode == 0, proc.stderr
    lay = layout(str(venv.python))
    assert problems(lay.journal, [str(r) for r in lay.roots]) == []
    for name in os.listdir(lay.journal):
        folder = lay.journal / name
        if folder.is_dir():
            assert name.isdigit() and (folder / "txn.json").is_file(), sorted(os.listdir(folder))
            assert not (folder / "pre.list").exists(), name
    return json.loads(proc.stdout)


def test_dtkuv_killed_at_every_journal_write_recovers(tmp_path: Path, wheels: Path) -> None:
    venv = make_venv(tmp_path / "venv", pip_version="26.3")
    venv.pip("install", "--no-index", "-f", str(wheels), "first-pkg==1.0")
    py = str(venv.python)
    env = hermetic_env(
        PYTHONPATH=str(REPO), DTKGUARD_UV=uv_binary(), UV_CACHE_DIR=str(tmp_path / "uv")
    )
    install = ["uv", "--python", py, "pip", "install", "--no-index", "-f", str(wheels)]
    install += ["first-pkg==2.0", "later-pkg==1.0"]
    outcomes = []
    for k in range(1, 100):
        proc = subprocess.run(
            [sys.executable, "-c", _KILL_AT, str(k), *install],
            env=env,
            capture_output=True,
            text=True,
        )
        if proc.returncode == 0:  # no K-th write: every boundary was tried
            assert _ours(venv) == AFTER
            break
        assert proc.returncode == -9, proc.stderr
        assert _chain_before_recovery(venv) == [], k
        txns = _journal_holds(venv)  # the next command recovers (rolls back or finishes)
        states = [t["state"] for t in txns]
        assert set(states) <= {"committed", "rolled-back", "undone"}, (k, states)
        if _ours(venv) == AFTER:
            assert txns[-1]["state"] == "committed"
            outcomes.append("committed")
            proc = dtkguard_in(hermetic_env(), "undo", "--python", py, "--yes")
            assert proc.returncode == 0, proc.stderr
        else:
            outcomes.append("rolled back")
        assert _at_start(venv), (k, _ours(venv))  # the change undone byte for byte
        _journal_holds(venv)
    else:
        pytest.fail("dtkuv was killed at 99 journal writes: the loop never ended")
    # a kill before the commit's record rolls back, one after it keeps the change
    assert "rolled back" in outcomes and "committed" in outcomes, outcomes
    assert outcomes == sorted(outcomes, reverse=True), outcomes
    assert _journal_holds(venv)[-1]["state"] == "committed"
