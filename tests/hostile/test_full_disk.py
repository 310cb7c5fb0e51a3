"""A full or read-only disk during a journalled change loses nothing: one line, the env
exactly as before, `history` readable, on a real small tmpfs (the env and the guard's store on
it: the worst case, nothing left for the journal either)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import dtkguard_in
from tests.support.mounts import mount
from tests.support.venvs import Venv, hermetic_env, make_venv
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache


@pytest.fixture
def disk(tmp_path: Path, mounts: list[Path]) -> Path:
    point = tmp_path / "disk"
    point.mkdir()
    mount(mounts, "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(point))
    return point


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    dest = tmp_path / "wheels"
    build_wheel(dest, "small-pkg", "1.0", files={"small_pkg/__init__.py": "S = 1\n"})
    big = {"big_pkg/__init__.py": "B = 1\n", "big_pkg/data.bin": os.urandom(12 << 20)}
    build_wheel(dest, "big-pkg", "1.0", files=big)
    return dest


def _fill(disk: Path, leave: int) -> None:
    """Allocate all but ``leave`` bytes of the file system (real blocks, not a sparse file)."""
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    if free > leave:
        subprocess.run(["fallocate", "-l", str(free - leave), str(disk / "filler")], check=True)


def _tree(venv: Venv) -> dict[str, int]:
    """{path: size} of the env's files but byte code (pip's own run compiles pip)."""
    out = {}
    for dirpath, _, names in os.walk(venv.path):
        if "__pycache__" in dirpath:
            continue
        for name in names:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, venv.path)] = os.lstat(path).st_size
    return out


def _run(disk: Path, *args: str):
    return dtkguard_in(hermetic_env(DTKGUARD_STORE=str(disk / "store")), *args)


@pytest.mark.parametrize("leave", [4 << 20, 1 << 20, 0], ids=["4MiB", "1MiB", "full"])
def test_dtkpip_on_a_full_disk_rolls_back(disk: Path, wheels: Path, leave: int) -> None:
    venv = make_venv(disk / "venv", pip_version="26.3")
    py = str(venv.python)
    assert _run(disk, "history", "--python", py).returncode == 0  # the store exists
    before = _tree(venv)
    _fill(disk, leave)
    proc = _run(disk, "pip", "--python", py, "install", "--no-index", "-f", str(wheels),
                "small-pkg", "big-pkg")  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("dtkguard")]
    assert len(errors) == 1 and ("rolled back" in errors[0] or "cannot" in errors[0]), errors
    assert _tree(venv) == before
    hist = _run(disk, "history", "--python", py)
    assert hist.returncode == 0 and "Traceback" not in hist.stderr, hist.stderr
    undo = _run(disk, "undo", "--python", py)
    assert undo.returncode == 1 and "Traceback" not in undo.stderr, undo.stderr
    assert _tree(venv) == before


def test_dtkpip_and_history_on_a_read_only_env(disk: Path, wheels: Path) -> None:
    venv = make_venv(disk / "venv", pip_version="26.3")
    py = str(venv.python)
    store = disk.parent / "store"
    env = hermetic_env(DTKGUARD_STORE=str(store))
    before = _tree(venv)
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    try:
        proc = dtkguard_in(env, "pip", "--python", py, "install", "--no-index", "-f",
                           str(wheels), "small-pkg")  # fmt: skip
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
        hist = dtkguard_in(env, "history", "--python", py)
        assert hist.returncode == 0 and "Traceback" not in hist.stderr, hist.stderr
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)
    assert _tree(venv) == before


@pytest.mark.parametrize("leave", [4 << 20, 1 << 20], ids=["4MiB", "1MiB"])
def test_dtkuv_on_a_full_disk_rolls_back(
    disk: Path, wheels: Path, leave: int, tmp_path: Path
) -> None:
    """uv's install as the disk fills: one line, the env exactly as before, history readable."""
    venv = make_venv(disk / "venv", with_pip=False)
    py = str(venv.python)
    env = hermetic_env(DTKGUARD_STORE=str(disk / "store"), UV_CACHE_DIR=str(tmp_path / "uv"))
    assert dtkguard_in(env, "history", "--python", py).returncode == 0
    before = _tree(venv)
    _fill(disk, leave)
    proc = dtkguard_in(env, "uv", "--python", py, "pip", "install", "--no-index", "-f",
                       str(wheels), "small-pkg", "big-pkg")  # fmt: skip
    assert proc.returncode != 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert _tree(venv) == before
    hist = dtkguard_in(env, "history", "--python", py)
    assert hist.returncode == 0 and "Traceback" not in hist.stderr, hist.stderr


def test_undo_on_a_full_disk_changes_nothing_or_all(disk: Path, wheels: Path) -> None:
    """`undo` of an uninstall (the files come back from the journal) on a full disk: either
    the whole undo or nothing, one line, history readable."""
    venv = make_venv(disk / "venv", pip_version="26.3")
    py = str(venv.python)
    args = ["--no-index", "-f", str(wheels)]
    assert _run(disk, "pip", "--python", py, "install", *args, "big-pkg").returncode == 0
    installed = _tree(venv)
    proc = _run(disk, "pip", "--python", py, "uninstall", "-y", "big-pkg")
    assert proc.returncode == 0, proc.stderr
    removed = _tree(venv)
    _fill(disk, 0)
    proc = _run(disk, "undo", "-y", "--python", py)
    assert "Traceback" not in proc.stderr, proc.stderr
    now = _tree(venv)
    if proc.returncode == 0:
        assert {k for k in installed if "__pycache__" not in k} <= set(now), proc.stderr
    else:
        errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("dtkguard")]
        assert len(errors) == 1, proc.stderr
        assert now == removed
    hist = _run(disk, "history", "--python", py)
    assert hist.returncode == 0 and "Traceback" not in hist.stderr, hist.stderr


def test_a_rollback_that_cannot_finish_yet_is_finished_later(disk: Path, wheels: Path) -> None:
    """A killed dtkpip, then the env's file system read-only: `history` says in one line that
    the rollback cannot finish yet and still lists the journal (exit 0); once writable again,
    the next `history` rolls the env back."""
    from tests.guard.test_journal_faults import _KILLED, REPO

    venv = make_venv(disk / "venv", pip_version="26.3")
    py = str(venv.python)
    env = hermetic_env(DTKGUARD_STORE=str(disk.parent / "store"))
    before = _tree(venv)
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED, py, "small-pkg", "-f", str(wheels), "small-pkg"],
        env=hermetic_env(PYTHONPATH=str(REPO), DTKGUARD_STORE=env["DTKGUARD_STORE"]),
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == -9, proc.stderr
    assert _tree(venv) != before
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    try:
        hist = dtkguard_in(env, "history", "--python", py)
        assert hist.returncode == 0 and "Traceback" not in hist.stderr, hist.stderr
        assert "cannot finish rolling back" in hist.stderr, hist.stderr
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)
    hist = dtkguard_in(env, "history", "--python", py)
    assert hist.returncode == 0 and "rolling the environment back" in hist.stderr, hist.stderr
    assert _tree(venv) == before
