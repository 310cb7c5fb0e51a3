# ruff: noqa: F811  (the `env` fixture is imported, and taken as an argument)
"""`restore` and `undo` remove what goes without a pip run where `recover.remove` can: the
bytes and folders left are exactly what ``pip uninstall -y`` leaves (compared with pip itself
on the same state); anything else (a RECORD row leaving the environment, through ``..`` or a
symlinked folder, byte code the RECORD does not list) is left to pip, and nothing outside the
environment is ever removed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.guard.conftest import Guarded
from tests.guard.test_baseline import env  # noqa: F401  (a new guarded venv, newest pip)
from tests.guard.test_restore import pip_runs, restore
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache

OVERRIDE = hermetic_env(DTKGUARD_OVERRIDE="test: clobber on purpose")


def tree(g: Guarded) -> tuple[dict[str, str], list[str]]:
    """Every file (sha256, byte code included) and every folder of the venv but dtkguard's
    own state and pip's own byte code (running pip writes it): an empty folder pip leaves
    behind counts too."""
    files = {
        k: v
        for k, v in g.venv.snapshot(include_pycache=True).items()
        if not k.startswith("dtkguard/") and not ("/site-packages/pip/" in k and ".pyc" in k)
    }
    dirs = sorted(
        os.path.relpath(os.path.join(top, d), g.venv.path)
        for top, names, _ in os.walk(g.venv.path)
        for d in names
    )
    return files, [d for d in dirs if not d.startswith("dtkguard")]


def differ(a: tuple[dict[str, str], list[str]], b: tuple[dict[str, str], list[str]]) -> list:
    """The files and folders two `tree`s do not share as they are."""
    files = sorted(k for k in set(a[0]) | set(b[0]) if a[0].get(k) != b[0].get(k))
    return files + sorted(set(a[1]) ^ set(b[1]))


def _wheels(tmp_path: Path) -> Path:
    """``nsx`` (a package with a sub-folder, a module in a folder it shares with ``nsy``, a
    console script) and ``nsy`` (the other half of that shared folder)."""
    house = tmp_path / "nsx-wheels"
    build_wheel(
        house,
        "nsx",
        "1.0",
        files={
            "nsx/__init__.py": "X = 1\n",
            "nsx/sub/__init__.py": "",
            "nsx/sub/data.txt": "data\n",
            "shared_ns/x/__init__.py": "",
        },
        entry_points={"console_scripts": {"nsx-cli": "nsx:main"}},
    )
    build_wheel(house, "nsy", "1.0", files={"shared_ns/y/__init__.py": ""})
    return house


def _clobber(g: Guarded, house: Path) -> None:
    """``nsx`` installed with plain pip past the guard, and a file of the user's beside it."""
    args = ["install", "--no-index", "-f", str(house), "--no-deps", "nsx==1.0"]
    assert g.pip(*args, env=OVERRIDE).returncode == 0
    (g.venv.site_packages / "nsx" / "sub" / "mine.txt").write_text("the user's\n")


def test_restore_removes_without_pip_what_pip_uninstall_would(env: Guarded, tmp_path: Path) -> None:
    """Restore, then the same state removed by ``pip uninstall -y``: the same files and
    folders (the user's file and its folders kept, the shared folder kept, the script gone).
    Its undo puts nsx back with pip; the undo of that removes it again without pip."""
    g = env
    house = _wheels(tmp_path)
    assert g.dtkpip("install", "--no-index", "-f", str(house), "nsy==1.0").returncode == 0
    _clobber(g, house)
    assert (g.venv.bin / "nsx-cli").exists()
    proc = restore(g, "-v")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "removed without a pip run: nsx" in proc.stderr
    assert pip_runs(proc) == [], proc.stderr
    ours = tree(g)
    assert not (g.venv.bin / "nsx-cli").exists()
    assert (g.venv.site_packages / "shared_ns" / "y" / "__init__.py").is_file()

    undo = g.dtkguard("undo", "--python", str(g.venv.python), "--yes")
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert (g.venv.bin / "nsx-cli").exists()
    again = g.dtkguard("undo", "--python", str(g.venv.python), "--yes", "-v")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "removed without a pip run: nsx" in again.stderr
    assert differ(tree(g), ours) == []

    _clobber(g, house)
    assert g.pip("uninstall", "-y", "nsx", env=OVERRIDE).returncode == 0
    assert differ(tree(g), ours) == []


@pytest.mark.parametrize("how", ["dot-dot", "symlinked-folder", "stray-byte-code"])
def test_removal_pip_must_do_is_left_to_pip(env: Guarded, tmp_path: Path, how: str) -> None:
    """A RECORD row that leaves the environment (``..``, a symlinked folder) or byte code the
    RECORD does not list: pip uninstalls, and the file outside the environment stays."""
    g = env
    house = _wheels(tmp_path)
    _clobber(g, house)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "keep.txt"
    victim.write_text("not the environment's\n")
    info = next(g.venv.site_packages.glob("nsx-1.0.dist-info"))
    record = info / "RECORD"
    if how == "dot-dot":
        row = os.path.relpath(victim, g.venv.site_packages)
    elif how == "symlinked-folder":
        (g.venv.site_packages / "nsx" / "link").symlink_to(outside)
        row = "nsx/link/keep.txt"
    else:
        stray = g.venv.site_packages / "nsx" / "__pycache__" / "__init__.cpython-00.pyc"
        stray.parent.mkdir(exist_ok=True)
        stray.write_bytes(b"")
        row = None
    if row is not None:
        record.write_text(record.read_text() + f"{row},,\n")
    proc = restore(g, "-v")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "removed without a pip run" not in proc.stderr
    assert pip_runs(proc) == ["pip uninstall"], proc.stderr
    assert victim.read_text() == "not the environment's\n"
    assert not info.exists()
