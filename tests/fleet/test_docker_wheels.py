"""The README's Docker recipe fills dist/ with wheels for the image's Python (3.10 for the DAS
images), from a checkout and from an index, and the Dockerfile's own install step installs them
offline into a real Python 3.10 venv."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fleet.docker_recipe import (
    DOCKER,
    TITLE,
    checkout_copy,
    index_dir,
    install_step,
    run_wheels,
    wheel_blocks,
)
from tests.support.cache import IMAGE_PLATFORMS, IMAGE_PYTHONS, CacheMissing
from tests.support.index import serve_index
from tests.support.pythons import find_python
from tests.support.readme import code_blocks
from tests.support.venvs import hermetic_env

PY310 = find_python("3.10")


def test_readme_dockerfile_is_the_plugin_file():
    (block,) = code_blocks(TITLE, "dockerfile")
    assert block == (DOCKER / "Dockerfile").read_text()


def test_readme_paths_agree_with_the_dockerfile():
    checkout, index = wheel_blocks()
    dockerfile = (DOCKER / "Dockerfile").read_text()
    for block in (checkout, index):
        assert "-d plugins/docker/dist/" in block  # the build context's dist/ ...
        words = shlex.split(block.replace("\\\n", " "), comments=True)
        assert [w for w in words if w.startswith("manylinux")] == list(IMAGE_PLATFORMS)
    assert "COPY dist/ /tmp/dtkguard-dist/" in dockerfile  # ... is what the build copies
    build = code_blocks(TITLE, "sh")[2]
    assert "cp pylock.vllm.toml plugins/docker/pylock.toml" in build
    assert build.rstrip().endswith(" plugins/docker")  # the context is the plugin directory
    copy = next(line for line in dockerfile.splitlines() if line.startswith("COPY gate.sh"))
    for name in copy.split()[1:-1]:  # pylock.tom[l]: the lock, when the context has one
        assert (DOCKER / name).exists() or name == "pylock.tom[l]", name
    assert "/opt/dtkguard/gate.sh" in dockerfile.splitlines()[-1]
    assert "3.10" in IMAGE_PYTHONS and "PY=3.10" in checkout


@pytest.fixture(scope="module")
def recipe_index(tmp_path_factory):
    try:
        served = index_dir(tmp_path_factory.mktemp("recipe-index"))
    except CacheMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    # "from an index": dtkguard itself is on it, as a release would be
    built = tmp_path_factory.mktemp("dtkguard-wheel")
    source = checkout_copy(tmp_path_factory.mktemp("checkout"))
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index", "-f", str(served)]
    proc = subprocess.run(
        [*pip, "-w", str(built), str(source)], env=hermetic_env(), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = built.glob("dtkguard-*.whl")
    shutil.copy2(wheel, served / wheel.name)
    with serve_index(served) as server:
        yield server


def _install_offline(dist: Path, python: str, venv: Path) -> subprocess.CompletedProcess[str]:
    """The Dockerfile's install step (its venv and pip install), with local paths."""
    step = install_step().split(" && ")
    commands = [c for c in step if " -m venv " in c or "/bin/pip install" in c]
    assert len(commands) == 2, step
    script = " && ".join(commands)
    script = script.replace("${PYTHON}", python).replace("/opt/dtkguard", str(venv))
    script = script.replace("/tmp/dtkguard-dist", str(dist))
    return subprocess.run(["sh", "-c", script], env=hermetic_env(), capture_output=True, text=True)


@pytest.mark.skipif(PY310 is None, reason="python3.10 is not installed (no 3.10 interpreter)")
@pytest.mark.parametrize("way", ["checkout", "index"])
def test_wheels_for_python_310_install_offline(way, recipe_index, tmp_path):
    checkout, index = wheel_blocks()
    cwd = checkout_copy(tmp_path / "dtkguard") if way == "checkout" else tmp_path / "work"
    cwd.mkdir(exist_ok=True)
    dist = run_wheels(checkout if way == "checkout" else index, "3.10", cwd, recipe_index.url)
    names = sorted(p.name for p in dist.glob("*.whl"))
    assert any(n.startswith("pydantic_core-") and "-cp310-" in n for n in names), names
    assert not any("-cp311-" in n for n in names), names
    proc = _install_offline(dist, PY310, tmp_path / "venv")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    dtkguard = tmp_path / "venv" / "bin" / "dtkguard"
    run = subprocess.run(
        [str(dtkguard), "policy", "check", "dtk-25.04.1"],
        env=hermetic_env(),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    version = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "python"), "-c", "import sys; print(sys.version[:5])"],
        capture_output=True,
        text=True,
    ).stdout
    assert version.startswith("3.10.")


def test_host_wheels_do_not_fit_python_310_offline(recipe_index, tmp_path):
    """The old recipe (`pip wheel -w dist/ dtkguard` on a 3.11 host) fails in a 3.10 image:
    the failure the recipe above exists for, so this test can tell the two apart."""
    if PY310 is None:
        pytest.skip("python3.10 is not installed (no 3.10 interpreter)")
    _checkout, index = wheel_blocks()
    dist = run_wheels(index, "3.11", tmp_path, recipe_index.url)  # the host's Python
    proc = _install_offline(dist, PY310, tmp_path / "venv")
    assert proc.returncode != 0
    assert "pydantic-core" in proc.stderr.lower() or "pydantic_core" in proc.stderr
