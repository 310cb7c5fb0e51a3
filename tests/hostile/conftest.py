"""Hostile and broken inputs, built for real: FIFOs, device links, read-only and full folders."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_cli import dtkguard
from tests.sitetree import vendor_site

#: seconds after which a run counts as hung (a FIFO read blocks forever)
HANG = 120


def run(*args: str, cache: Path, **kw):
    """The CLI in a subprocess, with a private cache and a hang guard."""
    return dtkguard(*args, env={"DTKGUARD_CACHE_DIR": str(cache), **kw.pop("env", {})},
                    timeout=HANG, **kw)  # fmt: skip


def one_error_line(proc) -> str:
    """The single stderr line of a bad-input exit; fails on tracebacks and chatter."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("dtkguard: error: "), lines[0]
    return lines[0].removeprefix("dtkguard: error: ")


def make_special(path: Path, kind: str) -> Path:
    """``path`` as a FIFO, or a symlink to /dev/zero or /dev/urandom."""
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(f"/dev/{kind}")
    return path


SPECIALS = ["fifo", "zero", "urandom"]


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return vendor_site(tmp_path / "site")


@pytest.fixture
def mounts() -> Iterator[list[Path]]:
    done: list[Path] = []
    yield done
    for path in reversed(done):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def mount(mounts: list[Path], *args: str) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"mount (root, CAP_SYS_ADMIN) unavailable: {proc.stderr.strip()}")
    mounts.append(Path(args[-1]))
