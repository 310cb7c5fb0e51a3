"""The README's Docker recipe, as the tests run it: the wheels for the image, the Dockerfile."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.cache import REPO_ROOT, find_wheel, image_wheels
from tests.support.readme import code_blocks, run_shell
from tests.support.venvs import hermetic_env

DOCKER = REPO_ROOT / "plugins" / "docker"
TITLE = "Docker build gate"


def wheel_blocks() -> tuple[str, str]:
    """(from a checkout, from an index): the README's two ways to fill plugins/docker/dist/."""
    checkout, index, _build = code_blocks(TITLE, "sh")
    return checkout, index


def build_block() -> str:
    return code_blocks(TITLE, "sh")[2]


def for_python(block: str, version: str) -> str:
    """The block with ``PY`` set to the image's Python ``version`` (the README's one knob)."""
    out, n = re.subn(r"^PY=\S+", f"PY={version}", block, flags=re.M)
    assert n == 1, block
    return out


def checkout_copy(dest: Path) -> Path:
    """A checkout of this repository as it is now (tracked and new files, nothing ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        src = REPO_ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def index_dir(dest: Path, *extra: Path) -> Path:
    """What the recipe's index must hold: dtkguard's dependencies for every image Python, the
    build backend of a checkout (setuptools, wheel), and ``extra`` wheels."""
    dest.mkdir(parents=True, exist_ok=True)
    for wheel in [*image_wheels().glob("*.whl"), find_wheel("setuptools"), find_wheel("wheel")]:
        shutil.copy2(wheel, dest / wheel.name)
    for wheel in extra:
        shutil.copy2(wheel, dest / wheel.name)
    return dest


def recipe_env(index_url: str) -> dict[str, str]:
    """Hermetic, with this test interpreter's ``pip`` first on PATH and the index as pip's
    default (what the README's bare ``pip`` would use on a builder's host)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return hermetic_env(PATH=path, PIP_INDEX_URL=index_url)


def run_wheels(block: str, python: str, cwd: Path, index_url: str) -> Path:
    """Run one wheel block for an image Python; returns plugins/docker/dist/ under ``cwd``."""
    proc = run_shell(for_python(block, python), cwd=cwd, env=recipe_env(index_url))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return cwd / "plugins" / "docker" / "dist"


def install_step() -> str:
    """The Dockerfile's RUN that installs dtkguard into its venv, continuation lines joined."""
    text = re.sub(r"\s*\\\n\s*", " ", (DOCKER / "Dockerfile").read_text())
    (run,) = [line[4:] for line in text.splitlines() if line.startswith("RUN ${PYTHON} -m venv")]
    return run
