"""Fixtures for the audit tests: real wheels, real venvs installed by pip and uv, hand-written
PEP 751 locks validated by ``packaging.pylock``, and an in-process CLI runner."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.support.cli import run_in_process as run_cli  # noqa: F401 - the audit tests' runner
from tests.support.elf import GALAXYHIP, write_elf
from tests.support.venvs import Venv, hermetic_env, make_venv
from tests.support.wheels import build_wheel

VENDOR_TORCH = "2.4.1+das.opt1.dtk25041"
DEMO_FILES = {
    "demo/__init__.py": "from .core import main\n",
    "demo/core.py": "def main():\n    print('demo')\n    return 0\n",
    "demo/data.txt": "x" * 5000,
}


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Vendor and community torch, a demo package with a console script, and a helper."""
    dest = tmp_path_factory.mktemp("wheelhouse")
    torch_files = {
        "torch/__init__.py": "from .version import __version__\n",
        # a real (hand-written) ELF shared object that links the DTK HIP runtime, 16 KiB
        "torch/lib/libtorch_hip.so": write_elf((GALAXYHIP, "libc.so.6"), pad=16384),
    }
    build_wheel(
        dest,
        "torch",
        VENDOR_TORCH,
        files={**torch_files, "torch/version.py": f"__version__ = {VENDOR_TORCH!r}\nhip = '6.2'\n"},
    )
    build_wheel(
        dest,
        "torch",
        "2.4.1",
        files={**torch_files, "torch/version.py": "__version__ = '2.4.1'\ncuda = '12.1'\n"},
    )
    build_wheel(
        dest,
        "Demo_Pkg",
        "1.0",
        files=DEMO_FILES,
        entry_points={"console_scripts": {"demo-cli": "demo.core:main"}},
    )
    build_wheel(dest, "helper", "2.0", files={"helper.py": "VALUE = 1\n"})
    return dest


def install(venv: Venv, wheelhouse: Path, *reqs: str) -> None:
    venv.pip("install", "--no-deps", "--no-index", "--find-links", str(wheelhouse), *reqs)


@pytest.fixture
def venv(tmp_path: Path, wheelhouse: Path) -> Venv:
    """A real venv with vendor torch, demo-pkg and helper installed by pip."""
    v = make_venv(tmp_path / "venv")
    install(v, wheelhouse, f"torch=={VENDOR_TORCH}", "demo-pkg==1.0", "helper==2.0")
    return v


def site(venv: Venv) -> str:
    return str(venv.site_packages)


def write_lock(path: Path, packages: Iterable[tuple[str, str]]) -> Path:
    """A minimal PEP 751 lock (validated by packaging.pylock) of ``(name, version)`` pairs."""
    lines = ['lock-version = "1.0"', 'created-by = "tests"', ""]
    for name, version in packages:
        lines += [
            "[[packages]]",
            f'name = "{name}"',
            f'version = "{version}"',
            "[[packages.wheels]]",
            f'name = "{name.replace("-", "_")}-{version}-py3-none-any.whl"',
            f'url = "file:///wheels/{name}-{version}-py3-none-any.whl"',
            "[packages.wheels.hashes]",
            f'sha256 = "{"0" * 64}"',
            "",
        ]
    text = "\n".join(lines)
    import tomlkit
    from packaging.pylock import Pylock

    Pylock.from_dict(tomlkit.parse(text).unwrap())  # a lock pip and uv would accept
    path.write_text(text)
    return path


@pytest.fixture
def quiet_env() -> dict[str, str]:
    """The hermetic environment plus no progress bar and no colour."""
    return hermetic_env(NO_COLOR="1", DTKGUARD_NO_PROGRESS="1")


@pytest.fixture(autouse=True)
def _no_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DTKGUARD_NO_PROGRESS", "1")
    monkeypatch.delenv("DTKGUARD_POLICY", raising=False)


def python_exe() -> str:
    return sys.executable


@pytest.fixture
def sleeper(venv):
    """A python process of the venv (started as ``venv/bin/python``), HIP_VISIBLE_DEVICES set."""
    env = {"PATH": "/usr/bin:/bin", "HIP_VISIBLE_DEVICES": "0,1"}
    proc = subprocess.Popen(
        [
            str(venv.python),
            "-c",
            "import sys, time; sys.stdout.write('up\\n'); sys.stdout.flush(); time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        env=env,
        cwd="/",
    )
    assert proc.stdout.readline() == b"up\n"
    yield proc
    proc.kill()
    proc.wait()
