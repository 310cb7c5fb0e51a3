"""`dtkguard lock --verify-binaries` against the real local index: the locked wheels that can
hold native code are fetched (checked against the index's sha256) and their shared objects
judged; a CUDA-linked one refuses the lock (exit 1, nothing written)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.elf import CUDART, GALAXYHIP, build_shared
from tests.support.index import serve_index
from tests.support.wheels import build_wheel

from .conftest import run_cli

TAG = "cp310-cp310-manylinux_2_28_x86_64"
EXT = "_C.cpython-310-x86_64-linux-gnu.so"


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("verify-binaries")
    cuda = build_shared(tmp / "so" / "cuda.so", (CUDART,)).read_bytes()
    dtk = build_shared(tmp / "so" / "dtk.so", (GALAXYHIP,)).read_bytes()
    w = tmp / "w"
    build_wheel(w, "mamba-ssm", "2.2.2", tag=TAG, files={f"mamba_ssm/{EXT}": cuda},
                requires_dist=["dtk-ext"])  # fmt: skip
    build_wheel(w, "dtk-ext", "1.0", tag=TAG, files={f"dtk_ext/{EXT}": dtk})
    build_wheel(w, "pure", "1.0", files={"pure/__init__.py": ""})
    return w


def _lock(tmp_path: Path, *args: str):
    out = tmp_path / "pylock.x.toml"
    return out, run_cli("lock", *args, "-o", out, cwd=tmp_path)


def test_a_cuda_linked_wheel_refuses_the_lock(tmp_path, wheelhouse):
    with serve_index(wheelhouse) as index:
        out, proc = _lock(tmp_path, "mamba-ssm", "--index-url", index.url, "--verify-binaries")
        fetched = index.downloads()
    assert proc.returncode == 1, proc.stderr
    assert not out.exists()
    assert "cannot lock: native code" in proc.stderr
    assert f"needs {CUDART}" in proc.stderr and "[cuda-binary, high]" in proc.stderr
    assert any(name.startswith("mamba_ssm-") for name in fetched)


def test_without_the_option_the_lock_is_written(tmp_path, wheelhouse):
    with serve_index(wheelhouse) as index:
        out, proc = _lock(tmp_path, "mamba-ssm", "--index-url", index.url)
    assert proc.returncode == 0, proc.stderr
    assert out.exists()


def test_a_dtk_build_is_judged_and_locked(tmp_path, wheelhouse):
    with serve_index(wheelhouse) as index:
        out, proc = _lock(
            tmp_path, "dtk-ext", "pure", "--index-url", index.url, "--verify-binaries"
        )
        fetched = index.downloads()
    assert proc.returncode == 0, proc.stderr
    assert out.exists()
    assert "native code of 1 wheels judged: no finding" in proc.stderr
    assert not any(name.startswith("pure-") for name in fetched)  # a pure wheel is not fetched


def test_find_links_wheels_are_read_in_place(tmp_path, wheelhouse):
    out, proc = _lock(
        tmp_path, "mamba-ssm", "--no-index", "--find-links", str(wheelhouse), "--verify-binaries"
    )
    assert proc.returncode == 1, proc.stderr
    assert not out.exists() and CUDART in proc.stderr
