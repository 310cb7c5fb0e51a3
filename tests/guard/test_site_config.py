"""The guarded env's own installer config, read as a user's pip and uv read it.

`guard install` writes the vendor pins into the environment's ``pip.conf`` (and, with
``--uv``, its ``uv.toml``, which the env's uv shim names). The rest of the suite runs pip with
``PIP_CONFIG_FILE=/dev/null`` and uv with ``UV_NO_CONFIG=1``, so neither file is ever read
there. These cases let pip and uv read them (and nothing of this machine's: the user and
system config folders are the test's own), as on a user's machine: the plan that explains a
veto and the run an override approves are planned without the vendor pins, those files'
included.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.support.cache import uv_binary
from tests.support.venvs import users_env

pytestmark = pytest.mark.wheel_cache


def test_dtkpip_explains_a_veto_with_the_site_pip_conf_read(
    guarded: Guarded, tmp_path: Path
) -> None:
    conf = (guarded.venv.path / "pip.conf").read_text()
    assert "constraint" in conf  # the vendor pins are in the env's own pip.conf
    env = users_env(tmp_path)
    before = guarded.venv.snapshot()
    proc = guarded.dtkpip("install", *guarded.index_args, "vllm==0.9.2", env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    text = proc.stderr
    assert "nothing was installed or removed" in text, text
    assert "with or without the vendor builds" not in text, text
    assert (
        f"replace the vendor build torch {TORCH} with torch 2.7.0 (a community CUDA build)" in text
    ), text
    assert "vllm 0.9.2 needs torch==2.7.0" in text
    assert changed(before, guarded.venv.snapshot()) == []


def test_dtkpip_override_lifts_the_site_pip_conf_pins(fresh: Guarded, tmp_path: Path) -> None:
    env = users_env(tmp_path)
    proc = fresh.dtkpip(
        "--override", "community torch for a CPU test",
        "install", *fresh.index_args, "--no-deps", "torch==2.7.0",
        env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fresh.venv.installed()["torch"] == "2.7.0"


def test_the_uv_shim_plans_and_overrides_without_the_env_uv_toml_pins(
    build_guarded: Callable[..., Guarded], tmp_path: Path
) -> None:
    fresh = build_guarded(tmp_path / "venv")  # uv's guard does not depend on pip's version
    uv = uv_binary()
    env = users_env(
        tmp_path,
        UV_CACHE_DIR=str(tmp_path / "uvcache"),
        PATH=f"{Path(uv).parent}:/usr/bin:/bin",
    )
    py = str(fresh.venv.python)
    proc = fresh.dtkguard("guard", "install", "--python", py, "--uv", env=env)
    assert proc.returncode == 0, proc.stderr
    shim = fresh.venv.path / "bin" / "uv"
    assert "UV_CONFIG_FILE=" in shim.read_text()
    req = ["pip", "install", *fresh.index_args, "--no-deps", "torch==2.7.0"]
    before = fresh.venv.snapshot()
    vetoed = _run([str(shim), *req], env)
    assert vetoed.returncode == 1, vetoed.stdout + vetoed.stderr
    assert "with or without the vendor builds" not in vetoed.stderr, vetoed.stderr
    assert f"replace the vendor build torch {TORCH} with torch 2.7.0" in vetoed.stderr
    assert changed(before, fresh.venv.snapshot()) == []
    allowed = _run([str(shim), *req], {**env, "DTKGUARD_OVERRIDE": "community torch, CPU test"})
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert fresh.venv.installed()["torch"] == "2.7.0"


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=os.getcwd())
