"""Which interpreter dtkpip and dtkuv act on (never dtkguard's own by accident), the `uv` shim
of `guard install --uv`, `--help` and the planning progress line."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.support.cache import uv_binary
from tests.support.cli import dtkguard_in
from tests.support.venvs import hermetic_env, make_venv

pytestmark = pytest.mark.wheel_cache


def _state_env(state: Path, **extra: str) -> dict[str, str]:
    return hermetic_env(XDG_STATE_HOME=str(state), **extra)


def _guard(g: Guarded, python: Path, env: dict[str, str], *more: str):
    proc = g.dtkguard(
        "guard", "install", "--python", str(python), "--policy", str(g.policy), *more, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def tg(tmp_path: Path, build_guarded: Callable[..., Guarded]) -> Guarded:
    """A venv with the vendor builds, guarded (recorded in the session's state dir)."""
    return build_guarded(tmp_path / "venv")


def test_nothing_active_uses_the_one_guarded_else_refuses(tg: Guarded, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = _state_env(state)
    # nothing guarded yet in this state dir, nothing active: refuse, never dtkguard's own venv
    for tool in ("pip", "uv"):
        proc = tg.dtkguard(tool, *(["pip"] if tool == "uv" else []), "install", "x", env=env)
        assert proc.returncode == 2, proc.stderr
        assert "no guarded interpreter is known" in proc.stderr and "--python PY" in proc.stderr
        assert "Traceback" not in proc.stderr
    # pip's and uv's own --python name the target too; two different ones are refused
    pip_opt = "--disable-pip-version-check"  # dtkpip's own options end at pip's first one
    told = tg.dtkguard("pip", pip_opt, "--python", str(tg.venv.path), "list", env=env)
    assert told.returncode == 0, told.stderr
    assert f"dtkpip: acting on {tg.venv.python}" in told.stderr and TORCH in told.stdout
    both = tg.dtkguard(
        "pip", "--python", sys.executable, pip_opt, "--python", str(tg.venv.python), "list",
        env=env,
    )  # fmt: skip
    by_env = tg.dtkguard(
        "uv", "pip", "uninstall", "torch", env={**env, "UV_PYTHON": str(tg.venv.path)}
    )
    assert by_env.returncode == 1 and f"dtkuv: acting on {tg.venv.python}" in by_env.stderr
    twice = tg.dtkguard("pip", "--python", sys.executable, "--python", str(tg.venv.python))
    assert twice.returncode == 2 and "given twice" in twice.stderr
    assert both.returncode == 2 and "different interpreters" in both.stderr
    _guard(tg, tg.venv.python, env)
    listed = tg.dtkguard("pip", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert f"dtkpip: acting on {tg.venv.python}\n" in listed.stderr
    assert TORCH in listed.stdout  # the guarded env's packages, not dtkguard's own
    before = tg.venv.snapshot()
    pip_un = tg.dtkguard("pip", "uninstall", "-y", "torch>=0", env=env)
    assert pip_un.returncode == 1 and "nothing was removed" in pip_un.stderr
    uv_un = tg.dtkguard("uv", "pip", "uninstall", "torch", env=env)
    assert uv_un.returncode == 1 and f"dtkuv: acting on {tg.venv.python}" in uv_un.stderr
    assert changed(before, tg.venv.snapshot()) == []
    # the README's recipe: guard install --python ..., then dtkpip install with nothing active
    own = subprocess.run(
        [sys.executable, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
    ).stdout
    proc = tg.dtkguard("pip", "install", *tg.index_args, "accelerate==1.6.0", env=env)
    assert proc.returncode == 0, proc.stderr
    assert tg.venv.installed()["accelerate"] == "1.6.0" and tg.venv.installed()["torch"] == TORCH
    assert (
        own
        == subprocess.run(
            [sys.executable, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
        ).stdout
    )  # dtkguard's own venv is untouched
    # a second guarded interpreter: ambiguous, refuse and say how to choose
    other = make_venv(tmp_path / "other")
    _guard(tg, other.python, env)
    proc = tg.dtkguard("pip", "list", env=env)
    assert proc.returncode == 2 and "2 guarded interpreters are known" in proc.stderr
    # an active environment wins
    active = tg.dtkguard("pip", "list", env={**env, "VIRTUAL_ENV": str(other.path)})
    assert active.returncode == 0 and f"acting on {other.path}/bin/python" in active.stderr
    # removing a guard forgets it
    assert tg.dtkguard("guard", "remove", "--python", str(other.python), env=env).returncode == 0
    assert tg.dtkguard("pip", "list", env=env).returncode == 0


def test_uv_shim_goes_through_dtkuv_and_is_removed_exactly(tg: Guarded, tmp_path: Path) -> None:
    env = _state_env(tmp_path / "state", UV_CACHE_DIR=str(tmp_path / "uv-cache"))
    assert tg.dtkguard("guard", "remove", "--python", str(tg.venv.python)).returncode == 0
    pristine = tg.venv.snapshot()
    _guard(tg, tg.venv.python, env, "--uv", "--uv-config", str(tmp_path / "uv.toml"))
    shim = tg.venv.bin / "uv"
    assert os.access(shim, os.X_OK) and "dtkguard-uv-shim" in shim.read_text()
    status = tg.dtkguard("guard", "status", "--python", str(tg.venv.python), env=env)
    assert status.returncode == 0, status.stdout
    assert any(ln.split() == ["present", "uv-shim", str(shim)] for ln in status.stdout.splitlines())
    # the env is active: its bin/ comes first on PATH, the real uv after it
    real_dir = str(Path(uv_binary()).parent)
    active = {
        **env,
        "VIRTUAL_ENV": str(tg.venv.path),
        "PATH": os.pathsep.join([str(tg.venv.bin), real_dir, "/usr/bin", "/bin"]),
    }
    before = tg.venv.snapshot()
    run = subprocess.run(
        ["uv", "pip", "install", *tg.index_args, "vllm==0.9.2"],
        env=active,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "dtkuv: stopped `uv pip install" in run.stderr
    assert f"dtkuv: acting on {tg.venv.python}" in run.stderr
    assert changed(before, tg.venv.snapshot()) == []
    # non-pip commands reach the real uv (no recursion into the shim)
    version = subprocess.run(["uv", "--version"], env=active, capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("uv ")
    # a uv that is itself the shim is refused, not run in a loop
    loop = subprocess.run(
        ["uv", "--version"], env={**active, "DTKGUARD_UV": str(shim)}, capture_output=True,
        text=True,
    )  # fmt: skip
    assert loop.returncode == 2 and "shim" in loop.stderr
    removed = tg.dtkguard("guard", "remove", "--python", str(tg.venv.python), env=env)
    assert removed.returncode == 0, removed.stderr
    assert "uv-shim" in removed.stdout and not shim.exists()
    assert changed(pristine, tg.venv.snapshot()) == []


def test_a_real_uv_in_the_env_is_not_overwritten(tg: Guarded, tmp_path: Path) -> None:
    env = _state_env(tmp_path / "state")
    fake_uv = tg.venv.bin / "uv"
    fake_uv.write_bytes(b"\x7fELF\x00\x01 a real uv binary")
    before = tg.venv.snapshot()
    proc = tg.dtkguard(
        "guard", "install", "--python", str(tg.venv.python), "--policy", str(tg.policy), "--uv",
        "--uv-config", str(tmp_path / "uv.toml"), env=env,
    )  # fmt: skip
    assert proc.returncode == 2 and "not dtkguard's shim" in proc.stderr
    assert changed(before, tg.venv.snapshot()) == []


@pytest.mark.parametrize(
    ("tool", "theirs"), [("pip", "pip <command> [options]"), ("uv", "uv [OPTIONS] <COMMAND>")]
)
def test_help_shows_own_options_first(tool: str, theirs: str) -> None:
    proc = dtkguard_in(hermetic_env(), tool, "--help")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    name = "dtkpip" if tool == "pip" else "dtkuv"
    assert out.startswith(f"{name}: {tool} with the dtkguard policy in front of it")
    for option in ("--python PY", "--policy P", "--override REASON"):
        assert option in out
    assert out.index("--override REASON") < out.index(theirs)


def test_progress_is_a_spinner_on_a_terminal_and_one_line_otherwise() -> None:
    import io

    from dtkguard.guard.progress import planning

    plain = io.StringIO()
    with planning("dtkpip", "pip", 3, plain):
        pass
    assert plain.getvalue() == "dtkpip: planning with pip … (3 packages)\n"
    master, slave = os.openpty()
    try:
        with open(slave, "w", closefd=False) as tty:
            env_before = os.environ.pop("DTKGUARD_NO_PROGRESS", None)
            try:
                with planning("dtkuv", "uv", 1, tty):
                    import time

                    time.sleep(0.3)  # let the spinner draw a frame; not a timed assertion
            finally:
                if env_before is not None:
                    os.environ["DTKGUARD_NO_PROGRESS"] = env_before
            tty.flush()
        drawn = os.read(master, 65536).decode("utf-8", "replace")
    finally:
        os.close(master)
        os.close(slave)
    assert "dtkuv: planning with uv … (1 package)" in drawn
    assert "\x1b[" in drawn  # drawn by rich with terminal controls, not a plain line
