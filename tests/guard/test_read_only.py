"""`guard remove` on a read-only file system removes nothing (a half-removed guard guards
nothing and cannot be removed again): exit 3, one line, the guard intact."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.hostile.test_full_disk import _tree
from tests.support.mounts import mount

pytestmark = pytest.mark.wheel_cache


def test_guard_remove_on_a_read_only_env_removes_nothing(
    tmp_path: Path, mounts: list[Path], build_guarded
) -> None:
    point = tmp_path / "disk"
    point.mkdir()
    mount(mounts, "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(point))
    g = build_guarded(point / "venv")
    before = _tree(g.venv)
    subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
    try:
        proc = g.dtkguard("guard", "remove", "--python", str(g.venv.python))
        assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
        assert "nothing was removed" in proc.stderr
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(point)], check=True)
    assert _tree(g.venv) == before
    status = g.dtkguard("guard", "status", "--python", str(g.venv.python))
    assert status.returncode == 0, status.stdout
