"""The guard's store in tests: each test has its own (``private_store`` in tests/conftest.py)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["store_env"]


@contextlib.contextmanager
def store_env(path: Path) -> Iterator[Path]:
    """``DTKGUARD_STORE`` = ``path`` inside the block (for fixtures wider than one test that
    guard an env: the store must outlive the test that first uses it)."""
    old = os.environ.get("DTKGUARD_STORE")
    os.environ["DTKGUARD_STORE"] = str(path)
    try:
        yield path
    finally:
        if old is None:
            os.environ.pop("DTKGUARD_STORE", None)
        else:
            os.environ["DTKGUARD_STORE"] = old
