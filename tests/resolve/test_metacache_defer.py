"""Deferred cache writes (`MetadataCache.defer`/`flush`, what `lock` does while it resolves):
nothing is created until the flush, a deferred entry reads back through the same checks, and a
CLI lock leaves every entry on disk for the next run."""

from __future__ import annotations

import subprocess

from dtkguard.resolve.metacache import MetadataCache
from dtkguard.resolve.pagecache import CachedPage, PageCache
from tests.lock.conftest import REPO
from tests.support.cli import command
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel


def _files(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_deferred_entries_are_written_by_flush_and_read_back_meanwhile(tmp_path):
    cache = MetadataCache(tmp_path / "c")
    cache.defer()
    cache.put("wheel-sha256\0aa", b"Name: a\n\n")
    assert _files(cache.dir) == []  # nothing created yet
    assert cache.get("wheel-sha256\0aa") == b"Name: a\n\n"
    assert cache.get("wheel-sha256\0aa", "0" * 64) is None  # the expected sha256 still checked
    assert cache.get("wheel-sha256\0bb") is None
    cache.flush()
    assert len(_files(cache.dir)) == 1
    assert MetadataCache(tmp_path / "c").get("wheel-sha256\0aa") == b"Name: a\n\n"
    cache.put("wheel-sha256\0bb", b"Name: b\n\n")  # after the flush: written at once
    assert len(_files(cache.dir)) == 2
    assert not [p for p in cache.dir.iterdir() if p.name.startswith(".tmp-")]


def test_a_deferred_page_reads_back_as_a_page(tmp_path):
    pages = PageCache(tmp_path / "c")
    pages.defer()
    key = pages.key("http://127.0.0.1/simple/a/", "*/*", None)
    pages.save(key, CachedPage(200, "http://127.0.0.1/simple/a/", {"etag": '"1"'}, b"<a/>"))
    got = pages.load(key)
    assert got is not None and got.body == b"<a/>" and got.headers == {"etag": '"1"'}
    assert _files(pages.dir) == []
    pages.flush()
    again = PageCache(tmp_path / "c").load(key)
    assert again is not None and again.body == b"<a/>"


def test_a_cli_lock_leaves_its_entries_on_disk(tmp_path):
    w = tmp_path / "w"
    build_wheel(w, "alpha", "1.0", requires_dist=["beta>=1"])
    build_wheel(w, "beta", "1.1")
    env = hermetic_env(PYTHONPATH=str(REPO), DTKGUARD_CACHE_DIR=str(tmp_path / "c"))
    cmd = command("lock", "alpha", "--find-links", w, "--no-index", "--python-version", "3.10",
                  "-o", "pylock.t.toml")  # fmt: skip
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert len(_files(tmp_path / "c" / "metadata-v1")) == 2
    assert len(_files(tmp_path / "c" / "resolutions-v1")) == 1
