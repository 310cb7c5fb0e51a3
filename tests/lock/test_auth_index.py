"""`dtkguard lock` against an index that needs HTTP Basic credentials (issue 25 item 4): URL
userinfo, $NETRC, pip's and uv's index variables; the password never appears in any output or
file, and real pip and uv succeed (and fail) with the same credentials."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from dtkguard.lock import read
from tests.support.cli import dtkguard_in
from tests.support.index import serve_index
from tests.support.venvs import hermetic_env, make_venv, run_uv
from tests.support.wheels import build_wheel

from .conftest import HERE

USER, PASSWORD = "alice", "pw-Zq81-never-shown"


@pytest.fixture(scope="module")
def auth_index(tmp_path_factory):
    w = tmp_path_factory.mktemp("auth") / "w"
    build_wheel(w, "app", "1.0", requires_dist=["lib>=1"])
    build_wheel(w, "lib", "1.2")
    with serve_index(w, auth=(USER, PASSWORD)) as server:
        yield server


def _with_auth(url: str, user: str = USER, password: str = PASSWORD) -> str:
    return url.replace("http://", f"http://{user}:{password}@")


def _run(tmp_path, *args, **env):
    cache = tmp_path / "cache"
    full = hermetic_env(DTKGUARD_CACHE_DIR=str(cache), HOME=str(tmp_path), **env)
    proc = dtkguard_in(full, "lock", "app", "--policy", "dtk-25.04.1", *HERE,
                       "-o", "pylock.a.toml", *args, cwd=tmp_path)  # fmt: skip
    return proc


def _nowhere(tmp_path, proc, secret: str = PASSWORD) -> None:
    """``secret`` is in no output and no file under ``tmp_path`` (lock, cache, anything)."""
    assert secret not in proc.stdout and secret not in proc.stderr
    for root, _dirs, files in os.walk(tmp_path):
        for name in files:
            if name == ".netrc" or name.endswith(".netrc"):
                continue
            path = Path(root, name)
            assert secret.encode() not in path.read_bytes(), path


def test_url_userinfo_locks_and_the_password_is_never_written(auth_index, tmp_path):
    proc = _run(tmp_path, "--index-url", _with_auth(auth_index.url))
    assert proc.returncode == 0, proc.stderr
    lock = read.read_lock(tmp_path / "pylock.a.toml")
    assert lock.versions() == {"app": "1.0", "lib": "1.2"}
    for pkg in lock.pylock.packages:
        assert pkg.index == auth_index.url  # no userinfo
        assert all(f.url.startswith(auth_index.base_url) for f in read.files(pkg))
    assert "@" not in (tmp_path / "pylock.a.toml").read_text()
    assert auth_index.authorizations[-1].startswith("Basic ")
    _nowhere(tmp_path, proc)


def test_netrc_and_environment_variables_supply_credentials(auth_index, tmp_path):
    netrc = tmp_path / "auth.netrc"
    netrc.write_text(f"machine 127.0.0.1\n  login {USER}\n  password {PASSWORD}\n")
    proc = _run(tmp_path, "--index-url", auth_index.url, NETRC=str(netrc))
    assert proc.returncode == 0, proc.stderr
    _nowhere(tmp_path, proc)
    proc = _run(tmp_path, PIP_INDEX_URL=_with_auth(auth_index.url))
    assert proc.returncode == 0, proc.stderr
    shown = _with_auth(auth_index.url, password="****")
    assert f"dtkguard: public index (from $PIP_INDEX_URL): {shown}" in proc.stderr
    _nowhere(tmp_path, proc)
    # uv: a named index in UV_INDEX with UV_INDEX_<NAME>_USERNAME/_PASSWORD; the default
    # index is an empty one of its own
    empty = tmp_path / "empty"
    empty.mkdir()
    with serve_index(empty) as other:
        proc = _run(tmp_path, "--index-url", other.url, UV_INDEX=f"site-mirror={auth_index.url}",
                    UV_INDEX_SITE_MIRROR_USERNAME=USER,
                    UV_INDEX_SITE_MIRROR_PASSWORD=PASSWORD)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert read.read_lock(tmp_path / "pylock.a.toml").by_name()["lib"].index == auth_index.url
    _nowhere(tmp_path, proc)


def test_missing_or_wrong_credentials_exit_2_in_one_line_without_the_password(auth_index, tmp_path):
    for url, secret in ((auth_index.url, PASSWORD), (_with_auth(auth_index.url,
                        password="wrong-Xy7"), "wrong-Xy7")):  # fmt: skip
        proc = _run(tmp_path, "--index-url", url)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "HTTP 401" in lines[0] and "credentials" in lines[0]
        assert not (tmp_path / "pylock.a.toml").exists()
        _nowhere(tmp_path, proc, secret)


def test_pip_and_uv_agree_with_the_same_credentials(auth_index, tmp_path):
    venv = make_venv(tmp_path / "pip", pip_version="26.3")
    ok = venv.pip("install", "--dry-run", "--ignore-installed", "--no-cache-dir",
                  "--index-url", _with_auth(auth_index.url), "app", check=False)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "lib-1.2" in ok.stdout
    bad = venv.pip("install", "--dry-run", "--no-cache-dir", "--index-url", auth_index.url,
                   "app", check=False)  # fmt: skip
    assert bad.returncode != 0
    uv = run_uv("pip", "compile", "--python", sys.executable, "--no-cache", "--index-url",
                _with_auth(auth_index.url), "-", input="app\n", check=False)  # fmt: skip
    assert uv.returncode == 0 and "lib==1.2" in uv.stdout, uv.stderr
