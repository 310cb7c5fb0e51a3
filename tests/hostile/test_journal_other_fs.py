"""The env on another file system than the guard's store (no hard link can be made): the
journal copies only the files of the distributions the change touches, never the whole
site-packages, within its budget; past the budget nothing changes (one line, exit 1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.hostile.test_full_disk import _tree
from tests.support.cli import dtkguard_in
from tests.support.mounts import mount
from tests.support.venvs import hermetic_env, make_venv
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache


@pytest.fixture
def other_fs(tmp_path: Path, mounts: list[Path]) -> Path:
    point = tmp_path / "disk"
    point.mkdir()
    mount(mounts, "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(point))
    return point


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    dest = tmp_path / "wheels"
    for version in ("1.0", "2.0"):
        files = {"small_pkg/__init__.py": f"V = {version!r}\n", "small_pkg/data.txt": "x" * 100}
        build_wheel(dest, "small-pkg", version, files=files)
    return dest


def _saved(store: Path) -> list[Path]:
    """Files the journal's transactions keep (``NNNN/pre/N``: copies here), not its records."""
    return [p for p in store.glob("envs/*/journal/*/pre/*") if p.is_file()]


def test_the_journal_copies_only_what_the_change_touches(other_fs: Path, tmp_path: Path, wheels):
    venv = make_venv(other_fs / "venv", pip_version="26.3")
    py = str(venv.python)
    store = tmp_path / "store"  # on the test's file system, not the tmpfs
    assert os.stat(store.parent).st_dev != os.stat(venv.path).st_dev
    env = hermetic_env(DTKGUARD_STORE=str(store))
    args = ["pip", "--python", py, "install", "--no-index", "-f", str(wheels)]
    first = dtkguard_in(env, *args, "small-pkg==1.0")
    assert first.returncode == 0, first.stderr
    site_files = sum(1 for p in venv.site_packages.rglob("*") if p.is_file())
    assert site_files > 500  # pip itself: what a whole-site snapshot would copy
    upgrade = dtkguard_in(env, *args, "small-pkg==2.0")
    assert upgrade.returncode == 0, upgrade.stderr
    saved = _saved(store)
    assert 0 < len(saved) <= 12, [str(p) for p in saved]  # small-pkg 1.0's few files
    assert all(p.stat().st_nlink == 1 for p in saved)  # copies: no link across file systems
    undo = dtkguard_in(env, "undo", "--python", py, "--yes")
    assert undo.returncode == 0, undo.stderr
    assert (venv.site_packages / "small_pkg/__init__.py").read_text() == "V = '1.0'\n"


def test_past_the_budget_nothing_changes(other_fs: Path, tmp_path: Path, wheels):
    venv = make_venv(other_fs / "venv", pip_version="26.3")
    py = str(venv.python)
    env = hermetic_env(DTKGUARD_STORE=str(tmp_path / "store"))
    args = ["pip", "--python", py, "install", "--no-index", "-f", str(wheels)]
    assert dtkguard_in(env, *args, "small-pkg==1.0").returncode == 0
    before = _tree(venv)
    tight = {**env, "DTKGUARD_JOURNAL_BUDGET": "10"}
    proc = dtkguard_in(tight, *args, "small-pkg==2.0")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("dtkguard")]
    assert len(errors) == 1 and "over the journal's budget of 10 bytes" in errors[0], errors
    assert _tree(venv) == before
    hist = dtkguard_in(env, "history", "--python", py)
    assert hist.returncode == 0 and "Traceback" not in hist.stderr, hist.stderr
