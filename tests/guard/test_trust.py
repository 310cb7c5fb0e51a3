"""No world-writable guard: under ``umask 000`` `guard install` makes its folder and files
without group/other write; a policy another user could have replaced is refused by the pip
hook (fail closed) and shown ``unsafe`` by `guard status`."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import Guarded
from tests.support.cli import REPO
from tests.support.venvs import hermetic_env

pytestmark = pytest.mark.wheel_cache


def _umask_000() -> None:
    os.umask(0)


def test_umask_000_install_leaves_nothing_writable_by_others(
    tmp_path: Path, build_guarded: Callable[..., Guarded]
) -> None:
    import subprocess
    import sys

    old = os.umask(0)  # the venv and the guard are made under umask 000
    try:
        g = build_guarded(tmp_path / "venv")
    finally:
        os.umask(old)
    # install again under umask 000 in a subprocess too (what a user's shell would do)
    proc = subprocess.run(
        [sys.executable, "-m", "dtkguard", "guard", "install", "--python", str(g.venv.python),
         "--policy", str(g.policy)],
        env=hermetic_env(PYTHONPATH=str(REPO)), capture_output=True, text=True,
        preexec_fn=_umask_000,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    state = g.venv.path / "dtkguard"
    guard_files = [state, *state.iterdir()]
    guard_files += [p for p in g.venv.site_packages.iterdir() if "dtkguard" in p.name]
    guard_files += list((g.venv.site_packages / "__pycache__").glob("_dtkguard*"))
    loose = {str(p): oct(stat.S_IMODE(p.lstat().st_mode)) for p in guard_files
             if not p.is_symlink() and p.lstat().st_mode & 0o022}  # fmt: skip
    assert loose == {}
    status = g.dtkguard("guard", "status", "--python", str(g.venv.python))
    assert status.returncode == 0, status.stdout + status.stderr


@pytest.mark.parametrize("what", ["policy-file", "state-folder"])
def test_a_policy_others_could_write_is_refused(
    tmp_path: Path, build_guarded: Callable[..., Guarded], what: str
) -> None:
    g = build_guarded(tmp_path / "venv")
    state = g.venv.path / "dtkguard"
    target = state / "policy.json" if what == "policy-file" else state
    target.chmod(0o777 if target.is_dir() else 0o666)
    status = g.dtkguard("guard", "status", "--python", str(g.venv.python))
    assert status.returncode == 1 and "unsafe" in status.stdout, status.stdout
    proc = g.pip("install", "--no-index", "-f", str(g.extra), "pins-torch==1.0")
    assert proc.returncode != 0
    assert "cannot be trusted" in proc.stderr and "writable by others" in proc.stderr
    assert "pins-torch" not in g.venv.installed()


def _loose(top: Path) -> dict[str, str]:
    """Every folder and file under ``top`` (itself too) that group or others may write."""
    out = {}
    for path in [top, *top.rglob("*")]:
        st = path.lstat()
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o022:
            out[str(path.relative_to(top.parent))] = oct(stat.S_IMODE(st.st_mode))
    return out


def test_umask_000_store_cache_and_guarded_list_stay_private(
    tmp_path: Path, build_guarded: Callable[..., Guarded]
) -> None:
    """The neighbours of `guard install`'s own files: what dtkpip's journal, the vault, the
    hook's records, dtkguard's caches (compiled policies, interpreter facts, metadata) and the
    guarded list write under ``umask 000`` is not writable by group or others either, even
    where the store itself is 0700 (a store given by ``DTKGUARD_STORE`` may not be)."""
    store = Path(os.environ["DTKGUARD_STORE"])
    cache = tmp_path / "cache"
    state = Path(os.environ["XDG_STATE_HOME"])
    env = hermetic_env(DTKGUARD_CACHE_DIR=str(cache))
    old = os.umask(0)
    try:
        g = build_guarded(tmp_path / "venv")
        py = str(g.venv.python)
        proc = g.dtkguard("guard", "install", "--python", py, "--policy", str(g.policy),
                          "--vault", env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        proc = g.dtkpip("install", *g.index_args, "pins-torch==1.0", env=env)
        assert proc.returncode == 0, proc.stderr
        assert g.dtkguard("check", "--python", py, env=env).returncode == 0
        assert g.dtkguard("history", "--python", py, env=env).returncode == 0
    finally:
        os.umask(old)
    assert list((g.store.dir / "journal").iterdir())  # the journal was written
    loose = {**_loose(store / "envs"), **_loose(cache), **_loose(state / "dtkguard")}
    assert loose == {}


@pytest.mark.parametrize("what", ["policy.json", "baseline.json"])
@pytest.mark.parametrize("kind", ["fifo", "deep", "list"])
def test_a_hostile_state_file_stops_plain_pip_without_a_hang_or_a_traceback(
    tmp_path: Path, build_guarded: Callable[..., Guarded], what: str, kind: str
) -> None:
    """The hook's own reads of the compiled policy copy (in the env) and the store's baseline:
    a FIFO there blocked pip forever, 100,000-deep nesting was a RecursionError inside pip."""
    g = build_guarded(tmp_path / "venv", with_vllm=False)
    path = (g.venv.path / "dtkguard" if what == "policy.json" else g.store.dir) / what
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path, 0o644)
    else:
        path.write_text("[" * 100_000 + "]" * 100_000 if kind == "deep" else "[]")
    import subprocess

    proc = subprocess.run(
        [str(g.venv.bin / "pip"), "install", "--no-index", "-f", str(g.extra),
         "--no-deps", "pins-torch==1.0"],
        env=hermetic_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, proc.stderr
    if what == "policy.json":
        assert proc.returncode != 0 and "pins-torch" not in g.venv.installed(), proc.stderr
