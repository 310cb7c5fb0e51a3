"""Fixtures for lock and resolve tests: the DAS 25.04.1 wheelhouses and a live index."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import dtkguard_in
from tests.support.das_image import build_community, build_vendor
from tests.support.index import serve_index
from tests.support.venvs import hermetic_env

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def das_wheelhouses(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(community, vendor) wheelhouses: vLLM 0.8.5/0.9.2 closures and the 23 DAS builds."""
    base = tmp_path_factory.mktemp("das")
    community, vendor = base / "community", base / "vendor"
    build_community(community, ("vllm085", "vllm092"))
    build_vendor(vendor)
    return community, vendor


@pytest.fixture()
def das_index(das_wheelhouses):
    """The community wheelhouse served as a PEP 503/691/658 index on 127.0.0.1."""
    with serve_index(das_wheelhouses[0]) as server:
        yield server


@pytest.fixture(scope="session")
def portable_index(tmp_path_factory: pytest.TempPathFactory):
    """The same community packages as pure-Python wheels, for tests that install a lock with
    the interpreter running the tests (which need not be the policy's CPython 3.10)."""
    community = tmp_path_factory.mktemp("das-portable")
    build_community(community, ("vllm085",), tag="py3-none-any")
    with serve_index(community) as server:
        yield server


#: lock for the interpreter running the tests (the policy's target is Python 3.10)
HERE = ("--python-version", f"{sys.version_info.major}.{sys.version_info.minor}")


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m dtkguard ARGS`` hermetically, with this checkout first on the path."""
    env = hermetic_env(DTKGUARD_CACHE_DIR=str(REPO / ".cache" / "dtkguard"))
    return dtkguard_in(env, *args, cwd=cwd)
