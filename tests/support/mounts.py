"""Real mounts for tests that need a read-only or a full file system (root only).

``mounts`` is a fixture that unmounts, at teardown, every mount point `mount` added; `mount`
skips the test, naming what is missing, where mounting is not allowed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def mounts() -> Iterator[list[Path]]:
    done: list[Path] = []
    yield done
    for path in reversed(done):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def mount(mounts: list[Path], *args: str) -> None:
    """``mount ARGS``; the last argument is the mount point, unmounted after the test."""
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"mount (root, CAP_SYS_ADMIN) unavailable: {proc.stderr.strip()}")
    if Path(args[-1]) not in mounts:
        mounts.append(Path(args[-1]))
