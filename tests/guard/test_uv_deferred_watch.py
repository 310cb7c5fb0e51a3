"""dtkuv compares the vendor builds' files once per run, not after every uv dry run.

After a dry run only what runs when uv next starts the interpreter is compared (the protected
set and the site folders' entries); the vendor files are compared after the real run (inside
its transaction) or, when no real run follows (uv failed, a veto, nothing to do), before dtkuv
returns. A build that rewrote only vendor files while uv planned is still refused and put
back, on both ends: real uv, a real PEP 517 backend, byte-identical venvs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.guard.test_build_journal import write_evil_sdist
from tests.guard.test_uv_index_effects import _dtkuv

pytestmark = pytest.mark.wheel_cache


def _vendor_only_sdist(g: Guarded, dest: Path, requires: str = "") -> tuple[Path, Path, Path]:
    """An sdist whose backend, when uv imports it to plan, rewrites torch/__init__.py in place
    (same size, same mtime) and plants torch/_planted.py: no protected file, no site entry."""
    target = g.venv.site_packages / "torch" / "__init__.py"
    plant = g.venv.site_packages / "torch" / "_planted.py"
    path = write_evil_sdist(dest, [target], [plant], requires=requires)
    return path, target, plant


@pytest.mark.parametrize("ending", ["real-run", "uv-fails", "veto"])
def test_a_dry_run_build_that_changes_only_vendor_files_is_refused_and_put_back(
    fresh: Guarded, uv: str, tmp_path: Path, ending: str
) -> None:
    """real-run: uv's real run follows and its judgement finds the change; uv-fails: the
    sdist needs a package no index has, so uv's plan fails after the build ran; veto: the
    sdist needs the community torch, so dtkuv vetoes. Each: exit 1, the change put back in place."""
    g = fresh
    requires = {"real-run": "", "uv-fails": "no-such-dist-anywhere", "veto": "torch==2.4.1"}
    sdist, target, plant = _vendor_only_sdist(g, tmp_path / "src", requires[ending])
    before = g.venv.snapshot()
    inode = os.stat(target).st_ino
    args = ["install", *g.index_args, str(sdist)]
    if ending == "real-run":
        args.insert(1, "--no-deps")
    proc = _dtkuv(g, tmp_path / "cache", uv, *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "vendor-files-changed" in proc.stderr, proc.stderr
    assert "the guard put back what uv changed" in proc.stderr, proc.stderr
    assert changed(before, g.venv.snapshot()) == []
    assert not plant.exists()
    assert os.stat(target).st_ino == inode  # put back in place
    assert "evilbuild" not in g.venv.installed()
    assert g.venv.installed()["torch"] == TORCH
    check = g.dtkguard("check", "--python", str(g.venv.python))
    assert check.returncode == 0, check.stdout + check.stderr
