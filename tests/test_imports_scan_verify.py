"""`scan-model` of safetensors weights and `audit --verify-files` load only what they use.

Each case runs the real command line in a subprocess (the probe of `tests/test_imports.py`) and
reads the modules it loaded when it exited: no `dataclasses` (it imports `inspect`, `ast`,
`dis`, `tokenize`), no pickle or zip readers for a model without pickles, no
`concurrent.futures` (it imports `logging` and `traceback`) and no `multiprocessing` for
hashing on threads. The same runs check the result, so a module left out cannot pass by
skipping the work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.modelscan.modelkit import write_json, write_safetensors
from tests.support.sitetree import add_dist
from tests.support.venvs import hermetic_env
from tests.test_imports import _heavy
from tests.test_imports import _loaded as _probe

#: modules of `dataclasses` and of `concurrent.futures`: milliseconds at every start
START_UP = ("dataclasses", "inspect", "ast", "dis", "tokenize", "logging", "traceback")


def _loaded(*args: str, env: dict[str, str]) -> tuple:
    """The second run's process and modules: the first compiles the policy (a cache miss)."""
    _probe(*args, env=env)
    return _probe(*args, env=env)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return hermetic_env(
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        DTKGUARD_CACHE_DIR=str(tmp_path / "cache" / "d"),
        DTKGUARD_NO_PROGRESS="1",
    )


def test_scan_model_of_safetensors_loads_no_pickle_reader(env: dict, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    write_json(model / "config.json", {"model_type": "llama", "torch_dtype": "bfloat16"})
    write_safetensors(model / "model.safetensors", {"w.weight": ("F8_E4M3", [4, 4])})
    args = ["scan-model", str(model), "--policy", "dtk-25.04.1", "--card", "K100_AI"]
    proc, modules = _loaded(*args, "--format", "json", env=env)
    assert proc.returncode == 1, proc.stderr  # FP8 weights on a K100_AI: a finding
    report = json.loads(proc.stdout)
    assert report["facts"]["models"][0]["tensors"] == 1
    assert any(f["rule"].startswith("fp8") for f in report["findings"]), report["findings"]
    assert _heavy(modules) == []
    for name in (*START_UP, "pickle", "pickletools", "zipfile", "bz2", "lzma", "threading"):
        assert name not in modules, f"{name}: a safetensors-only scan does not need it"


def test_scan_model_of_a_pickle_still_reads_it(env: dict, tmp_path: Path) -> None:
    """The pickle reader, now imported on first use, is imported when there is a pickle."""
    import pickle

    model = tmp_path / "model"
    model.mkdir()
    write_json(model / "config.json", {"model_type": "llama"})
    (model / "pytorch_model.bin").write_bytes(pickle.dumps({"a": 1}, protocol=2))
    args = ["scan-model", str(model), "--policy", "dtk-25.04.1", "--card", "K100_AI"]
    proc, modules = _loaded(*args, "--format", "json", env=env)
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(proc.stdout)["facts"]["models"][0]["read"].get("pickle", 0) > 0
    assert "pickletools" in modules


@pytest.mark.parametrize("workers", ["1", "2"])
def test_verify_files_on_threads_loads_no_pool_module(
    env: dict, tmp_path: Path, workers: str
) -> None:
    site = tmp_path / "lib" / "python3.10" / "site-packages"
    files = {f"pkg/m{i}.py": f"x = {i}\n" * (i + 1) for i in range(40)}
    add_dist(site, "pkg", "1.0", files=files)
    (site / "pkg" / "m7.py").write_text("tampered\n")
    args = ["audit", "--path", str(site), "--verify-files", "--workers", workers]
    proc, modules = _loaded(*args, "--format", "json", env=env)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    modified = [f for f in report["findings"] if "m7.py" in json.dumps(f)]
    assert modified, report["findings"]
    assert _heavy(modules) == []
    for name in (*START_UP, "concurrent.futures", "multiprocessing"):
        assert name not in modules, f"{name}: hashing on threads does not need it"
