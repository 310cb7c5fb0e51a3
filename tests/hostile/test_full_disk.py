"""A full or read-only disk during a journalled change loses nothing: one line, the env
exactly as before, `history` readable, on a real small tmpfs (the env and the guard's store on
it: the worst case, nothing left for the journal either)."""

from __future__ import annotations

import os
import subprocess
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
