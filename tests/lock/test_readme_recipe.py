"""The README's image-builder recipe, run as written: lock under the policy with the vendor
wheelhouse, install the lock with pip into the image's Python (3.10, as the policy's target),
audit the image root against the lock. Only paths and the index are put in."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from dtkguard.lock.read import read_lock
from tests.support.pythons import find_python
from tests.support.readme import code_blocks, run_shell
from tests.support.venvs import hermetic_env, make_venv

PY310 = find_python("3.10")


@pytest.mark.skipif(PY310 is None, reason="python3.10 is not installed (the policy's target)")
def test_image_builder_recipe_as_written(tmp_path, das_wheelhouses, das_index):
    (block,) = code_blocks("Image builder", "sh")
    vendor = tmp_path / "das-wheels"
    shutil.copytree(das_wheelhouses[1], vendor)
    root = tmp_path / "image"  # the image: its Python's environment, pip 26.3 (reads pylock)
    image = make_venv(root / "opt" / "venv", pip_version="26.3", base_python=PY310)
    work = tmp_path / "work"
    work.mkdir()
    (work / "requirements.txt").write_text("vllm\n")
    conf = tmp_path / "pip.conf"  # the builder's pip configuration names the index
    conf.write_text(f"[global]\nindex-url = {das_index.url}\n")
    script = block.replace("/opt/das/wheels", str(vendor)).replace("/mnt/image", str(root))
    path = os.pathsep.join([str(image.bin), str(Path(sys.executable).parent), os.environ["PATH"]])
    env = hermetic_env(PATH=path, PIP_CONFIG_FILE=str(conf))
    proc = run_shell(script, cwd=work, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lock = read_lock(work / "pylock.vllm.toml")
    versions = lock.versions()
    assert versions["torch"] == "2.4.1+das.opt1.dtk25041"
    assert versions["vllm"] == "0.8.5.post1+das.opt1.dtk25041"
    installed = {k: v for k, v in image.installed().items() if k != "pip"}
    assert installed == versions  # pip installed the lock unmodified
    sarif = json.loads((work / "audit.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert not [r for r in results if r.get("level") == "error"], results
