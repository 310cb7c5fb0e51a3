"""dtkguard's declared dependency floors are real (issue 25 item 6): the lowest versions
``pyproject.toml`` allows, installed by uv's ``--resolution lowest-direct`` from the test wheel
cache, pass ``pip check`` and run ``lock`` (a lock, a conflict explanation, an export)."""

from __future__ import annotations

import sys

import pytest
from packaging.version import Version

from tests.support.cache import CacheMissing, floor_requirements, floor_wheels
from tests.support.cli import REPO
from tests.support.index import serve_index
from tests.support.need import missing
from tests.support.venvs import hermetic_env, make_venv, run_uv
from tests.support.wheels import build_wheel

#: the running interpreter with its patch level (``--python-version 3.11.7``)
HERE = ".".join(map(str, sys.version_info[:3]))


@pytest.fixture(scope="module")
def floor_venv(tmp_path_factory):
    try:
        wheels = floor_wheels()
    except CacheMissing as exc:
        missing(str(exc))
    venv = make_venv(tmp_path_factory.mktemp("floors") / "venv", with_pip=False)
    floors = floor_requirements()
    lowest = [r.replace("==", ">=") for r in floors]
    venv.uv_pip("install", "--resolution", "lowest-direct", "--no-index", "--find-links",
                wheels, "--no-cache", *lowest)  # fmt: skip
    got = venv.installed()
    for pin in floors:
        name, version = pin.split("==")
        assert Version(got[name.lower().replace("_", "-")]) == Version(version), (pin, got)
    return venv


def test_lock_runs_on_the_lowest_declared_floors(floor_venv, tmp_path):
    assert floor_venv.pip("check").returncode == 0
    w = tmp_path / "w"
    build_wheel(w, "app", "1.0", requires_dist=["lib>=1"])
    build_wheel(w, "app", "2.0", requires_dist=["lib>=9"])
    build_wheel(w, "lib", "1.2", requires_python=">=3.10.5")
    env = hermetic_env(PYTHONPATH=str(REPO), DTKGUARD_CACHE_DIR=str(tmp_path / "c"))
    with serve_index(w) as server:
        base = ("-m", "dtkguard", "lock", "--policy", "dtk-25.04.1", "--index-url", server.url)
        (tmp_path / "reqs.txt").write_text("app  # through pip-api\n")
        ok = floor_venv.run(*base, "-r", "reqs.txt", "--python-version", HERE,
                            "-o", "pylock.f.toml", env=env, cwd=tmp_path,
                            check=False)  # fmt: skip
        assert ok.returncode == 0, ok.stderr
        bad = floor_venv.run(*base, "app==2.0", "-o", "pylock.g.toml", env=env, cwd=tmp_path,
                             check=False)  # fmt: skip
        assert bad.returncode == 1, bad.stderr
        assert "lib 1.2 requires Python >=3.10.5; the target is 3.10" in bad.stderr
        text = (tmp_path / "pylock.f.toml").read_text()
        assert f'requires-python = ">={HERE},=={HERE.rsplit(".", 1)[0]}.*"' in text
        exported = floor_venv.run("-m", "dtkguard", "export", "constraints", "pylock.f.toml",
                                  env=env, cwd=tmp_path)  # fmt: skip
        pins = [line for line in exported.stdout.splitlines() if line and not line.startswith("#")]
        assert pins == ["app==1.0", "lib==1.2"]
        # uv installs what the floors wrote
        target = make_venv(tmp_path / "t", with_pip=False)
        run_uv("pip", "install", "--python", target.python, "--preview-features", "pylock",
               "-r", tmp_path / "pylock.f.toml", "--no-cache")  # fmt: skip
        assert target.installed() == {"app": "1.0", "lib": "1.2"}
