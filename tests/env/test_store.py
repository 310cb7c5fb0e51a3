"""The guard's store: where it is, the per-env record and its paths (`dtkguard.env.store`)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dtkguard.env import store
from dtkguard.env.interpreter import interpreter
from dtkguard.errors import InputError
from tests.support.venvs import make_venv


def test_every_test_has_a_private_store(private_store: Path) -> None:
    assert os.environ[store.STORE_VAR] == str(private_store)
    assert store.store_root() == private_store
    assert not str(store.store_root()).startswith(str(store.ROOT_STORE))


def test_location_without_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(store.STORE_VAR)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert store.store_root() == tmp_path / "state" / "dtkguard"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store.store_root() == tmp_path / "home" / ".local" / "state" / "dtkguard"
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert store.store_root() == Path("/var/lib/dtkguard")
    monkeypatch.setenv(store.STORE_VAR, str(tmp_path / "named"))
    assert store.store_root() == tmp_path / "named"


def test_key_follows_the_realpath(tmp_path: Path) -> None:
    (tmp_path / "env").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "env")
    assert store.env_key(tmp_path / "env") == store.env_key(tmp_path / "alias")
    assert store.env_key(tmp_path / "env") == store.env_key(str(tmp_path / "env") + "/")
    assert store.env_key(tmp_path / "env") != store.env_key(tmp_path / "other")
    assert store.env_key(tmp_path / "env").startswith("env-")


def test_record_env_creates_0700_and_a_readable_record(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv", with_pip=False)
    interp = interpreter(str(venv.python))
    es, rec = store.record_env(interp, guarded=True)
    for folder in (store.store_root(), es.dir.parent, es.dir):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert es.dir == store.env_store(venv.path).dir
    back = es.record()
    assert back is not None and back.guarded and back.identity == rec.identity
    assert back.identity.prefix == os.path.realpath(venv.path)
    assert back.identity.purelib == os.path.realpath(venv.site_packages)
    assert back.identity.site_ino == venv.site_packages.stat().st_ino
    assert os.path.realpath(venv.bin) in back.identity.roots
    # every path of the API is inside the env's folder, none inside the env
    paths = [es.baseline, es.policy, es.journal, es.vault, es.overrides, es.tripwire]
    paths += [es.protected, es.blobs, es.manifest, es.constraints]
    assert all(p.parent == es.dir for p in paths)
    assert not any(str(p).startswith(str(venv.path)) for p in paths)
    assert [e.dir for e, _ in store.known_envs()] == [es.dir]
    # recorded again: the creation time stays, guarded stays unless told
    _, rec2 = store.record_env(interp)
    assert rec2.guarded and rec2.created == rec.created


def test_a_recreated_env_has_another_identity(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv", with_pip=False)
    interp = interpreter(str(venv.python))
    _, rec = store.record_env(interp, guarded=True)
    subprocess.run(
        [sys.executable, "-m", "venv", "--clear", "--without-pip", venv.path], check=True
    )
    now = store.current_identity(interpreter(str(venv.python)))
    assert store.env_store(venv.path).dir == store.env_store(tmp_path / "venv").dir
    diff = rec.identity.differences(now)
    assert diff and any("new" in d or "written again" in d for d in diff), diff
    assert rec.identity.differences(rec.identity) == []


def test_a_store_inside_the_env_is_refused(tmp_path: Path, monkeypatch) -> None:
    venv = make_venv(tmp_path / "venv", with_pip=False)
    monkeypatch.setenv(store.STORE_VAR, str(venv.path / "state"))
    with pytest.raises(InputError, match="inside the environment"):
        store.record_env(interpreter(str(venv.python)))
    assert not (venv.path / "state").exists()


def test_an_unreadable_record_is_bad_input(tmp_path: Path) -> None:
    es = store.env_store(tmp_path / "nowhere").create()
    es.record_file.write_text("{not json")
    with pytest.raises(InputError, match=r"env\.json"):
        es.record()
    es.record_file.write_text('{"format": "other"}')
    with pytest.raises(InputError, match="not a dtkguard store record"):
        es.record()
    assert store.known_envs() == []
    assert sys.executable  # the running interpreter is never recorded by reading


def test_the_override_log_inside_pip_has_the_stores_name() -> None:
    """The hook's override log module is a stdlib copy that imports nothing of dtkguard: its
    file name is spelled there, and must be the one `check` and the store read."""
    from dtkguard import pipoverride
    from dtkguard.env import store_path

    assert pipoverride.LOG == store_path.OVERRIDES_FILE
