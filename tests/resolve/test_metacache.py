"""The persistent metadata cache: hits across runs, and every damaged or planted entry is a miss
(the answer stays right), a folder others may write is not used, concurrent runs agree."""

from __future__ import annotations

import hashlib
import os
import subprocess

from packaging.requirements import Requirement

from dtkguard.resolve.http import Fetcher
from dtkguard.resolve.metacache import MetadataCache, link_key
from dtkguard.resolve.resolver import ResolveOptions, build_sources, resolve
from dtkguard.resolve.sources import FindLinks
from dtkguard.resolve.target import TargetEnv
from tests.lock.conftest import REPO
from tests.support.cli import command
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel


def _wheels(tmp_path):
    w = tmp_path / "w"
    build_wheel(w, "alpha", "1.0", requires_dist=["beta>=1"])
    build_wheel(w, "beta", "1.1")
    return w


def _lock(wheels, cache):
    sources = build_sources(None, Fetcher(), find_links=[str(wheels)])
    res = resolve([Requirement("alpha")], sources, None, TargetEnv(), ResolveOptions(cache=cache))
    return [(p.name, p.version) for p in res.packages]


def _entries(root):
    return sorted(p for p in (root / "metadata-v1").rglob("*") if p.is_file())


def test_second_run_reads_the_cache(tmp_path):
    wheels = _wheels(tmp_path)
    first = MetadataCache(tmp_path / "c")
    assert _lock(wheels, first) == [("alpha", "1.0"), ("beta", "1.1")]
    assert first.misses >= 2  # the prefetch thread may read an entry the main one just wrote
    assert len(_entries(tmp_path / "c")) == 2
    second = MetadataCache(tmp_path / "c")
    assert _lock(wheels, second) == [("alpha", "1.0"), ("beta", "1.1")]
    assert second.misses == 0
    assert second.hits >= 2


def test_a_rewritten_wheel_is_a_new_key(tmp_path):
    wheels = _wheels(tmp_path)
    _lock(wheels, MetadataCache(tmp_path / "c"))
    # alpha 1.0 rebuilt in place with another dependency: size and mtime change
    build_wheel(wheels, "alpha", "1.0", requires_dist=["beta>=1", "gamma"])
    build_wheel(wheels, "gamma", "3")
    os.utime(wheels / "alpha-1.0-py3-none-any.whl", ns=(1, 1))
    assert ("gamma", "3") in _lock(wheels, MetadataCache(tmp_path / "c"))


def test_corrupt_truncated_and_planted_entries_are_misses(tmp_path):
    wheels = _wheels(tmp_path)
    _lock(wheels, MetadataCache(tmp_path / "c"))
    alpha, beta = (
        next(p for p in _entries(tmp_path / "c") if f"Name: {n}".encode() in p.read_bytes())
        for n in ("alpha", "beta")
    )
    # alpha: a planted body claiming no dependencies, with a matching checksum but no key
    body = b"Metadata-Version: 2.1\nName: alpha\nVersion: 1.0\n\n"
    alpha.write_bytes(b"dtkguard-metadata 1\n" + hashlib.sha256(body).hexdigest().encode()
                      + b"\n\n" + body)  # fmt: skip
    # beta: truncated in the middle of its body
    beta.write_bytes(beta.read_bytes()[:-10])
    cache = MetadataCache(tmp_path / "c")
    assert _lock(wheels, cache) == [("alpha", "1.0"), ("beta", "1.1")]
    # each damaged entry was a miss (counted under a lock: the warming threads count too) and
    # was written again from the wheel
    assert cache.misses >= 2
    for name in ("alpha", "beta"):
        link = next(iter(FindLinks(wheels).links(name)))
        assert cache.get(*link_key(link)) == FindLinks(wheels).metadata(link)


def test_a_symlinked_entry_is_not_followed(tmp_path):
    wheels = _wheels(tmp_path)
    cache = MetadataCache(tmp_path / "c")
    link = next(iter(FindLinks(wheels).links("beta")))
    key, _ = link_key(link)
    # a valid-looking entry elsewhere, linked into the cache
    elsewhere = tmp_path / "planted"
    cache.put(key, b"Metadata-Version: 2.1\nName: beta\nVersion: 1.1\n\n")
    entry = cache._path(key)
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    assert cache.get(key) is None


def test_a_folder_others_can_write_is_not_used(tmp_path):
    root = tmp_path / "c"
    (root / "metadata-v1").mkdir(parents=True)
    os.chmod(root / "metadata-v1", 0o777)
    cache = MetadataCache(root)
    assert not cache.enabled
    assert _lock(_wheels(tmp_path), cache) == [("alpha", "1.0"), ("beta", "1.1")]
    assert _entries(root) == []


def test_concurrent_cli_runs_share_one_cache(tmp_path):
    wheels = _wheels(tmp_path)
    env = hermetic_env(PYTHONPATH=str(REPO), DTKGUARD_CACHE_DIR=str(tmp_path / "c"))

    def start(i: int) -> subprocess.Popen[str]:
        cmd = command("lock", "alpha", "--find-links", wheels, "--no-index",
                      "--python-version", "3.10", "-o", f"pylock.r{i}.toml")  # fmt: skip
        return subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)

    procs = [start(i) for i in range(4)]
    for proc in procs:
        assert proc.wait() == 0, proc.stderr.read()
    locks = {(tmp_path / f"pylock.r{i}.toml").read_text() for i in range(4)}
    assert len({lk.split("[tool.dtkguard]")[0] for lk in locks}) == 1
    assert len(_entries(tmp_path / "c")) == 2
    assert not [p for p in (tmp_path / "c").rglob(".tmp-*")]


def test_a_fifo_a_folder_or_a_huge_file_in_place_of_an_entry_is_a_miss(tmp_path):
    from dtkguard.resolve.metacache import MAX_ENTRY

    cache = MetadataCache(tmp_path / "c")
    for i, plant in enumerate(("fifo", "dir", "huge")):
        key = f"file\0/x/{i}"
        entry = cache._path(key)
        entry.parent.mkdir(parents=True, exist_ok=True)
        if plant == "fifo":
            os.mkfifo(entry)  # a reader that opened it blocking would hang here
        elif plant == "dir":
            entry.mkdir()
        else:
            with entry.open("wb") as fh:
                fh.truncate(MAX_ENTRY + 1)
        assert cache.get(key) is None, plant
    # and a put over a folder fails quietly
    cache.put("file\0/x/1", b"Name: x\n\n")
    assert cache.get("file\0/x/1") is None


def _pad(path, size):
    """Give a wheel exactly ``size`` bytes with a zip comment (the archive stays valid)."""
    import zipfile

    with zipfile.ZipFile(path, "a") as zf:
        zf.comment = b" " * (size - path.stat().st_size)
    assert path.stat().st_size == size


def test_a_wheel_rewritten_with_the_same_size_mtime_and_inode_is_a_new_key(tmp_path):
    """Issue 27 item 9: the key was (path, size, mtime, inode): a wheel rewritten in place
    keeping all three made `lock` take the old wheel's dependencies."""
    wheels = _wheels(tmp_path)
    build_wheel(wheels, "gamma", "3")
    build_wheel(wheels, "delta", "3")
    target = wheels / "alpha-1.0-py3-none-any.whl"
    other = build_wheel(tmp_path / "other", "alpha", "1.0", requires_dist=["beta>=1", "delta"])
    size = max(target.stat().st_size, other.stat().st_size) + 64
    _pad(target, size)
    _pad(other, size)
    st = target.stat()
    assert _lock(wheels, MetadataCache(tmp_path / "c")) == [("alpha", "1.0"), ("beta", "1.1")]
    with open(target, "r+b") as fh:  # the same inode, the same size
        fh.write(other.read_bytes())
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = target.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
    )
    assert ("delta", "3") in _lock(wheels, MetadataCache(tmp_path / "c"))
