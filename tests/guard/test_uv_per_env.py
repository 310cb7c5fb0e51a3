"""`guard install --uv` keeps uv's guard in the environment: the vendor pins go to the env's own
``uv.toml``, which its uv shim makes the real uv read (``UV_CONFIG_FILE``); uv anywhere else on
the machine, for an unrelated project, resolves as before. A machine-wide file is written only
when named with ``--uv-config``, and `guard status` says so."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded
from tests.support.venvs import hermetic_env, make_venv

pytestmark = pytest.mark.wheel_cache


def _env(tmp_path: Path, uv: str) -> dict[str, str]:
    """Hermetic, with the user's and the system's uv config folders in ``tmp_path`` (so that a
    machine-wide write would land there), and the real uv on PATH."""
    return hermetic_env(
        XDG_CONFIG_HOME=str(tmp_path / "user-config"),
        XDG_CONFIG_DIRS=str(tmp_path / "etc"),
        HOME=str(tmp_path / "home"),
        UV_CACHE_DIR=str(tmp_path / "uvcache"),
        PATH=f"{Path(uv).parent}:/usr/bin:/bin",
    )


def test_uv_guard_is_per_environment(build_guarded, tmp_path: Path, uv: str, public_dir: Path):
    fresh: Guarded = build_guarded(tmp_path / "venv")  # uv's guard does not depend on pip's version
    py = str(fresh.venv.python)
    env = _env(tmp_path, uv)
    etc_uv = Path("/etc/uv/uv.toml")
    etc_before = etc_uv.read_bytes() if etc_uv.exists() else None
    proc = fresh.dtkguard("guard", "install", "--python", py, "--uv", env=env)
    assert proc.returncode == 0, proc.stderr
    own = fresh.venv.path / "uv.toml"
    assert f'"torch=={TORCH}"' in own.read_text()
    assert "machine-wide" not in proc.stdout
    # nothing machine-wide was written
    for folder in ("user-config", "etc", "home"):
        assert (
            not list((tmp_path / folder).rglob("uv.toml")) if (tmp_path / folder).exists() else True
        )
    assert (etc_uv.read_bytes() if etc_uv.exists() else None) == etc_before
    shim = fresh.venv.path / "bin" / "uv"
    assert f"UV_CONFIG_FILE={own}" in shim.read_text()
    # the env's uv (the shim, as `uv` on PATH when the env is active) reads the env's pins:
    # a non-installing command reaches the real uv unchanged, with the pins
    find = ["--offline", "--no-index", "--find-links", str(public_dir)]
    active = dict(env, PATH=f"{fresh.venv.path / 'bin'}:{env['PATH']}")
    compiled = subprocess.run(
        ["uv", "pip", "compile", "-", *find, "--python", py],
        input="torch\n", env=active, capture_output=True, text=True,
    )  # fmt: skip
    assert compiled.returncode != 0 or f"torch=={TORCH}" in compiled.stdout, compiled.stderr
    assert "2.4.1+das" in compiled.stdout + compiled.stderr
    # an unrelated project's uv (no shim on PATH) resolves the community torch as before
    other = make_venv(tmp_path / "other")
    plain = subprocess.run(
        [uv, "pip", "install", "--dry-run", "--python", str(other.python), *find, "torch==2.4.1"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "+das" not in plain.stdout + plain.stderr
    # status: present, and nothing machine-wide to report
    status = fresh.dtkguard("guard", "status", "--python", py, env=env)
    assert f"present  uv                 {own}" in status.stdout
    assert "machine-wide" not in status.stdout
    # remove takes the env's uv.toml with it
    assert fresh.dtkguard("guard", "remove", "--python", py, env=env).returncode == 0
    assert not own.exists() and not shim.exists()


def test_a_machine_wide_uv_config_only_when_named_and_status_says_so(
    build_guarded, tmp_path: Path, uv: str
):
    fresh: Guarded = build_guarded(tmp_path / "venv")
    py = str(fresh.venv.python)
    env = _env(tmp_path, uv)
    wide = tmp_path / "etc" / "uv" / "uv.toml"
    proc = fresh.dtkguard(
        "guard", "install", "--python", py, "--uv", "--uv-config", str(wide), env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert f"note: {wide} is machine-wide" in proc.stdout
    status = fresh.dtkguard("guard", "status", "--python", py, env=env)
    assert f"uv config {wide} is machine-wide" in status.stdout
    # installed again without naming it (an env guarded by an older dtkguard, whose default
    # was that file): the pins move into the env, the machine-wide file is put back as it was
    again = fresh.dtkguard("guard", "install", "--python", py, "--uv", env=env)
    assert again.returncode == 0, again.stderr
    assert f"removed  uv                 {wide}" in again.stdout and not wide.exists()
    assert f'"torch=={TORCH}"' in (fresh.venv.path / "uv.toml").read_text()
    status = fresh.dtkguard("guard", "status", "--python", py, env=env)
    assert "machine-wide" not in status.stdout, status.stdout
