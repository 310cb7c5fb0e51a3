"""Long locks show progress on a terminal, and a failure names every project without a usable
file at once, first (issue 28 item 6, lock's part)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

from tests.support.cli import REPO
from tests.support.index import serve_index
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_sdist, build_wheel

from .conftest import HERE, run_cli


def test_a_terminal_sees_resolving_n_packages_m_fetched(tmp_path):
    w = tmp_path / "w"
    build_wheel(w, "app", "1.0", requires_dist=[f"dep{i}" for i in range(12)])
    for i in range(12):
        build_wheel(w, f"dep{i}", "1.0")
    env = hermetic_env(PYTHONPATH=str(REPO), DTKGUARD_CACHE_DIR=str(tmp_path / "c"),
                       TERM="xterm", COLUMNS="120")  # fmt: skip
    with serve_index(w) as server:
        master, slave = pty.openpty()
        cmd = [sys.executable, "-m", "dtkguard", "lock", "app", "--policy", "dtk-25.04.1", *HERE,
               "--index-url", server.url, "-o", "pylock.p.toml"]  # fmt: skip
        proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=slave, stderr=slave)
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait() == 0, seen.decode(errors="replace")
        os.close(master)
    text = seen.decode(errors="replace")
    assert "resolving …" in text and "packages," in text and "fetched" in text, text
    assert "wrote pylock.p.toml: 13 packages" in text
    # not a terminal: no spinner text, only the summary
    plain = run_cli("lock", "app", "--policy", "dtk-25.04.1", *HERE, "--find-links", w,
                    "--no-index", "-o", "pylock.q.toml", cwd=tmp_path)  # fmt: skip
    assert plain.returncode == 0 and "resolving" not in plain.stderr


def test_every_project_without_a_usable_file_is_named_first(tmp_path):
    w = tmp_path / "w"
    build_wheel(w, "app", "1.0", requires_dist=["tomli", "exceptiongroup", "async-timeout",
                                                 "protobuf<4"])  # fmt: skip
    build_wheel(w, "grpc", "1.0", requires_dist=["protobuf>=4"])
    for v in ("3.20", "4.25"):
        build_wheel(w, "protobuf", v)
    build_wheel(w, "tomli", "2.0", tag="cp312-cp312-macosx_11_0_arm64")
    build_sdist(w, "async-timeout", "4.0", metadata_version="2.2")
    # exceptiongroup: nowhere at all
    proc = run_cli("lock", "app", "grpc", "--policy", "dtk-25.04.1", *HERE, "--find-links", w,
                   "--no-index", "--only-binary", ":all:", "-o", "pylock.m.toml",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1
    lines = [ln.strip() for ln in proc.stderr.splitlines()[1:]]
    first = lines[:3]
    assert [ln.split(":", 2)[1].split()[0] for ln in first] == [
        "tomli",
        "exceptiongroup",
        "async-timeout",
    ], proc.stderr
    assert all(ln.startswith("no usable file for the target:") for ln in first)
    assert "(needed by app 1.0): tomli has wheels only for cp312 macosx" in first[0]
    assert "no source has a wheel of exceptiongroup" in first[1]
    assert "async-timeout 4.0: only an sdist, which --only-binary excludes" in first[2]
    assert not (tmp_path / "pylock.m.toml").exists()
