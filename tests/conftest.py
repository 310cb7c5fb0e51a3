"""Shared fixtures. Everything is real (wheels, pip, uv, venvs, an HTTP index); all lazy.

Session fixtures:
  pip_reports          {report name: [PackageMeta]} of ``tests/data/pip-reports``
  community_wheelhouse dir of community wheels: vllm085 + vllm092 + hfstack + community torch 2.4.1
                       (+ its nvidia wheels) + the py3.10 backports the reports lack
  vendor_wheelhouse    dir of the 23 DAS 25.04.1 vendor wheels (torch 2.4.1+das.opt1.dtk25041 ...)
  wheel_cache          the offline wheel cache (pip 22.2.2 / 26.3, setuptools, wheel)
  uv                   path of the uv executable
Function fixtures:
  private_store        (autouse) ``DTKGUARD_STORE`` = a fresh tmp dir: every test has its own
                       guard store (CI runs as root and must never write /var/lib/dtkguard)
  public_index         IndexServer over community_wheelhouse (``.requests`` cleared per test)
  vendor_index         IndexServer over vendor_wheelhouse (``.requests`` cleared per test)
  hermetic             a fresh hermetic_env() dict

Marker ``wheel_cache``: the test fails (never skips) with a "run python tests/prepare.py" message
when the offline wheel cache is missing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cache import CacheMissing, uv_binary, wheel_dir
from tests.support.index import IndexServer, serve_index
from tests.support.reports import (
    PackageMeta,
    community_torch_241_packages,
    das_25041_packages,
    load_report,
    make_wheelhouse,
    py310_backports_packages,
    report_names,
)
from tests.support.stores import store_env
from tests.support.venvs import hermetic_env

COMMUNITY_REPORTS = ("vllm085", "vllm092", "hfstack")
#: fixture modules of tests/support (``mounts``)
pytest_plugins = ["tests.support.mounts"]


def pytest_configure(config: pytest.Config) -> None:
    # `guard install` records guarded interpreters under $XDG_STATE_HOME: never the user's
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="dtkguard-test-state-")
    # the guard's store: `private_store` gives each test its own; this one catches what runs
    # before it (session fixtures), so that no test run ever writes /var/lib/dtkguard as root
    os.environ["DTKGUARD_STORE"] = tempfile.mkdtemp(prefix="dtkguard-test-store-")
    config.addinivalue_line(
        "markers", "wheel_cache: needs the offline wheel cache (python tests/prepare.py)"
    )


@pytest.fixture(scope="module")
def module_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store shared by one module's tests: a module-scoped fixture that guards an env depends
    on it (and builds inside ``store_env(module_store)``); `private_store` then hands the same
    store to every test that uses that fixture."""
    return tmp_path_factory.mktemp("store-module")


@pytest.fixture(autouse=True)
def private_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Every test gets its own guard store (`dtkguard.env.store`), outside its venvs: the
    subprocesses a test runs inherit ``DTKGUARD_STORE`` through ``os.environ``. A test that
    uses a fixture built on `module_store` gets that one."""
    if "module_store" in request.fixturenames:
        path = request.getfixturevalue("module_store")
    else:
        path = tmp_path_factory.mktemp("store")
    with store_env(path):
        yield path


def _cache_problem() -> str | None:
    try:
        wheel_dir()
    except CacheMissing as exc:
        return str(exc)
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("wheel_cache") is not None:
        problem = _cache_problem()
        if problem:
            pytest.fail(problem, pytrace=False)


@pytest.fixture(scope="session")
def pip_reports() -> dict[str, list[PackageMeta]]:
    """Every bundled pip report, by name (``vllm085`` ...)."""
    return {name: load_report(name) for name in report_names()}


@pytest.fixture(scope="session")
def community_wheelhouse(
    tmp_path_factory: pytest.TempPathFactory, pip_reports: dict[str, list[PackageMeta]]
) -> Path:
    """A flat directory of community wheels (``py3-none-any``, real metadata)."""
    dest = tmp_path_factory.mktemp("community-wheels")
    packages = [p for name in COMMUNITY_REPORTS for p in pip_reports[name]]
    extra = [*community_torch_241_packages(), *py310_backports_packages()]
    make_wheelhouse(dest, [*packages, *extra])
    return dest


@pytest.fixture(scope="session")
def vendor_wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A flat directory of the 23 DAS 25.04.1 vendor wheels."""
    dest = tmp_path_factory.mktemp("vendor-wheels")
    make_wheelhouse(dest, das_25041_packages())
    return dest


@pytest.fixture(scope="session")
def _public_index_server(community_wheelhouse: Path) -> Iterator[IndexServer]:
    with serve_index(community_wheelhouse) as server:
        yield server


@pytest.fixture
def public_index(_public_index_server: IndexServer) -> IndexServer:
    """The "public index": PEP 503/691/658 over ``community_wheelhouse``; ``.requests`` starts
    empty in every test."""
    _public_index_server.clear()
    return _public_index_server


@pytest.fixture(scope="session")
def _vendor_index_server(vendor_wheelhouse: Path) -> Iterator[IndexServer]:
    with serve_index(vendor_wheelhouse) as server:
        yield server


@pytest.fixture
def vendor_index(_vendor_index_server: IndexServer) -> IndexServer:
    """The vendor wheelhouse as its own index (for index-priority tests); fresh ``.requests``."""
    _vendor_index_server.clear()
    return _vendor_index_server


@pytest.fixture
def hermetic() -> dict[str, str]:
    """A fresh :func:`hermetic_env` (no host pip/uv config)."""
    return hermetic_env()


@pytest.fixture(scope="session")
def wheel_cache() -> Path:
    """The offline wheel cache; fails with a "run python tests/prepare.py" message if missing."""
    problem = _cache_problem()
    if problem:
        pytest.fail(problem, pytrace=False)
    return wheel_dir()


@pytest.fixture(scope="session")
def uv() -> str:
    """Path of the uv executable."""
    try:
        return uv_binary()
    except CacheMissing as exc:
        problem = str(exc)
    pytest.fail(problem, pytrace=False)
