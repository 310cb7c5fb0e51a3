"""The README's Docker recipe on a real Docker engine (marker ``docker``).

The engine and the base image come from `.ci/docker-up.sh` (run by `.ci/run`, or by the fixture
below when the engine is not up; then the fixture also stops it): Debian bookworm made with
debootstrap from the machine's Debian mirror, so Python 3.11. On it a DAS-like image: the vendor
builds of tests/support (``torch 2.4.1+das.opt1.dtk25041`` ...) installed into the system Python.

The README's blocks run as written, with only paths, the image names and the image's Python
version put in: the wheels for the image's Python from a checkout, then ``docker build`` of
plugins/docker (with ``--network host`` so that a user's layer reaches the test index on
127.0.0.1). Builds share their cached layers, so four builds cost about one and a half.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tests.fleet.docker_recipe import (
    DOCKER,
    build_block,
    checkout_copy,
    index_dir,
    run_wheels,
    wheel_blocks,
)
from tests.fleet.factory import write_lock
from tests.support.cache import REPO_ROOT
from tests.support.index import serve_index
from tests.support.need import root
from tests.support.readme import run_shell
from tests.support.reports import DAS_25041
from tests.support.venvs import hermetic_env

pytestmark = pytest.mark.docker

STATE = Path(os.environ.get("DTKGUARD_DOCKER_DIR", "/tmp/dtkguard-docker"))
BASE = os.environ.get("DTKGUARD_DOCKER_BASE", "dtkguard-ci/bookworm-python:1")
INSTALLED = ("torch", "torchvision", "torchaudio", "triton")
USER_LAYER = "# RUN ${PYTHON} -m pip install --no-cache-dir -r requirements.txt"


def _running() -> bool:
    try:
        os.kill(int((STATE / "dockerd.pid").read_text().strip()), 0)
    except (OSError, ValueError):
        return False
    return True


class Engine:
    """The docker client of the test engine (Debian's, next to its dockerd)."""

    def __init__(self) -> None:
        self.client = shutil.which("docker") or "docker"
        self.env = dict(os.environ, DOCKER_HOST=f"unix://{STATE / 'docker.sock'}")
        self.env["DOCKER_BUILDKIT"] = "0"  # the classic builder logs "Step N/M : INSTRUCTION"

    def __call__(self, *args: str, cwd: Path | None = None, timeout: float = 600):
        return subprocess.run(
            [self.client, *args],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def environ(self, extra: dict[str, str]) -> dict[str, str]:
        """``extra`` (a recipe's env) with this engine's settings."""
        return {**extra, **{k: v for k, v in self.env.items() if k.startswith("DOCKER")}}


@pytest.fixture(scope="session")  # shared with test_docker_node.py
def engine():
    """The running test engine; started (and stopped) here when not up."""
    root("the test Docker engine")
    started = False
    if not _running():
        up = subprocess.run(
            [str(REPO_ROOT / ".ci" / "docker-up.sh")], capture_output=True, text=True, timeout=1200
        )
        assert up.returncode == 0, up.stdout + up.stderr
        started = True
    docker = Engine()
    assert docker("image", "inspect", BASE).returncode == 0, f"no base image {BASE}"
    yield docker
    if started:
        subprocess.run([str(REPO_ROOT / ".ci" / "docker-down.sh")], check=True)


def _build(docker: Engine, context: Path, tag: str, dockerfile: str) -> None:
    (context / "Dockerfile").write_text(dockerfile)
    proc = docker("build", "--network", "host", "-t", tag, str(context))
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="session")  # built once for test_docker_node.py too
def images(engine, tmp_path_factory, vendor_wheelhouse, community_wheelhouse):
    """(clean DAS-like image, the same with community torch 2.4.1 in place of the vendor one)."""
    context = tmp_path_factory.mktemp("das-image")
    shutil.copytree(vendor_wheelhouse, context / "wheels")
    shutil.copytree(community_wheelhouse, context / "wheels", dirs_exist_ok=True)
    name = f"dtkguard-test/das-like-{uuid.uuid4().hex[:8]}"
    pins = " ".join(f"{n}=={DAS_25041[n]}" for n in INSTALLED)
    pip = "python3 -m pip install --no-cache-dir --no-index --find-links /tmp/wheels"
    _build(
        engine,
        context,
        f"{name}:clean",
        f"FROM {BASE}\nCOPY wheels/ /tmp/wheels/\n"
        # a DAS image's system Python is pip's to manage (Debian marks its own as external)
        "RUN rm -f /usr/lib/python3*/EXTERNALLY-MANAGED\n"
        f"RUN {pip} {pins} && {pip} --no-deps vllm=={DAS_25041['vllm']} && rm -rf /tmp/wheels\n",
    )
    # the community build by its file: torch==2.4.1 would match the vendor 2.4.1+das... too
    (community,) = community_wheelhouse.glob("torch-2.4.1-*.whl")
    _build(
        engine,
        context,
        f"{name}:community-torch",
        f"FROM {name}:clean\nCOPY wheels/{community.name} /tmp/\n"
        f"RUN {pip} --no-deps --force-reinstall /tmp/{community.name} && rm /tmp/*.whl\n",
    )
    yield f"{name}:clean", f"{name}:community-torch"
    engine("image", "rm", "-f", f"{name}:clean", f"{name}:community-torch")


@pytest.fixture(scope="module")
def recipe(engine, images, tmp_path_factory):
    """A checkout with plugins/docker/dist/ made by the README for the image's own Python."""
    py = engine(
        "run",
        "--rm",
        images[0],
        "python3",
        "-c",
        "import sys; print('%d.%d' % sys.version_info[:2])",
    )
    assert py.returncode == 0, py.stderr
    checkout = checkout_copy(tmp_path_factory.mktemp("checkout"))
    with serve_index(index_dir(tmp_path_factory.mktemp("index"))) as index:
        run_wheels(wheel_blocks()[0], py.stdout.strip(), checkout, index.url)
    # the lock of the clean image: everything its Python has
    listed = engine("run", "--rm", images[0], "python3", "-m", "pip", "list", "--format=json")
    assert listed.returncode == 0, listed.stderr
    pins = {canonicalize_name(d["name"]): d["version"] for d in json.loads(listed.stdout)}
    assert pins["torch"] == DAS_25041["torch"]
    write_lock(checkout / "pylock.vllm.toml", pins)
    return checkout


@pytest.fixture(scope="module")
def user_index(community_wheelhouse):
    """The "public index" a user's layer installs from, on 127.0.0.1 (reached by host network).
    Without PEP 658 metadata: bookworm's pip 23.0.1 fails on PEP 691's dict form of it."""
    with serve_index(community_wheelhouse, metadata=False) as server:
        yield server


def _docker_build(
    engine: Engine, recipe: Path, base: str, layer: str | None = None, *, lock: bool = True
):
    """The README's build block as written: only the base, the tag and the network put in; with
    ``layer``, the Dockerfile's "your layers go here" example replaced by it; ``lock=False``
    without its ``cp`` of the lock (the lock is optional)."""
    dockerfile = DOCKER / "Dockerfile"
    text = dockerfile.read_text()
    if layer is not None:
        assert USER_LAYER in text
        text = text.replace(USER_LAYER, layer)
    (recipe / "plugins" / "docker" / "Dockerfile").write_text(text)
    script = build_block()
    script, n = re.subn(r"--build-arg BASE=\S+", f"--build-arg BASE={base}", script)
    assert n == 1
    if not lock:
        (recipe / "plugins" / "docker" / "pylock.toml").unlink(missing_ok=True)
        script, n = re.subn(r"^cp \S+ plugins/docker/pylock.toml\n", "", script, flags=re.M)
        assert n == 1, script
    tag = f"dtkguard-test/recipe-{uuid.uuid4().hex[:8]}"
    script = script.replace("-t my-vllm", f"-t {tag}").replace(
        "docker build ", "docker build --network host "
    )
    proc = run_shell(script, cwd=recipe, env=engine.environ(hermetic_env()), timeout=900)
    engine("image", "rm", "-f", tag)
    return proc


def _failed_step(log: str) -> str:
    """The instruction of the last step the classic builder started."""
    steps = re.findall(r"^Step \d+/\d+ : (.*)$", log, re.M)
    return steps[-1] if steps else ""


def test_clean_base_builds(engine, images, recipe):
    proc = _docker_build(engine, recipe, images[0])
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "dtkguard check: PASS" in log
    assert "Successfully built" in log


def test_community_torch_in_the_base_fails_at_the_gate(engine, images, recipe):
    proc = _docker_build(engine, recipe, images[1])
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, log
    assert _failed_step(log).endswith("/opt/dtkguard/gate.sh"), log
    # check leads with the answer and the findings grouped; one line a finding under "Details:"
    findings = re.findall(r"^.*(?:CRITICAL|HIGH) \S+ \S+:.*$", log[log.rindex("Details:") :], re.M)
    assert [f.split()[:3] for f in findings] == [
        ["CRITICAL", "torch-build", "torch:"],  # its torch/version.py names CUDA
        ["CRITICAL", "vendor-replaced", "torch:"],
        ["HIGH", "drift-version", "torch:"],
    ], log
    assert not any("\x1b[" in f for f in findings)  # no colour from dtkguard in a build log
    assert "dtkguard gate: policy violation, build stopped" in log


def test_users_clobbering_layer_is_stopped_there(engine, images, recipe, user_index):
    layer = (
        f"RUN ${{PYTHON}} -m pip install --no-cache-dir --index-url {user_index.url} vllm==0.9.2"
    )
    proc = _docker_build(engine, recipe, images[0], layer)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, log
    assert _failed_step(log) == layer, log
    stopped = log[log.rindex("Step ") :]
    assert "dtkguard" in stopped, stopped
    # nothing of the community stack was downloaded, let alone installed
    assert not any(name.startswith("torch-2.7") for name in user_index.downloads())


def test_users_allowed_layer_builds(engine, images, recipe, user_index):
    layer = (
        "RUN ${PYTHON} -m pip install --no-cache-dir "
        f"--index-url {user_index.url} accelerate==1.6.0"
    )
    proc = _docker_build(engine, recipe, images[0], layer)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "Successfully installed accelerate-1.6.0" in log
    assert "dtkguard check: PASS" in log


def test_clean_base_builds_without_a_lock(engine, images, recipe):
    """No pylock.toml in the context: the gate checks the policy and the guard's baseline, and
    its last line says so."""
    proc = _docker_build(engine, recipe, images[0], lock=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "dtkguard check: PASS" in log
    gate = [line for line in log.splitlines() if line.startswith("dtkguard gate:")]
    assert gate == [
        "dtkguard gate: passed: checked /usr/bin/python3 against policy dtk-25.04.1, "
        "the guard's baseline and no lock (drift not checked)"
    ], log


def test_community_torch_without_a_lock_fails_at_the_gate(engine, images, recipe):
    proc = _docker_build(engine, recipe, images[1], lock=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, log
    assert _failed_step(log).endswith("/opt/dtkguard/gate.sh"), log
    assert "CRITICAL vendor-replaced torch:" in log
    assert (
        "dtkguard gate: policy violation, build stopped (fix the findings above): checked " in log
    )
