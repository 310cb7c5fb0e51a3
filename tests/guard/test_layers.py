"""guard install/status/remove: layers written atomically, status, exact removal; uv."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.support.cache import PIP_VERSIONS
from tests.support.venvs import hermetic_env, make_venv

pytestmark = pytest.mark.wheel_cache


def test_install_status_remove_round_trip(
    tmp_path: Path, guard_policy: Path, wheel_cache: Path
) -> None:
    venv = make_venv(tmp_path / "venv", pip_version=PIP_VERSIONS[-1])
    conf = venv.path / "pip.conf"
    conf.write_text("[global]\ntimeout = 60\n")
    g = Guarded(venv, guard_policy, [], tmp_path)
    before = venv.snapshot()
    py = str(venv.python)
    assert (
        g.dtkguard("guard", "status", "--python", py, "--policy", str(guard_policy)).returncode == 1
    )
    proc = g.dtkguard("guard", "install", "--python", py, "--policy", str(guard_policy))
    assert proc.returncode == 0, proc.stderr
    text = conf.read_text()
    assert "timeout = 60" in text and "constraint = " in text and "find-links" in text
    constraints = (venv.path / "dtkguard" / "constraints.txt").read_text()
    assert f"torch=={TORCH}\n" in constraints
    # idempotent
    again = g.dtkguard("guard", "install", "--python", py, "--policy", str(guard_policy))
    assert again.returncode == 0 and "written" not in again.stdout
    status = g.dtkguard("guard", "status", "--python", py)
    assert status.returncode == 0, status.stdout
    # every layer (the store pointer, the protected set's, the ELF reader's, the RECORD
    # module's, the site facts', the build watch's and the override log's copies too) and the
    # baseline
    assert status.stdout.count("present") == 17
    # the site pip.conf is what `pip --isolated` still reads
    env = hermetic_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    env.pop("PIP_CONFIG_FILE")
    listed = subprocess.run(
        [py, "-m", "pip", "--isolated", "config", "list"], env=env, capture_output=True, text=True
    )
    assert "site:install.constraint" in listed.stdout or "install.constraint" in listed.stdout
    # an edited guard file is reported as tampered
    (venv.path / "dtkguard" / "constraints.txt").write_text("# edited\n")
    stale = g.dtkguard("guard", "status", "--python", py)
    assert stale.returncode == 1 and "tampered" in stale.stdout
    (venv.path / "dtkguard" / "constraints.txt").write_text(constraints)
    removed = g.dtkguard("guard", "remove", "--python", py)
    assert removed.returncode == 0, removed.stderr
    assert changed(before, venv.snapshot()) == []
    assert conf.read_text() == "[global]\ntimeout = 60\n"


def test_externally_managed_refuses_a_venv(guarded: Guarded) -> None:
    py = str(guarded.venv.python)
    proc = guarded.dtkguard("guard", "install", "--python", py, "--externally-managed")
    assert proc.returncode == 2 and "virtual environment" in proc.stderr


def test_uv_is_stopped_after_guard_install_uv(
    guarded: Guarded, tmp_path: Path, uv: str, public_dir: Path
) -> None:
    py = str(guarded.venv.python)
    uv_config = tmp_path / "uv.toml"
    proc = guarded.dtkguard(
        "guard",
        "install",
        "--python",
        py,
        "--policy",
        str(guarded.policy),
        "--uv",
        "--uv-config",
        str(uv_config),
    )
    assert proc.returncode == 0, proc.stderr
    assert f'"torch=={TORCH}"' in uv_config.read_text()
    before = guarded.venv.snapshot()
    env = hermetic_env(UV_CONFIG_FILE=str(uv_config), UV_CACHE_DIR=str(tmp_path / "uvcache"))
    env.pop("UV_NO_CONFIG")
    run = subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--python",
            py,
            "--offline",
            "--no-index",
            "--find-links",
            str(public_dir),
            "vllm==0.9.2",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0, run.stdout + run.stderr
    assert "+das.opt1.dtk25041" in run.stderr  # the guard's constraint is what stopped it
    # uv takes an (empty) lock file in the venv root on every run, even a refused one
    assert changed(before, guarded.venv.snapshot()) in ([], [".lock"])
    assert guarded.venv.installed()["torch"] == TORCH
