"""A vendor build's shared object swapped for a CUDA one is named by what it links: the
baseline of `guard install` records each vendor binary's DT_NEEDED, `check` compares, and
`audit --verify-files` names what the modified file links now. Real pip, a real guarded venv."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import dtkguard_in
from tests.support.elf import CUDART, GALAXYHIP, build_shared
from tests.support.venvs import hermetic_env, make_venv
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache

FLASH = "2.6.1+das.opt1.dtk25041"
EXT = "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so"


@pytest.fixture(scope="module")
def swapped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("swap")
    dtk = build_shared(tmp / "so" / "dtk.so", (GALAXYHIP,)).read_bytes()
    cuda = build_shared(tmp / "so" / "cuda.so", (CUDART,)).read_bytes()
    wheel = build_wheel(tmp / "w", "flash_attn", FLASH, tag="py3-none-linux_x86_64",
                        files={EXT: dtk, "flash_attn/__init__.py": ""})  # fmt: skip
    venv = make_venv(tmp / "venv", pip_version="26.3")
    venv.pip("install", "--no-index", "--no-deps", str(wheel))
    env = hermetic_env()
    proc = dtkguard_in(env, "guard", "install", "--python", str(venv.python))
    assert proc.returncode == 0, proc.stderr
    target = venv.site_packages / EXT
    target.write_bytes(cuda)  # a manual copy no hook sees
    return venv.python, env


def test_check_names_the_swapped_binary_by_what_it_links(swapped):
    python, env = swapped
    proc = dtkguard_in(env, "check", "--python", str(python), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    found = {f["rule"]: f for f in json.loads(proc.stdout)["findings"]}
    changed = found["vendor-files-changed"]
    assert f"now links {CUDART}" in changed["message"]
    assert f"(recorded: {GALAXYHIP}" in changed["message"]
    [entry] = [e for e in changed["evidence"]["files"] if e["path"] == EXT]
    assert entry["needed_recorded"][0] == GALAXYHIP and entry["needed_now"][0] == CUDART
    assert found["cuda-binary"]["subject"] == "flash-attn"


def test_audit_verify_files_names_what_the_modified_file_links(swapped):
    python, env = swapped
    proc = dtkguard_in(env, "audit", "--python", str(python), "--verify-files", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    modified = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "file-modified"]
    assert modified and f"(now links {CUDART}" in modified[0]["message"]
