"""The bypass matrix: every way of reaching pip is stopped in a guarded venv, and a veto leaves
the venv byte-identical; legitimate installs go through. Real pip, real venvs, real wheels."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.support.venvs import hermetic_env

pytestmark = pytest.mark.wheel_cache


def _torch_wheel(community: Path, version: str = "2.6.0") -> Path:
    return next(community.glob(f"torch-{version}-*.whl"))


def _stopped_cases(g: Guarded, community: Path, tmp: Path, index_url: str):
    idx = g.index_args
    reqs = tmp / "reqs.txt"
    reqs.write_text("accelerate==1.6.0\ntorch==2.6.0  # clobbers the vendor torch\n")
    proj = tmp / "proj"
    proj.mkdir(exist_ok=True)
    (proj / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "proj"\nversion = "0.1"\ndependencies = ["torch==2.6.0"]\n'
        "[tool.setuptools]\npackages = []\n"
    )
    wheel = _torch_wheel(community)
    url = index_url.replace("/simple/", f"/files/{wheel.name}")
    return {
        "vllm-0.9.2": (["install", *idx, "vllm==0.9.2"], {}, False),
        "pins-other-torch": (["install", *idx, "pins-torch==2.0"], {}, False),
        "upgrade-torch": (["install", *idx, "-U", "torch"], {}, False),
        "force-reinstall-community-2.4.1": (
            ["install", *idx, "--force-reinstall", "torch==2.4.1"],
            {},
            False,
        ),
        "no-deps-wheel-path": (["install", "--no-deps", str(wheel)], {}, False),
        "wheel-url": (["install", "--no-deps", url], {}, False),
        "isolated": (["--isolated", "install", *idx, "torch==2.6.0"], {}, False),
        "empty-PIP_CONSTRAINT": (["install", *idx, "torch==2.6.0"], {"PIP_CONSTRAINT": ""}, False),
        "python-m-pip": (["install", *idx, "torch==2.6.0"], {}, True),
        "python-I-m-pip": (["-I", "install", *idx, "torch==2.6.0"], {}, True),
        "uninstall-torch": (["uninstall", "-y", "torch"], {}, False),
        "nvidia-cublas-cu12": (["install", *idx, "nvidia-cublas-cu12"], {}, False),
        "requirements-file": (["install", *idx, "-r", str(reqs)], {}, False),
        "editable-project": (["install", *idx, "-e", str(proj)], {}, False),
    }


STOPPED = [
    "vllm-0.9.2",
    "pins-other-torch",
    "upgrade-torch",
    "force-reinstall-community-2.4.1",
    "no-deps-wheel-path",
    "wheel-url",
    "isolated",
    "empty-PIP_CONSTRAINT",
    "python-m-pip",
    "python-I-m-pip",
    "uninstall-torch",
    "nvidia-cublas-cu12",
    "requirements-file",
    "editable-project",
]


@pytest.mark.parametrize("case", STOPPED)
def test_plain_pip_is_stopped(
    case: str, guarded: Guarded, community_wheelhouse: Path, tmp_path: Path, public_index
) -> None:
    args, env_extra, module = _stopped_cases(
        guarded, community_wheelhouse, tmp_path, public_index.url
    )[case]
    before = guarded.venv.snapshot()
    if module and args[0] == "-I":  # python -I -m pip ...
        import subprocess

        proc = subprocess.run(
            [str(guarded.venv.python), "-I", "-m", "pip", *args[1:]],
            env=hermetic_env(**env_extra),
            capture_output=True,
            text=True,
        )
    else:
        proc = guarded.pip(*args, env=hermetic_env(**env_extra), module=module)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "dtkguard: refusing" in proc.stderr, proc.stderr
    assert "dtkpip" in proc.stderr and "dtkguard policy explain" in proc.stderr
    assert changed(before, guarded.venv.snapshot()) == []
    assert guarded.venv.installed()["torch"] == TORCH


def test_missing_policy_fails_closed(guarded: Guarded) -> None:
    policy = guarded.venv.path / "dtkguard" / "policy.json"
    saved = policy.read_bytes()
    try:
        policy.write_text("{not json")
        before = guarded.venv.snapshot()
        proc = guarded.pip("install", *guarded.index_args, "idna")
        assert proc.returncode == 1
        assert "missing or unreadable" in proc.stderr and "dtkguard guard install" in proc.stderr
        assert changed(before, guarded.venv.snapshot()) == []
        policy.unlink()
        proc = guarded.pip("uninstall", "-y", "torch")
        assert proc.returncode == 1 and "missing or unreadable" in proc.stderr
    finally:
        policy.write_bytes(saved)
    # read-only subcommands never need the policy
    assert guarded.pip("list").returncode == 0


def test_read_only_subcommands_pass(guarded: Guarded) -> None:
    before = guarded.venv.snapshot()
    listed = guarded.pip("list")
    assert listed.returncode == 0 and TORCH in listed.stdout
    assert guarded.pip("show", "torch").returncode == 0
    assert f"torch=={TORCH}" in guarded.pip("freeze").stdout
    assert guarded.pip("install", *guarded.index_args, "torch").returncode == 0  # satisfied
    assert changed(before, guarded.venv.snapshot()) == []


def test_legitimate_installs_pass(fresh: Guarded, vendor_wheelhouse: Path) -> None:
    g = fresh
    proc = g.pip("install", *g.index_args, "accelerate==1.6.0")
    assert proc.returncode == 0, proc.stderr
    assert g.venv.installed()["accelerate"] == "1.6.0"
    proc = g.pip("install", *g.index_args, "transformers==4.51.3")
    assert proc.returncode == 0, proc.stderr
    assert g.venv.installed()["transformers"] == "4.51.3"
    # an sdist built under build isolation: the hook leaves pip's build environment alone
    proc = g.pip("install", *g.index_args, "sdist-needs-torch")
    assert proc.returncode == 0, proc.stderr
    assert g.venv.installed()["sdist-needs-torch"] == "1.0"
    # a reinstall of the exact vendor build from the vendor wheelhouse
    pin = f"torch=={TORCH}"
    proc = g.pip(
        "install", "--force-reinstall", "--no-deps", "--no-index", "-f", str(vendor_wheelhouse), pin
    )
    assert proc.returncode == 0, proc.stderr
    assert "Successfully installed torch-2.4.1+das.opt1.dtk25041" in proc.stdout
    assert g.venv.installed()["torch"] == TORCH
    # --target installs elsewhere: left alone (documented gap)
    target = g.venv.path.parent / "target"
    proc = g.pip("install", "--no-deps", "--target", str(target), *g.index_args, "idna")
    assert proc.returncode == 0, proc.stderr


def test_override_env_var_is_recorded(fresh: Guarded) -> None:
    g = fresh
    env = hermetic_env(DTKGUARD_OVERRIDE="vendor asked us to test cublas")
    proc = g.pip("install", *g.index_args, "--no-deps", "nvidia-cublas-cu12", env=env)
    assert proc.returncode == 0, proc.stderr
    log = g.store.overrides.read_text()
    assert "vendor asked us to test cublas" in log and "nvidia-cublas-cu12" in log
    check = g.dtkguard("check", "--python", str(g.venv.python), "--format", "json")
    assert check.returncode == 1
    assert '"override-used"' in check.stdout and "vendor asked us to test cublas" in check.stdout
