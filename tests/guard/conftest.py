"""Guard fixtures: real venvs holding the fake DAS vendor builds, guarded by `guard install`.

``guarded`` (module scope, one per pip version) is shared by every case that must not change
the environment (each asserts that with a snapshot); ``fresh`` is a new guarded venv for cases
that install.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from dtkguard.env.store import EnvStore, env_store
from tests.support.cache import MATRIX_PIP_VERSIONS, PIP_VERSIONS, find_wheel
from tests.support.cli import dtkguard_in
from tests.support.reports import DAS_25041
from tests.support.stores import store_env
from tests.support.venvs import Venv, hermetic_env, make_venv
from tests.support.wheels import build_sdist, build_wheel

REPO = Path(__file__).resolve().parents[2]
VENDOR = ("torch", "torchvision", "torchaudio", "triton")
TORCH = DAS_25041["torch"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "pip_version" in metafunc.fixturenames:
        expr = metafunc.config.getoption("-m") or ""
        matrix = "pip_matrix" in expr and "not pip_matrix" not in expr
        # the default run: oldest and newest pip; `pytest -m pip_matrix`: one pip per major
        versions = (
            [pytest.param(v, marks=pytest.mark.pip_matrix) for v in MATRIX_PIP_VERSIONS]
            if matrix
            else list(PIP_VERSIONS)
        )
        metafunc.parametrize("pip_version", versions, scope="module")


@dataclass
class Guarded:
    venv: Venv
    policy: Path
    index_args: list[str]
    extra: Path

    def pip(self, *args: str, env: dict[str, str] | None = None, module: bool = False):
        """Plain pip of the venv (its ``bin/pip`` script, or ``python -m pip``)."""
        cmd = [self.venv.python, "-m", "pip"] if module else [self.venv.bin / "pip"]
        return subprocess.run(
            [*map(str, cmd), *args], env=env or hermetic_env(), capture_output=True, text=True
        )

    @property
    def store(self) -> EnvStore:
        """The env's folder in the guard's store (the test's ``DTKGUARD_STORE``)."""
        return env_store(self.venv.path)

    def dtkguard(self, *args: str, env: dict[str, str] | None = None):
        """``python -m dtkguard ARGS`` from this checkout (the dev interpreter)."""
        return dtkguard_in(env or hermetic_env(), *args)

    def dtkpip(self, *args: str, env: dict[str, str] | None = None):
        return self.dtkguard("pip", "--python", str(self.venv.python), *args, env=env)


@pytest.fixture(scope="session")
def extra_wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Packages of the matrix that no report has: one pinning torch 2.6.0 (and an older
    release that takes any torch >= 2.0), and an sdist that builds under build isolation."""
    dest = tmp_path_factory.mktemp("extra-wheels")
    build_wheel(dest, "pins-torch", "1.0", requires_dist=["torch>=2.0"])
    build_wheel(dest, "pins-torch", "2.0", requires_dist=["torch==2.6.0"])
    build_sdist(dest, "sdist-needs-torch", "1.0", requires_dist=["torch>=2.0"])
    return dest


@pytest.fixture(scope="session")
def public_dir(
    tmp_path_factory: pytest.TempPathFactory, community_wheelhouse: Path, wheel_cache: Path
) -> Path:
    """The community wheels as find-links, with the real setuptools/wheel of the wheel cache
    in place of the metadata-only ones (pip's build isolation needs working ones)."""
    dest = tmp_path_factory.mktemp("public")
    for wheel in community_wheelhouse.glob("*.whl"):
        if not wheel.name.startswith(("setuptools-", "wheel-")):
            (dest / wheel.name).symlink_to(wheel)
    for name in ("setuptools", "wheel"):
        wheel = find_wheel(name)
        (dest / wheel.name).symlink_to(wheel)
    return dest


@pytest.fixture(scope="session")
def guard_policy(tmp_path_factory: pytest.TempPathFactory, vendor_wheelhouse: Path) -> Path:
    path = tmp_path_factory.mktemp("policy") / "site.toml"
    path.write_text(
        '[policy]\nname = "site-das"\nextends = ["dtk-25.04.1"]\n\n'
        f"[sources]\nfind-links = [{str(vendor_wheelhouse)!r}]\n".replace("'", '"')
    )
    return path


def _build(
    path: Path,
    pip_version: str,
    policy: Path,
    vendor: Path,
    community: Path,
    extra: Path,
    with_vllm: bool = True,
) -> Guarded:
    """``with_vllm``: also the vendor vllm, without its (community) requirements."""
    venv = make_venv(path, pip_version=pip_version)
    index = ["--no-index", "-f", str(community), "-f", str(extra)]
    pins = [f"{n}=={DAS_25041[n]}" for n in VENDOR]
    venv.pip("install", *index, "-f", str(vendor), *pins)
    if with_vllm:
        vllm = f"vllm=={DAS_25041['vllm']}"
        venv.pip("install", "--no-index", "-f", str(vendor), "--no-deps", vllm)
    guarded = Guarded(venv, policy, index, extra)
    proc = guarded.dtkguard(
        "guard", "install", "--python", str(venv.python), "--policy", str(policy)
    )
    assert proc.returncode == 0, proc.stderr
    return guarded


@pytest.fixture(scope="session")
def build_guarded(
    guard_policy: Path, vendor_wheelhouse: Path, public_dir: Path, extra_wheelhouse: Path
) -> Callable[..., Guarded]:
    """``build_guarded(path, pip_version=newest)``: a venv at ``path`` with the vendor builds,
    guarded by `guard install`."""

    def build(path: Path, pip_version: str = PIP_VERSIONS[-1], with_vllm: bool = True) -> Guarded:
        return _build(
            path,
            pip_version,
            guard_policy,
            vendor_wheelhouse,
            public_dir,
            extra_wheelhouse,
            with_vllm=with_vllm,
        )

    return build


@pytest.fixture(scope="module")
def guarded(
    pip_version: str,
    tmp_path_factory: pytest.TempPathFactory,
    build_guarded: Callable[..., Guarded],
    module_store: Path,
) -> Guarded:
    """A guarded venv shared by the cases that must leave it unchanged (its store is the
    module's: `private_store` gives it to every test that uses this fixture)."""
    with store_env(module_store):
        path = tmp_path_factory.mktemp(f"guarded-{pip_version}") / "venv"
        return build_guarded(path, pip_version)


@pytest.fixture
def fresh(pip_version: str, tmp_path: Path, build_guarded: Callable[..., Guarded]) -> Guarded:
    """A new guarded venv for a case that installs."""
    return build_guarded(tmp_path / "venv", pip_version)


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Paths added, removed or modified between two snapshots."""
    keys = set(before) | set(after)
    return sorted(k for k in keys if before.get(k) != after.get(k))


def assert_build_refused_and_put_back(
    g: Guarded, proc: subprocess.CompletedProcess[str], before: dict[str, str]
) -> None:
    """dtkuv refused what a build changed in the vendor files (``proc``), put it back (the
    venv as its snapshot ``before``), installed nothing of the build, and `check` passes."""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "vendor-files-changed" in proc.stderr, proc.stderr
    assert "the guard put back what uv changed" in proc.stderr, proc.stderr
    assert changed(before, g.venv.snapshot()) == []
    assert "evilbuild" not in g.venv.installed()
    assert g.venv.installed()["torch"] == TORCH
    check = g.dtkguard("check", "--python", str(g.venv.python))
    assert check.returncode == 0, check.stdout + check.stderr


os.environ.setdefault(
    "DTKGUARD_CACHE_DIR", str(Path("/tmp") / f"dtkguard-test-cache-{os.getuid()}")
)
