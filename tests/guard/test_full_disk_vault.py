"""`guard install --vault` as the disk fills (the env and the guard's store, vault included, on
one small tmpfs): one line, nothing left to restore, the guard as it was and its manifest
current (`guard status` passes), no half-written wheel in the vault, `history` readable."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.hostile.test_full_disk import _fill
from tests.support.mounts import mount
from tests.support.stores import store_env

pytestmark = pytest.mark.wheel_cache


@pytest.mark.parametrize("leave", [0, 12 << 10, 24 << 10], ids=["full", "12KiB", "24KiB"])
def test_guard_install_vault_on_a_full_disk(
    tmp_path: Path, mounts: list[Path], build_guarded, leave: int
) -> None:
    point = tmp_path / "disk"
    point.mkdir()
    mount(mounts, "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(point))
    with store_env(point / "store"):
        g = build_guarded(point / "venv")
        py = str(g.venv.python)
        _fill(point, leave)
        proc = g.dtkguard("guard", "install", "--python", py, "--policy", str(g.policy), "--vault")
        assert proc.returncode in (0, 3), proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
        if proc.returncode:
            errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("dtkguard")]
            assert len(errors) == 1 and "No space left" in errors[0], proc.stderr
            assert "could not restore" not in errors[0]
            assert "None" not in errors[0]
        status = g.dtkguard("guard", "status", "--python", py)
        assert status.returncode == 0, status.stdout + status.stderr
        hist = g.dtkguard("history", "--python", py)
        assert hist.returncode == 0 and "Traceback" not in hist.stderr, hist.stderr
        vault = g.store.vault
        if vault.exists():
            assert not (vault / ".stage").exists()
            index = vault / "vault.json"
            entries = json.loads(index.read_text())["wheels"] if index.exists() else {}
            for name, entry in entries.items():
                assert hashlib.sha256((vault / name).read_bytes()).hexdigest() == entry["sha256"]


@pytest.mark.parametrize("command", ["guard-remove", "restore"])
def test_guard_remove_and_restore_on_a_full_disk(
    tmp_path: Path, mounts: list[Path], build_guarded, command: str
) -> None:
    """`guard remove` and `restore` (after a vendor build was replaced) when nothing is left
    on the disk: no traceback, one line when refused, the guard either whole or gone (never
    half), `history` readable."""
    from tests.hostile.test_full_disk import _tree

    point = tmp_path / "disk"
    point.mkdir()
    mount(mounts, "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(point))
    with store_env(point / "store"):
        g = build_guarded(point / "venv", with_vllm=False)
        py = str(g.venv.python)
        if command == "restore":
            torch = next(g.venv.site_packages.glob("torch/__init__.py"))
            torch.write_text(torch.read_text() + "# changed\n")
        before = _tree(g.venv)
        _fill(point, 0)
        argv = ["guard", "remove"] if command == "guard-remove" else ["restore", "-y"]
        proc = g.dtkguard(*argv, "--python", py)
        assert "Traceback" not in proc.stderr, proc.stdout + proc.stderr
        if proc.returncode:
            errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("dtkguard")]
            assert errors and len(errors) <= 2, proc.stderr
        status = g.dtkguard("guard", "status", "--python", py)
        assert "Traceback" not in status.stderr, status.stderr
        if command == "guard-remove" and proc.returncode:
            assert _tree(g.venv) == before  # refused: nothing removed
            assert status.returncode == 0, status.stdout
        hist = g.dtkguard("history", "--python", py)
        assert hist.returncode == 0 and "Traceback" not in hist.stderr, hist.stderr
