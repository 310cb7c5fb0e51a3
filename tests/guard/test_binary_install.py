"""Native code judged before install: the pip hook (plain pip, ``python -m pip``), dtkpip and
dtkuv refuse a wheel whose shared objects need a CUDA runtime, whatever the package is called,
with its members stored or deflated and whatever its tags say; the venv stays byte-identical.
A DTK build goes through; a ROCm build goes through with a warning (foreign-hip is medium).
Real pip, real uv, real wheels holding real gcc-built shared objects."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.support.elf import AMDHIP, CUDART, GALAXYHIP, build_shared
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache

EXT = "_C.cpython-310-x86_64-linux-gnu.so"
TAG = "py3-none-linux_x86_64"


def _stored_copy(wheel: Path, dest: Path) -> Path:
    """The same wheel with every member stored (no compression)."""
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            copy.external_attr = info.external_attr
            dst.writestr(copy, src.read(info), compress_type=zipfile.ZIP_STORED)
    return out


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("binary-wheels")
    so = {k: build_shared(tmp / "so" / f"{k}.so", (v,)).read_bytes()
          for k, v in (("cuda", CUDART), ("dtk", GALAXYHIP), ("rocm", AMDHIP))}  # fmt: skip
    w = tmp / "w"
    cuda = {f"mamba_ssm/{EXT}": so["cuda"]}
    out = {
        "cuda": build_wheel(w, "mamba-ssm", "2.2.2", tag=TAG, files=cuda),
        "pure-tag": build_wheel(w, "innocent", "1.0", files={"innocent/_k.so": so["cuda"]}),
        "dtk": build_wheel(w, "dtk-ext", "1.0", tag=TAG, files={f"dtk_ext/{EXT}": so["dtk"]}),
        "rocm": build_wheel(w, "rocm-ext", "1.0", tag=TAG, files={f"rocm_ext/{EXT}": so["rocm"]}),
    }  # fmt: skip
    out["stored"] = _stored_copy(
        build_wheel(tmp / "s0", "stored-cuda", "1.0", tag=TAG, files={f"sc/{EXT}": so["cuda"]}),
        tmp / "s",
    )
    return out


@pytest.fixture(scope="module")
def g(tmp_path_factory: pytest.TempPathFactory, build_guarded: Callable[..., Guarded]) -> Guarded:
    return build_guarded(tmp_path_factory.mktemp("binary-guarded") / "venv")


def _refused(g: Guarded, proc, before: dict[str, str]) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert changed(before, g.venv.snapshot()) == []
    assert g.venv.installed()["torch"] == TORCH
    assert "cuda-binary" in proc.stderr and CUDART in proc.stderr
    return proc.stderr


@pytest.mark.parametrize("kind", ["cuda", "stored", "pure-tag"])
@pytest.mark.parametrize("module", [False, True])
def test_pip_hook_refuses_a_wheel_whose_binaries_need_cuda(g, wheels, kind, module):
    before = g.venv.snapshot()
    wheel = wheels[kind]
    proc = g.pip("install", "--no-index", "--no-deps", str(wheel), module=module)
    text = _refused(g, proc, before)
    assert "dtkguard: refusing to install" in text


def test_pip_hook_refuses_from_find_links_by_name(g, wheels):
    before = g.venv.snapshot()
    proc = g.pip("install", "--no-index", "-f", str(wheels["cuda"].parent), "mamba-ssm")
    _refused(g, proc, before)


def test_dtkpip_refuses_before_pip_runs(g, wheels):
    before = g.venv.snapshot()
    proc = g.dtkpip("install", "--no-index", "-f", str(wheels["cuda"].parent), "mamba-ssm")
    text = _refused(g, proc, before)
    assert "dtkpip: stopped" in text and "refusing to install" not in text  # no pip ran


def test_dtkpip_refuses_a_stored_wheel_given_by_path(g, wheels):
    before = g.venv.snapshot()
    text = _refused(g, g.dtkpip("install", "--no-deps", str(wheels["stored"])), before)
    assert "dtkpip: stopped" in text and "refusing to install" not in text  # no pip ran


@pytest.mark.parametrize("how", ["find-links", "path"])
def test_dtkuv_refuses_before_uv_runs(g, wheels, tmp_path, how):
    before = g.venv.snapshot()
    args = ["-f", str(wheels["cuda"].parent), "mamba-ssm"] if how == "find-links" else []
    args = args or [str(wheels["cuda"])]
    env = hermetic_env(UV_CACHE_DIR=str(tmp_path / "uv-cache"))
    proc = g.dtkguard(
        "uv", "--python", str(g.venv.python), "pip", "install", "--no-index", *args, env=env
    )
    text = _refused(g, proc, before)
    assert "dtkuv: stopped" in text
    assert "Installed " not in text  # uv's real run never started (it would be judged after)


def test_a_dtk_build_installs_and_a_rocm_build_installs_with_a_warning(g, wheels):
    proc = g.pip("install", "--no-index", "--no-deps", str(wheels["dtk"]))
    assert proc.returncode == 0, proc.stderr
    assert "dtkguard" not in proc.stderr
    proc = g.dtkpip("install", "--no-index", "--no-deps", str(wheels["rocm"]))
    assert proc.returncode == 0, proc.stderr
    assert "foreign-hip" not in proc.stderr or "warning" in proc.stderr
    assert "libamdhip64.so.6 (a ROCm HIP runtime)" in proc.stderr  # the hook's warning
    assert {"dtk-ext", "rocm-ext"} <= set(g.venv.installed())
