"""`restore` repairs the guard from the store, and rebuilds a wiped env (issue 23, item 5):
only when every protected file matches the store and `guard status` is clean does it say
"clean". Real venvs, real pip and uv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.guard.conftest import Guarded, _build
from tests.guard.test_restore import verify_clean
from tests.support.cache import PIP_VERSIONS
from tests.support.venvs import hermetic_env, run_uv

pytestmark = pytest.mark.wheel_cache


@pytest.fixture
def env(tmp_path: Path, request: pytest.FixtureRequest) -> Guarded:
    """A new guarded venv (newest pip) whose vendor builds have all they require (no vllm:
    the fixtures' vendor vllm comes without its community requirements)."""
    inputs = ("guard_policy", "vendor_wheelhouse", "public_dir", "extra_wheelhouse")
    values = (request.getfixturevalue(n) for n in inputs)
    return _build(tmp_path / "venv", PIP_VERSIONS[-1], *values, with_vllm=False)


def restore(g: Guarded, *args: str, env: dict[str, str] | None = None):
    return g.dtkguard("restore", "--python", str(g.venv.python), *args, env=env)


def status(g: Guarded):
    return g.dtkguard("guard", "status", "--python", str(g.venv.python))


def check_clean(g: Guarded) -> None:
    proc = g.dtkguard("check", "--python", str(g.venv.python), "-f", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["findings"] == []


def guard_files(g: Guarded) -> dict[str, str]:
    """Every protected file of the venv (the guard, pip, bin/), by content."""
    snap = g.venv.snapshot()
    keep = ("bin/", "pyvenv.cfg")
    site = g.venv.site_packages.relative_to(g.venv.path).as_posix() + "/"
    return {
        k: v
        for k, v in snap.items()
        if k.startswith(keep)
        or k.startswith(site + "pip")
        or k.startswith(site + "_dtkguard")
        or k.startswith(site + "dtkguard-pip-hook")
    }


@pytest.mark.parametrize(
    "damage",
    ["finder", "sitefacts", "pip-modules", "bin-pip", "policy-json", "patched-pip"],
)
def test_restore_repairs_the_guard(env: Guarded, damage: str) -> None:
    g = env
    before = guard_files(g)
    site = g.venv.site_packages
    if damage == "finder":
        (site / "_dtkguard_finder.py").unlink()
    elif damage == "sitefacts":  # the hook's copy of dtkguard/sitefacts.py, edited
        facts = site / "_dtkguard_sitefacts.py"
        facts.write_text(facts.read_text() + "\ndef roots(*a, **k):\n    return [], []\n")
    elif damage == "pip-modules":
        shutil.rmtree(site / "pip" / "_internal" / "commands")
    elif damage == "bin-pip":
        for script in g.venv.bin.glob("pip*"):
            script.unlink()
    elif damage == "policy-json":
        policy = g.venv.path / "dtkguard" / "policy.json"
        data = json.loads(policy.read_text())
        data["vendor"] = {}
        policy.write_text(json.dumps(data))
    else:  # a pip whose install command lets everything through
        init = site / "pip" / "_internal" / "__init__.py"
        init.write_text(init.read_text() + "\n# patched to skip the guard\n")
    proc = restore(g)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "repaired" in proc.stdout and "is clean" in proc.stdout
    assert guard_files(g) == before
    assert status(g).returncode == 0
    check_clean(g)
    # pip works again and the guard holds
    refused = g.pip("install", *g.index_args, "vllm==0.9.2")
    assert refused.returncode == 1 and "dtkguard" in refused.stderr


def test_restore_repairs_a_deleted_uv_shim(env: Guarded, tmp_path: Path) -> None:
    """`guard install --uv-config` writes the uv shim into bin/: deleted, restore puts it back
    (the store's copy) and only then says clean."""
    g = env
    py = str(g.venv.python)
    uv_config = ["--uv-config", str(tmp_path / "uv.toml")]
    proc = g.dtkguard("guard", "install", "--python", py, "--policy", str(g.policy), *uv_config)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shim = g.venv.bin / "uv"
    text = shim.read_text()
    assert "dtkguard-uv-shim" in text
    before = guard_files(g)
    shim.unlink()
    assert status(g).returncode != 0
    proc = restore(g)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "repaired" in proc.stdout and "is clean" in proc.stdout
    assert shim.read_text() == text and os.access(shim, os.X_OK)
    assert guard_files(g) == before
    assert status(g).returncode == 0
    check_clean(g)


def _wipe(g: Guarded, how: str) -> None:
    path = g.venv.path
    if how == "venv-clear":
        subprocess.run([sys.executable, "-m", "venv", "--clear", path], check=True)
    elif how == "virtualenv-clear":
        from tests.guard.test_store_attacks import virtualenv_clear

        virtualenv_clear(path)
    elif how == "uv-clear":
        run_uv("venv", "--clear", "--python", sys.executable, path)
    else:
        shutil.rmtree(path)


@pytest.mark.parametrize("how", ["venv-clear", "virtualenv-clear", "uv-clear", "rm-rf"])
def test_a_wiped_env_is_rebuilt_from_the_store(env: Guarded, how: str) -> None:
    g = env
    before_set = g.venv.installed()
    before = guard_files(g)
    _wipe(g, how)
    # the baseline's other packages come from pip's configured index (here: find-links)
    index = hermetic_env(PIP_NO_INDEX="1", PIP_FIND_LINKS=" ".join(g.index_args[2::2]))
    proc = restore(g, env=index)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "is clean" in proc.stdout
    assert g.venv.installed() == before_set
    # every protected file is back byte for byte (uv's own extra activate scripts may stay)
    assert before.items() <= guard_files(g).items()
    verify_clean(g)
    assert status(g).returncode == 0
    check_clean(g)


def test_restore_of_an_unknown_wiped_env_is_a_target_error(tmp_path: Path) -> None:
    from tests.support.cli import dtkguard

    proc = dtkguard("restore", "--python", str(tmp_path / "gone" / "bin" / "python"))
    assert proc.returncode == 3 and "no such interpreter" in proc.stderr
