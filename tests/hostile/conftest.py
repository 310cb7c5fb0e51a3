"""Hostile and broken inputs, built for real: FIFOs, device links, read-only and full folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.cli import dtkguard
from tests.support.mounts import mount  # noqa: F401 - used by the tests of this folder
from tests.support.sitetree import vendor_site

#: seconds after which a run counts as hung (a FIFO read blocks forever)
HANG = 120


def run(*args: str, cache: Path, **kw):
    """The CLI in a subprocess, with a private cache and a hang guard."""
    return dtkguard(*args, env={"DTKGUARD_CACHE_DIR": str(cache), **kw.pop("env", {})},
                    timeout=HANG, **kw)  # fmt: skip


def one_error_line(proc) -> str:
    """The single error line of a bad-input exit (warnings before it are allowed); fails on
    tracebacks and on a second error."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.startswith("dtkguard: error: ")]
    assert len(lines) == 1, proc.stderr
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
