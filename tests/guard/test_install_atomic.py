"""`guard install` is all or nothing: an unwritable env is refused before the first write
(exit 3), and a write that fails half-way puts back every layer already written."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.guard.conftest import Guarded, changed
from tests.support.cache import PIP_VERSIONS
from tests.support.mounts import mount
from tests.support.venvs import make_venv

pytestmark = pytest.mark.wheel_cache


@pytest.fixture
def venv_guard(tmp_path: Path, guard_policy: Path, wheel_cache: Path) -> Guarded:
    venv = make_venv(tmp_path / "venv", pip_version=PIP_VERSIONS[-1])
    return Guarded(venv, guard_policy, [], tmp_path)


def _install(g: Guarded, *extra: str):
    return g.dtkguard(
        "guard", "install", "--python", str(g.venv.python), "--policy", str(g.policy), *extra
    )


def test_a_read_only_site_packages_is_refused_before_anything_is_written(venv_guard, mounts):
    purelib = next(venv_guard.venv.path.glob("lib/python3*/site-packages"))
    before = venv_guard.venv.snapshot()
    mount(mounts, "--bind", str(purelib), str(purelib))
    mount(mounts, "-o", "remount,bind,ro", str(purelib))
    proc = _install(venv_guard)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "not writable" in line and "nothing was written" in line
    assert changed(before, venv_guard.venv.snapshot()) == []
    assert not (venv_guard.venv.path / "dtkguard").exists()


def test_a_layer_path_that_is_a_folder_is_refused_before_anything_is_written(venv_guard):
    before = venv_guard.venv.snapshot()
    (venv_guard.venv.path / "pip.conf").mkdir()
    proc = _install(venv_guard)
    assert proc.returncode == 3 and "not a regular file" in proc.stderr, proc.stderr
    (venv_guard.venv.path / "pip.conf").rmdir()
    assert changed(before, venv_guard.venv.snapshot()) == []


def test_a_later_layer_that_fails_rolls_back_the_written_ones(venv_guard, mounts, tmp_path):
    """The uv config (the last layer) goes to a tmpfs that is full: every check passes, the
    write fails with ENOSPC, and policy, constraints, pip.conf and the hook are undone."""
    full = tmp_path / "full"
    full.mkdir()
    mount(mounts, "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(full))
    fd = os.open(full / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"x" * 4096):
            pass
    except OSError:
        pass  # ENOSPC: the folder is writable and full
    finally:
        os.close(fd)
    conf = venv_guard.venv.path / "pip.conf"
    conf.write_text("[global]\ntimeout = 60\n")
    before = venv_guard.venv.snapshot()
    proc = _install(venv_guard, "--uv-config", str(full / "uv.toml"))
    assert proc.returncode == 3, proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "uv.toml: No space left on device" in line
    assert re.search(r"rolled back the [1-9]\d* layer\(s\) written before it", line), line
    assert changed(before, venv_guard.venv.snapshot()) == []
    assert conf.read_text() == "[global]\ntimeout = 60\n"
    assert not os.path.exists(full / "uv.toml")
