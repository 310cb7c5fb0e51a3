"""Atomic writes replace regular files only; devices, pipes and links are written through."""

from __future__ import annotations

import os
import stat
import threading

from dtkguard.util.atomic import atomic_write_text


def test_replaces_a_regular_file_keeping_its_mode(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old")
    os.chmod(target, 0o600)
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_fifo_is_written_through_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    atomic_write_text(fifo, "through the pipe")
    reader.join(timeout=10)
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_is_followed(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_dev_null_stays_a_device():
    atomic_write_text("/dev/null", "discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_cache_is_replaced_without_an_fsync_and_state_with_one(tmp_path, mocker):
    spy = mocker.spy(os, "fsync")
    atomic_write_text(tmp_path / "cache.json", "{}", durable=False)
    assert spy.call_count == 0
    atomic_write_text(tmp_path / "state.json", "{}")
    assert spy.call_count == 1
    assert (tmp_path / "cache.json").read_text() == (tmp_path / "state.json").read_text() == "{}"


def test_a_check_that_fills_every_cache_fsyncs_nothing(tmp_path, mocker):
    """Its caches (the compiled policy, the site scan, the metadata memo) are validated on use:
    a crash that leaves one empty is a miss (below), so none is worth an fsync."""
    from tests.support.cli import run_in_process
    from tests.support.sitetree import add_dist
    from tests.support.venvs import hermetic_env

    site = tmp_path / "site"
    add_dist(site, "six", "1.17.0", files={"six.py": "x = 1\n"})
    policy = tmp_path / "site-policy.toml"  # compiled and kept on the first run
    policy.write_text('[policy]\nname = "site"\nextends = ["dtk-25.04.1"]\n')
    cache = tmp_path / "cache"
    env = hermetic_env(XDG_CACHE_HOME=str(cache), DTKGUARD_CACHE_DIR=str(cache / "d"))
    args = ("check", "--policy", str(policy), "--path", str(site), "--format", "json")
    spy = mocker.spy(os, "fsync")
    first = run_in_process(*args, env=env)
    assert first.code == 0, first.err
    written = sorted(p for p in cache.rglob("*") if p.is_file())
    assert written, "the first check keeps its caches"
    assert spy.call_count == 0
    for path in written:  # what a power loss may leave of a cache written without fsync
        path.write_bytes(b"")
    again = run_in_process(*args, env=env)
    assert (again.code, again.out) == (first.code, first.out), again.err
