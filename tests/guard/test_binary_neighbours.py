"""Issue 29's neighbours: native code named or placed unlike ``pkg/_C.so``, linked through a
second library of the same wheel, built from an sdist, or taken from an index by uv, is judged
by what it links on every route (check, the pip hook, dtkpip, dtkuv), and a refusal leaves the
venv byte-identical. Real gcc-built shared objects and executables, real pip and uv."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.support.cli import dtkguard
from tests.support.elf import (
    CUDART,
    GALAXYHIP,
    build_shared,
    gcc,
    hostile_elves,
    stub_library,
    write_elf,
)
from tests.support.index import serve_index
from tests.support.sitetree import add_dist
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache

TAG = "py3-none-linux_x86_64"
#: wheel members (and RECORD rows) that hold native code, each named or placed another way
NAMES = {
    "dotted-stem": "kern/lib.solver.so",
    "dotted-extension": "kern/_ops.so_v2.cpython-310-x86_64-linux-gnu.so",
    "version-suffix": "kern/libkern.so.1.2",
    "dtk-style-suffix": "kern/libkern.so.5.2.25484.1857-0f32e4f0",
    "data-lib64": "kern-1.0.data/data/lib64/libkern.so",
    "platlib": "kern-1.0.data/platlib/kern_native.so",
    "executable": "kern-1.0.data/scripts/kern-bench",
    "unsuffixed-in-bin": "kern/bin/kernels",
    "32-bit-big-endian": "kern/_be32.so",
}
#: where pip puts a wheel's .data folders, relative to site-packages
INSTALLED = {
    "kern-1.0.data/data/": "../../../",
    "kern-1.0.data/scripts/": "../../../bin/",
    "kern-1.0.data/platlib/": "",
}


def _executable(folder: Path, needs: tuple[str, ...]) -> bytes:
    """A real ELF executable (no ``.so`` in its name) that needs the stub libraries ``needs``."""
    stubs = folder / "_stubs"
    for name in needs:
        stub_library(stubs, name)
    src = folder / "main.c"
    src.write_text("int main(void) { return 0; }\n")
    out = folder / "kern-bench"
    cmd = [gcc(), "-o", str(out), str(src), "-Wl,--no-as-needed", f"-L{stubs}"]
    subprocess.run([*cmd, *(f"-l:{n}" for n in needs)], check=True, capture_output=True)
    return out.read_bytes()


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("neighbour-so")
    return {
        "cuda": build_shared(tmp / "cuda.so", (CUDART,)).read_bytes(),
        "unversioned": build_shared(tmp / "unv.so", ("libcudart.so",)).read_bytes(),
        "exe": _executable(tmp, (CUDART,)),
        # the extension needs a library of its own wheel, which needs the CUDA runtime
        "inner": build_shared(tmp / "libinner.so", (CUDART,), soname="libinner.so").read_bytes(),
        "outer": build_shared(tmp / "outer.so", ("libinner.so",)).read_bytes(),
    }


def _member(native: dict[str, bytes], case: str) -> bytes:
    if case == "32-bit-big-endian":
        return write_elf((CUDART,), bits=32, endian=">")
    return native["exe"] if case == "executable" else native["cuda"]


@pytest.fixture(scope="module")
def g(tmp_path_factory: pytest.TempPathFactory, build_guarded: Callable[..., Guarded]) -> Guarded:
    return build_guarded(tmp_path_factory.mktemp("neighbour-guarded") / "venv")


def _refused(g: Guarded, proc, before: dict[str, str], names: tuple[str, ...]) -> str:
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, text
    assert "Traceback" not in text, text
    assert "cuda-binary" in proc.stderr, text
    assert all(n in proc.stderr for n in names), text
    assert changed(before, g.venv.snapshot()) == []
    assert g.venv.installed()["torch"] == TORCH
    return proc.stderr


@pytest.mark.parametrize("case", sorted(NAMES))
def test_check_judges_native_code_whatever_its_name_or_folder(tmp_path, native, case):
    site = tmp_path / "lib" / "python3.10" / "site-packages"
    rel = NAMES[case]
    for folder, real in INSTALLED.items():
        rel = rel.replace(folder, real)
    add_dist(site, "kern", "1.0", files={rel: _member(native, case), "kern/notes": "text"})
    proc = dtkguard("check", "--path", str(site), "--format", "json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [found] = json.loads(proc.stdout)["findings"]
    assert found["rule"] == "cuda-binary" and found["evidence"]["cuda"] == [CUDART]
    assert found["location"].endswith(rel.rsplit("/", 1)[-1])


def test_a_cuda_folder_in_runpath_alone_is_no_need(tmp_path, native):
    """RUNPATH is where the loader looks, not what it loads: a DTK build whose RUNPATH names a
    CUDA folder needs nothing of CUDA; a CUDA need shows its RUNPATH in the evidence."""
    cuda_dir = "$ORIGIN/../nvidia/cuda_runtime/lib:/usr/local/cuda/lib64"
    site = tmp_path / "site"
    dtk = build_shared(tmp_path / "dtk.so", (GALAXYHIP,), runpath=cuda_dir).read_bytes()
    both = build_shared(tmp_path / "cuda.so", (CUDART,), runpath=cuda_dir).read_bytes()
    add_dist(site, "dtk-rp", "1.0", files={"dtk_rp/_C.so": dtk})
    add_dist(site, "cuda-rp", "1.0", files={"cuda_rp/_C.so": both})
    proc = dtkguard("check", "--path", str(site), "--format", "json")
    [found] = json.loads(proc.stdout)["findings"]
    assert found["subject"] == "cuda-rp" and found["rule"] == "cuda-binary"
    assert found["evidence"]["runpath"] == cuda_dir.split(":")


@pytest.mark.parametrize("kind", ["truncated-dynamic", "looping-dynamic", "huge-dynamic",
                                  "phoff-past-eof", "unterminated-name"])  # fmt: skip
def test_a_hostile_member_is_a_warning_through_the_hook(g, tmp_path, kind):
    """Real pip, a wheel whose .so is hostile: one warning line, never a traceback or a hang."""
    dist = "hostile" + kind.replace("-", "")
    wheel = build_wheel(
        tmp_path, dist, "1.0", tag=TAG, files={f"{dist}/_C.so": hostile_elves()[kind]}
    )
    proc = g.pip("install", "--no-index", "--no-deps", str(wheel))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if "could not be judged" in x]
    assert f"{dist}/_C.so of {dist}" in line
    g.pip("uninstall", "-y", dist)


@pytest.mark.parametrize("case", sorted(NAMES))
def test_the_hook_judges_native_code_whatever_its_name_or_folder(g, native, tmp_path, case):
    dist = case.replace("-", "")  # one dist per case: a case that installs spoils no other
    files = {NAMES[case].replace("kern", dist, 1): _member(native, case)}
    wheel = build_wheel(tmp_path, dist, "1.0", tag=TAG, files=files)
    before = g.venv.snapshot()
    proc = g.pip("install", "--no-index", "--no-deps", str(wheel))
    _refused(g, proc, before, (CUDART, NAMES[case].rsplit("/", 1)[-1]))


def test_dtkpip_judges_an_executable_and_an_unversioned_cudart(g, native, tmp_path):
    files = {NAMES["executable"]: native["exe"], "kern/_u.so": native["unversioned"]}
    wheel = build_wheel(tmp_path, "kern", "1.0", tag=TAG, files=files)
    before = g.venv.snapshot()
    text = _refused(g, g.dtkpip("install", "--no-deps", str(wheel)), before, ("libcudart.so ",))
    assert "kern-bench" in text and "dtkpip: stopped" in text


def test_a_library_the_extension_links_inside_its_own_wheel_is_judged(g, native, tmp_path):
    """``_C.so`` needs only ``libinner.so`` (shipped beside it), which needs libcudart."""
    files = {"chained/_C.so": native["outer"], "chained.libs/libinner.so": native["inner"]}
    wheel = build_wheel(tmp_path, "chained", "1.0", tag=TAG, files=files)
    before = g.venv.snapshot()
    text = _refused(g, g.pip("install", "--no-deps", str(wheel)), before, ("libinner.so",))
    assert "chained.libs/libinner.so of chained needs libcudart.so.12" in text


# -- code that is only there after a build, or only in uv's real run ------------------------

BACKEND = """
import base64, hashlib, os, zipfile

SO = base64.b64decode(SO_B64)
META = "Metadata-Version: 2.1\\nName: cudabuild\\nVersion: 1.0\\n"
WHEEL = "Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: false\\nTag: py3-none-linux_x86_64\\n"

def _wheel(directory):
    name = "cudabuild-1.0-py3-none-linux_x86_64.whl"
    files = {
        "cudabuild/__init__.py": b"",
        "cudabuild/_C.cpython-310-x86_64-linux-gnu.so": SO,
        "cudabuild-1.0.dist-info/METADATA": META.encode(),
        "cudabuild-1.0.dist-info/WHEEL": WHEEL.encode(),
    }
    rows = []
    for k, v in files.items():
        d = base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b"=").decode()
        rows.append(f"{k},sha256={d},{len(v)}")
    rows.append("cudabuild-1.0.dist-info/RECORD,,")
    files["cudabuild-1.0.dist-info/RECORD"] = ("\\n".join(rows) + "\\n").encode()
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in files.items():
            zf.writestr(k, v)
    return name

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory)
"""


def _cuda_sdist(dest: Path, so: bytes) -> Path:
    """An sdist whose in-tree backend builds a wheel holding an extension that needs libcudart
    (what ``setup.py build_ext`` against CUDA makes)."""
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
        'backend-path = ["."]\n',
        "backend.py": f"SO_B64 = {base64.b64encode(so).decode()!r}\n" + BACKEND,
        "PKG-INFO": "Metadata-Version: 2.1\nName: cudabuild\nVersion: 1.0\n",
    }
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "cudabuild-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"cudabuild-1.0/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _dtkuv(g: Guarded, cache: Path, uv: str, *args: str):
    env = hermetic_env(UV_CACHE_DIR=str(cache), DTKGUARD_UV=uv)
    return g.dtkguard("uv", "--python", str(g.venv.python), "pip", *args, env=env)


@pytest.mark.parametrize("route", ["pip", "dtkpip", "dtkuv"])
def test_an_sdist_that_builds_cuda_code_is_refused(g, native, tmp_path, uv, route):
    sdist = _cuda_sdist(tmp_path / "sdist", native["cuda"])
    before = g.venv.snapshot()
    if route == "pip":
        proc = g.pip("install", "--no-index", "--no-deps", str(sdist))
    elif route == "dtkpip":
        proc = g.dtkpip("install", "--no-index", "--no-deps", str(sdist))
    else:
        proc = _dtkuv(g, tmp_path / "cache", uv, "install", "--no-index", "--no-deps", str(sdist))
    _refused(g, proc, before, (CUDART, "_C.cpython-310-x86_64-linux-gnu.so"))
    assert "cudabuild" not in g.venv.installed()


def test_dtkuv_judges_a_cuda_wheel_it_takes_from_an_index(g, native, tmp_path, uv):
    """No file of it exists before uv's real run: judged before the transaction commits."""
    files = {"indexed/_C.so": native["cuda"], "indexed/__init__.py": ""}
    build_wheel(tmp_path / "index", "indexed", "1.0", tag=TAG, files=files)
    before = g.venv.snapshot()
    with serve_index(tmp_path / "index") as index:
        args = ("install", "--no-deps", "-i", index.url, "indexed")
        proc = _dtkuv(g, tmp_path / "cache", uv, *args)
        assert index.downloads() == [f"indexed-1.0-{TAG}.whl"]
    text = _refused(g, proc, before, (CUDART, "indexed/_C.so"))
    assert "dtkuv: stopped" in text
    assert "indexed" not in g.venv.installed()
