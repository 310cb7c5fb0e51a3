"""Big wheels on an index without PEP 658 files (issue 25 item 5): `lock` reads METADATA from
the zip's central directory with range requests (or streams the file to disk when the server
ignores ranges), so its peak memory does not grow with the wheel."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dtkguard.lock.read import files, read_lock
from tests.support.cli import REPO
from tests.support.index import serve_index
from tests.support.rss import measure
from tests.support.venvs import hermetic_env, run_uv
from tests.support.wheels import build_big_wheel, build_wheel

from .conftest import HERE

SIZE = 80 << 20
#: the budget of issue 25 (the interpreter, dtkguard and resolvelib take about 40 MB)
PEAK_RSS = 100 << 20
USER, PASSWORD = "bob", "pw-big-Qx3"


@pytest.fixture(scope="module")
def big_house(tmp_path_factory):
    w = tmp_path_factory.mktemp("big") / "w"
    build_big_wheel(w, "big", "1.0", SIZE, requires_dist=["lib>=1"])
    build_wheel(w, "lib", "1.0")
    return w


def _lock_peak(tmp_path, url: str) -> tuple[subprocess.CompletedProcess, int]:
    """Run `dtkguard lock big` and return it with its own peak RSS in bytes."""
    env = hermetic_env(PYTHONPATH=str(REPO), DTKGUARD_CACHE_DIR=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "dtkguard", "lock", "big", "--policy", "dtk-25.04.1", *HERE,
           "--index-url", url, "-o", "pylock.big.toml"]  # fmt: skip
    got = measure(cmd, env=env, cwd=tmp_path)
    return subprocess.CompletedProcess(cmd, got.returncode, "", got.output), got.peak_rss


def test_range_requests_read_only_the_central_directory(big_house, tmp_path):
    with serve_index(big_house, metadata=False, auth=(USER, PASSWORD)) as server:
        url = server.url.replace("http://", f"http://{USER}:{PASSWORD}@")
        proc, peak = _lock_peak(tmp_path, url)
        assert proc.returncode == 0, proc.stderr
        assert server.ranges, "no range request was made"
        assert server.file_bytes < 1 << 20  # of an 80 MiB wheel
        assert peak < PEAK_RSS, f"peak RSS {peak >> 20} MiB"
    big = read_lock(tmp_path / "pylock.big.toml").by_name()["big"]
    wheel = big_house / "big-1.0-py3-none-any.whl"
    assert next(files(big)).size == wheel.stat().st_size
    assert str(big.version) == "1.0" and "lib" in read_lock(tmp_path / "pylock.big.toml").by_name()


def test_a_server_without_ranges_is_streamed_to_disk_not_memory(big_house, tmp_path):
    with serve_index(big_house, metadata=False, ranges=False) as server:
        proc, peak = _lock_peak(tmp_path, server.url)
        assert proc.returncode == 0, proc.stderr
        assert not server.ranges and server.file_bytes >= SIZE
        assert peak < PEAK_RSS, f"peak RSS {peak >> 20} MiB"
        uv = run_uv("pip", "compile", "--python", sys.executable, "--no-cache", "--index-url",
                    server.url, "-", input="big\n")  # fmt: skip
        assert "big==1.0" in uv.stdout and "lib==1.0" in uv.stdout
