"""`dtkguard check` on real venvs with real wheels installed by real pip (hermetic)."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import dtkguard_in
from tests.support.sitetree import COMMUNITY_TORCH_VERSION_PY, VENDOR_TORCH_VERSION_PY
from tests.support.venvs import hermetic_env, make_venv
from tests.support.wheels import build_wheel


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory):
    house = tmp_path_factory.mktemp("wheels")
    build_wheel(
        house,
        "torch",
        "2.4.1+das.opt1.dtk25041",
        files={"torch/__init__.py": "", "torch/version.py": VENDOR_TORCH_VERSION_PY},
    )
    build_wheel(house, "triton", "3.0.0+das.opt1.dtk25041", files={"triton/__init__.py": ""})
    build_wheel(
        house,
        "vllm",
        "0.8.5.post1+das.opt1.dtk25041",
        requires_dist=["torch==2.4.1+das.opt1.dtk25041", "triton==3.0.0+das.opt1.dtk25041"],
        files={"vllm/__init__.py": ""},
    )
    community = tmp_path_factory.mktemp("community")
    build_wheel(
        community,
        "torch",
        "2.7.0",
        requires_dist=["nvidia-cublas-cu12==12.6.4.1"],
        files={"torch/__init__.py": "", "torch/version.py": COMMUNITY_TORCH_VERSION_PY},
    )
    build_wheel(community, "nvidia-cublas-cu12", "12.6.4.1", files={"nvidia/__init__.py": ""})
    build_wheel(
        community, "lmslim", "0.3.1+das.opt4.dtk2604.torch290", files={"lmslim/__init__.py": ""}
    )
    return house, community


def check(tmp_path, *target):
    env = {**hermetic_env(), "NO_COLOR": "1", "DTKGUARD_CACHE_DIR": str(tmp_path / "cache")}
    return dtkguard_in(env, "check", *target, "--format", "json")


def test_real_pip_install_then_clobber(tmp_path, wheelhouse):
    house, community = wheelhouse
    venv = make_venv(tmp_path / "venv")
    venv.pip("install", "--no-index", "--find-links", str(house), "vllm")
    assert venv.installed()["torch"] == "2.4.1+das.opt1.dtk25041"

    clean = check(tmp_path, "--python", str(venv.python))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    data = json.loads(clean.stdout)
    assert data["verdict"] == "pass" and data["facts"]["dists"] >= 4

    # the careless install: a community torch from the "public" folder replaces the vendor one
    venv.pip("install", "--no-index", "--find-links", str(community), "torch==2.7.0", "lmslim")
    dirty = check(tmp_path, "--python", str(venv.python))
    assert dirty.returncode == 1
    rules = {(f["rule"], f["subject"]) for f in json.loads(dirty.stdout)["findings"]}
    assert rules == {
        ("vendor-replaced", "torch"),
        ("torch-build", "torch"),
        ("denied-package", "nvidia-cublas-cu12"),
        ("dtk-mixed", "lmslim"),
        ("torch-abi", "lmslim"),
        ("vendor-mismatch", "lmslim"),
    }
    # the same venv seen as a folder of site-packages gives the same verdict
    by_path = check(tmp_path, "--path", str(venv.site_packages))
    assert by_path.returncode == 1
    assert json.loads(by_path.stdout)["findings"] == json.loads(dirty.stdout)["findings"]
