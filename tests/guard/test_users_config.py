"""Every command a user types in a guarded env that runs pip or uv itself, with the env's own
``pip.conf`` and ``uv.toml`` read (`users_env`), as on a user's machine.

The rest of the suite runs pip with ``PIP_CONFIG_FILE=/dev/null`` and uv with ``UV_NO_CONFIG=1``,
so the vendor pins `guard install` writes there (``constraint``, the vendor find-links, uv's
``constraint-dependencies``) are never read in it. Here they are: the README's recovery recipe
after a clobber by hand (`restore`, `undo`, `restore --to guard-install`), `restore` keeping
what an approved override brought, `guard install`/`status`/`remove` again over a pip.conf that
already exists (the user's own, merged), `dtkpip install`/`uninstall`, the uv shim, and `lock`
(which takes the public index from the guarded env's pip.conf, and only that: the vendor pins
and sources come from the policy).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, _build
from tests.guard.test_recovery import baseline_of, import_torch
from tests.guard.test_restore import verify_clean
from tests.support.cache import PIP_VERSIONS, uv_binary
from tests.support.index import IndexServer
from tests.support.venvs import users_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache


@pytest.fixture
def env(tmp_path: Path, request: pytest.FixtureRequest) -> Guarded:
    """A new guarded venv, newest pip, whose vendor builds have their requirements (as
    `tests/guard/test_recovery.py`'s)."""
    inputs = ("guard_policy", "vendor_wheelhouse", "public_dir", "extra_wheelhouse")
    values = (request.getfixturevalue(n) for n in inputs)
    return _build(tmp_path / "venv", PIP_VERSIONS[-1], *values, with_vllm=False)


def _users(tmp_path: Path, **extra: str) -> dict[str, str]:
    """`users_env` with the real uv on PATH (the shim finds it there) and a cache of its own."""
    uv = uv_binary()
    return users_env(
        tmp_path,
        UV_CACHE_DIR=str(tmp_path / "uv-cache"),
        PATH=f"{Path(uv).parent}:/usr/bin:/bin",
        **extra,
    )


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, capture_output=True, text=True)


def _by_hand_with_pip(g: Guarded, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Plain pip, the pins of pip.conf lifted by hand (`PIP_CONSTRAINT=/dev/null`: an empty
    value would lift nothing), the hook let through."""
    env = _users(tmp_path, PIP_CONSTRAINT=os.devnull, DTKGUARD_OVERRIDE="test: by hand")
    return g.pip("install", *g.index_args, "--no-deps", "torch==2.7.0", env=env)


def _by_hand_with_uv(g: Guarded, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The real uv, not the env's shim, reading no config at all."""
    cmd = [uv_binary(), "pip", "install", "--no-config", "--python", str(g.venv.python)]
    return _run([*cmd, *g.index_args, "--no-deps", "torch==2.7.0"], _users(tmp_path))


@pytest.mark.parametrize("clobber", [_by_hand_with_pip, _by_hand_with_uv], ids=["pip", "uv"])
def test_restore_undo_and_restore_to_guard_install_after_a_clobber_by_hand(
    env: Guarded, tmp_path: Path, clobber: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    g, py = env, str(env.venv.python)
    assert "constraint" in (g.venv.path / "pip.conf").read_text()
    user = _users(tmp_path)
    guarded = g.venv.installed()
    proc = clobber(g, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert g.venv.installed()["torch"] == "2.7.0"

    proc = g.dtkguard("restore", "--python", py, "--yes", env=user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"check: {py} matches its baseline again" in proc.stdout + proc.stderr
    assert g.venv.installed() == guarded
    verify_clean(g)
    assert import_torch(g) == ""

    proc = g.dtkguard("undo", "--python", py, "--override", "look at it again", "--yes", env=user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert g.venv.installed()["torch"] == "2.7.0"

    proc = g.dtkguard("restore", "--python", py, "--to", "guard-install", "--yes", env=user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert g.venv.installed() == guarded
    verify_clean(g)
    assert import_torch(g) == ""


def test_restore_keeps_what_an_approved_override_brought(env: Guarded, tmp_path: Path) -> None:
    """`dtkpip --override` of a pinned conflict runs (the pins of pip.conf lifted too); the
    restore after it puts the vendor builds back and keeps what the policy allows of it."""
    g, py = env, str(env.venv.python)
    user = _users(tmp_path)
    proc = g.dtkpip("--override", "hotfix INC-2", "install", *g.index_args, "vllm==0.9.2", env=user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    clobbered = g.venv.installed()
    assert clobbered["vllm"] == "0.9.2" and clobbered["torch"] == "2.7.0"
    assert "fastapi" in baseline_of(g)["dists"]

    plan = g.dtkguard("restore", "--python", py, "--dry-run", env=user)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "fastapi" not in plan.stdout and "not through dtkpip or dtkuv" not in plan.stdout
    proc = g.dtkguard("restore", "--python", py, "--yes", env=user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    have = g.venv.installed()
    assert "vllm" not in have and have["torch"] == TORCH
    assert have["fastapi"] == clobbered["fastapi"]  # approved, allowed: kept
    verify_clean(g)
    assert import_torch(g) == ""


def test_guard_again_over_the_users_pip_conf_then_its_installers_and_lock(
    build_guarded: Callable[..., Guarded], tmp_path: Path, public_index: IndexServer
) -> None:
    """The user's own pip.conf names their index: `guard install` merges it (twice: the same
    bytes), `guard status` sees every layer, `dtkpip` and the uv shim install, skip and refuse
    with it and the guard's pins read, `lock` takes that index from it, and `guard remove`
    gives the user's file back byte for byte."""
    g = build_guarded(tmp_path / "venv", with_vllm=False)
    py, user = str(g.venv.python), _users(tmp_path)
    conf = g.venv.path / "pip.conf"
    assert g.dtkguard("guard", "remove", "--python", py, env=user).returncode == 0
    assert not conf.exists()
    mine = tmp_path / "my-wheels"
    build_wheel(mine, "mine", "1.0")
    build_wheel(mine, "mine", "2.0")
    (tmp_path / "my-pins.txt").write_text("mine==1.0\n")
    own = (
        f"[global]\nindex-url = {public_index.url}\ntimeout = 7\n"
        f"constraint = {tmp_path / 'my-pins.txt'}\n\n[install]\nfind-links = {mine}\n"
    )
    conf.write_text(own)
    install = ["guard", "install", "--python", py, "--policy", str(g.policy), "--uv"]
    proc = g.dtkguard(*install, env=user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    merged = conf.read_text()
    assert f"index-url = {public_index.url}" in merged and str(mine) in merged, merged
    shim = g.venv.bin / "uv"
    uv_toml = g.venv.path / "uv.toml"
    assert f"UV_CONFIG_FILE={uv_toml}" in shim.read_text()
    written = uv_toml.read_text()
    again = g.dtkguard(*install, env=user)
    assert again.returncode == 0 and "written" not in again.stdout, again.stdout + again.stderr
    assert conf.read_text() == merged and uv_toml.read_text() == written
    status = g.dtkguard("guard", "status", "--python", py, env=user)
    assert status.returncode == 0, status.stdout + status.stderr

    before = g.venv.installed()
    assert not {"six", "pytz", "mine"} & set(before)
    proc = g.dtkpip("install", "six", env=user)  # from the user's index, as typed
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert g.venv.installed() == {**before, "six": "1.17.0"}
    assert public_index.requests
    # the user's own find-links and constraint still count beside the guard's
    proc = g.dtkpip("install", "mine", env=user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert g.venv.installed()["mine"] == "1.0"
    proc = _run([str(shim), "pip", "install", *g.index_args, "pytz"], user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert g.venv.installed()["pytz"] == "2026.6"
    have = g.venv.installed()
    proc = g.dtkpip("install", "pytz", env=user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "already satisfied" in proc.stdout, proc.stdout
    proc = g.dtkpip("uninstall", "-y", "torch", env=user)
    assert proc.returncode == 1 and "nothing was removed" in proc.stderr, proc.stderr
    assert f"torch {TORCH} is a vendor build" in proc.stderr
    assert g.venv.installed() == have

    public_index.clear()
    out = tmp_path / "pylock.six.toml"
    lock = ["lock", "six", "--python", py, "--policy", str(g.policy), "-o", str(out)]
    proc = g.dtkguard(*lock, env=user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = f"dtkguard: public index (from pip's configuration): {public_index.url}"
    assert said in proc.stderr, proc.stderr
    assert public_index.requests
    text = out.read_text()
    assert 'name = "six"' in text and public_index.url.split("/simple")[0] in text, text

    proc = g.dtkguard("guard", "remove", "--python", py, env=user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert conf.read_text() == own
    assert not uv_toml.exists() and not shim.exists()
    assert g.venv.installed() == have and have["torch"] == TORCH
