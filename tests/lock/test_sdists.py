"""Source distributions in locks (issue 25 item 3): PEP 643 static PKG-INFO read as it is, else
PEP 517 metadata built in an isolated environment whose build requirements come from the lock's
own sources (here the test wheel cache), cached by the sdist's sha256; ``--only-binary`` and
``--no-binary`` with pip's meaning; pip and uv agree."""

from __future__ import annotations

import sys

import pytest

from dtkguard.lock.read import file_name, files, read_lock
from tests.support.cache import find_wheel
from tests.support.cli import dtkguard_in
from tests.support.index import serve_index
from tests.support.venvs import hermetic_env, make_venv, run_uv
from tests.support.wheels import build_sdist, build_wheel

from .conftest import HERE


@pytest.fixture(scope="module")
def house(tmp_path_factory):
    w = tmp_path_factory.mktemp("sdists") / "w"
    build_sdist(w, "alpha", "1.0", requires_dist=["beta>=1"], metadata_version="2.2")
    build_wheel(w, "beta", "1.1")
    build_sdist(w, "gamma", "1.0", requires_dist=["beta"])  # Metadata 2.1: must be built
    build_sdist(w, "delta", "2.0", metadata_version="2.4")
    build_wheel(w, "delta", "1.0")
    build_wheel(w, "onlywheel", "1.0")
    return w


@pytest.fixture()
def build_deps(tmp_path):
    """setuptools (and wheel) from the test wheel cache, as a folder of its own."""
    folder = tmp_path / "build-deps"
    folder.mkdir()
    for name in ("setuptools", "wheel"):
        wheel = find_wheel(name)
        (folder / wheel.name).symlink_to(wheel)
    return folder


def _lock(tmp_path, *args: str):
    out = tmp_path / "pylock.s.toml"
    out.unlink(missing_ok=True)
    env = hermetic_env(DTKGUARD_CACHE_DIR=str(tmp_path / "cache"))
    proc = dtkguard_in(env, "lock", *args, "--policy", "dtk-25.04.1", *HERE, "-o", out,
                       cwd=tmp_path)  # fmt: skip
    got = read_lock(out).versions() if proc.returncode == 0 else {}
    return proc, got, out


def test_static_pkg_info_is_read_without_a_build(house, tmp_path):
    proc, got, out = _lock(tmp_path, "alpha", "--no-index", "--find-links", house)
    assert proc.returncode == 0, proc.stderr  # no build requirements anywhere: no build ran
    assert got == {"alpha": "1.0", "beta": "1.1"}
    alpha = read_lock(out).by_name()["alpha"]
    assert [file_name(f) for f in files(alpha)] == ["alpha-1.0.tar.gz"]
    assert "[packages.sdist]" in out.read_text() or "sdist = {" in out.read_text()
    assert next(files(alpha)).hashes["sha256"]


def test_dynamic_metadata_is_built_from_the_locks_sources_and_cached(house, tmp_path, build_deps):
    with serve_index(house) as server:
        args = ("gamma", "--index-url", server.url, "--find-links", str(build_deps))
        proc, got, _ = _lock(tmp_path, *args)
        assert proc.returncode == 0, proc.stderr
        assert got == {"gamma": "1.0", "beta": "1.1"}
        assert "1 sdist builds" in proc.stderr
        server.clear()
        proc, got, _ = _lock(tmp_path, *args)  # same cache folder: by the sdist's sha256
        assert proc.returncode == 0, proc.stderr
        assert "0 sdist builds" in proc.stderr and "gamma-1.0.tar.gz" not in server.downloads()
    # without the build requirements in the lock's sources the build cannot run
    proc, _, _ = _lock(tmp_path, "gamma", "--no-index", "--find-links", house, "--no-cache")
    assert proc.returncode == 1
    assert "gamma-1.0.tar.gz" in proc.stderr and "setuptools" in proc.stderr


def test_newest_version_wins_even_as_an_sdist_as_pip_and_uv_pick(house, tmp_path, build_deps):
    proc, got, _ = _lock(tmp_path, "delta", "--no-index", "--find-links", house)
    assert proc.returncode == 0 and got == {"delta": "2.0"}, proc.stderr
    uv = run_uv("pip", "compile", "--python", sys.executable, "--no-cache", "--no-index",
                "--find-links", house, "--find-links", build_deps, "--no-header",
                "--no-annotate", "-", input="delta\n")  # fmt: skip
    assert "delta==2.0" in uv.stdout
    proc, got, _ = _lock(tmp_path, "delta", "--no-index", "--find-links", house,
                         "--only-binary", ":all:")  # fmt: skip
    assert proc.returncode == 0 and got == {"delta": "1.0"}, proc.stderr


def test_only_binary_and_no_binary_have_pips_meaning(house, tmp_path, build_deps):
    src = ("--no-index", "--find-links", str(house))
    proc, _, out = _lock(tmp_path, "gamma", *src, "--only-binary", ":all:")
    assert proc.returncode == 1 and not out.exists()
    assert "gamma 1.0: only an sdist, which --only-binary excludes" in proc.stderr, proc.stderr
    proc, _, _ = _lock(tmp_path, "onlywheel", *src, "--no-binary", "onlywheel")
    assert proc.returncode == 1
    assert "onlywheel 1.0: only wheels, which --no-binary excludes" in proc.stderr
    # later options win: :all: then a name taken back out
    proc, got, _ = _lock(tmp_path, "alpha", *src, "--only-binary", ":all:", "--no-binary", "alpha")
    assert proc.returncode == 0 and got == {"alpha": "1.0", "beta": "1.1"}, proc.stderr
    venv = make_venv(tmp_path / "pip", pip_version="26.3")
    pip = venv.pip("install", "--dry-run", "--ignore-installed", "--no-index", "--find-links",
                   house, "--only-binary", ":all:", "gamma", check=False)  # fmt: skip
    assert pip.returncode != 0
    uv = run_uv("pip", "compile", "--python", sys.executable, "--no-cache", "--no-index",
                "--find-links", house, "--only-binary", ":all:", "-", input="gamma\n",
                check=False)  # fmt: skip
    assert uv.returncode != 0


def test_uv_installs_a_lock_with_an_sdist(house, tmp_path, build_deps):
    proc, got, out = _lock(tmp_path, "gamma", "--no-index", "--find-links", house,
                           "--find-links", build_deps)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    venv = make_venv(tmp_path / "uv", with_pip=False)
    venv.uv_pip("install", "--preview-features", "pylock", "--no-cache", "--no-index",
                "--find-links", build_deps, "-r", out)  # fmt: skip
    assert venv.installed() == got
