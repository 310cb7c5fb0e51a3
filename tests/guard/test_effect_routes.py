"""The routes of issue 22 and their neighbours: the hook judges what a change does to imports and
to the guard itself, not which files a RECORD owns. Real pip (oldest and newest; every major
under ``-m pip_matrix``), real wheels; every refusal leaves the venv byte-identical."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.support.cache import PIP_VERSIONS, wheel_dir
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache

TAG = sys.implementation.cache_tag
SO = f"{TAG}-x86_64-linux-gnu.so"
EVIL_PTH = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if not hasattr(f, '_dtkguard')]\n"
)


def _lib(g: Guarded) -> str:
    return f"lib/{g.venv.site_packages.parent.name}/site-packages"


def _wheel_cases(g: Guarded) -> dict[str, tuple[str, dict, dict]]:
    """{case: (expected rule, build_wheel files, build_wheel keywords)} of wheels of innocent
    names."""
    lib64 = _lib(g).replace("lib/", "lib64/", 1)
    d = "x-1.0.data"
    return {
        # 1. shadowing without overwriting (any suffix, any subpath, through NAME.data)
        "package-beats-module": ("file-conflict", {"torch/version/__init__.py": "x"}, {}),
        "extension-beats-py": ("file-conflict", {f"torch/version.{SO}": "x"}, {}),
        "opt-1-pyc": ("file-conflict", {f"torch/__pycache__/version.{TAG}.opt-1.pyc": "x"}, {}),
        "new-file-in-vendor-pkg": ("file-conflict", {"torch/_evil.py": "x"}, {}),
        "data-purelib": ("file-conflict", {f"{d}/purelib/torch/version/__init__.py": "x"}, {}),
        "data-platlib": ("file-conflict", {f"{d}/platlib/torch/_C/__init__.py": "x"}, {}),
        "other-vendor-pkg": ("file-conflict", {"torchvision/io/__init__.py": "x"}, {}),
        "second-dist-info": (
            "file-conflict",
            {f"{d}/purelib/torch-2.7.0.dist-info/METADATA": "Name: torch\nVersion: 2.7.0\n"},
            {},
        ),
        "vendor-egg-info": ("file-conflict", {"torch.egg-info/PKG-INFO": "x"}, {}),
        # 2. paths compared after resolving them (a venv's lib64 -> lib)
        "lib64-into-torch": ("file-conflict", {f"{d}/data/{lib64}/torch/version.py": "x"}, {}),
        "lib64-pth": ("startup-code", {f"{d}/data/{lib64}/zz.pth": EVIL_PTH}, {}),
        "lib64-finder": ("guard-tamper", {f"{d}/data/{lib64}/_dtkguard_finder.py": "x"}, {}),
        # 3. the guard protects everything it stands on
        "console-script-pip": ("guard-tamper", {"x/__init__.py": ""}, _scripts("pip")),
        "console-script-dtkpip": ("guard-tamper", {"x/__init__.py": ""}, _scripts("dtkpip")),
        "console-script-python3": ("guard-tamper", {"x/__init__.py": ""}, _scripts("python3")),
        "data-scripts-pip3": ("guard-tamper", {f"{d}/scripts/pip3": "#!/bin/sh\n"}, {}),
        "data-scripts-activate": ("guard-tamper", {f"{d}/scripts/activate": "x"}, {}),
        "shadows-pip-module": (
            "guard-tamper",
            {"pip/_internal/commands/install/__init__.py": "x"},
            {},
        ),
        "protected-copy": ("guard-tamper", {"_dtkguard_protected.py": "x"}, {}),
        "guard-pyc-opt-2": (
            "guard-tamper",
            {f"__pycache__/_dtkguard_finder.{TAG}.opt-2.pyc": "x"},
            {},
        ),
        # 4. start-up code is allowed by content, not by name
        "editable-pth-of-another": ("startup-code", {"__editable__.y-1.0.pth": EVIL_PTH}, {}),
        "editable-pth-own-name-evil": ("startup-code", {"__editable__.x-1.0.pth": EVIL_PTH}, {}),
        "distutils-precedence": ("startup-code", {"distutils-precedence.pth": EVIL_PTH}, {}),
        "virtualenv-pth": ("startup-code", {"_virtualenv.pth": "import _virtualenv\n"}, {}),
        "nspkg-evil": ("startup-code", {"x-1.0-nspkg.pth": EVIL_PTH}, {}),
        "sitecustomize-pyc": ("startup-code", {f"__pycache__/sitecustomize.{TAG}.pyc": "x"}, {}),
    }


def _scripts(name: str) -> dict:
    return {"entry_points": {"console_scripts": {name: "x:main"}}}


WHEEL_CASES = [
    "package-beats-module",
    "extension-beats-py",
    "opt-1-pyc",
    "new-file-in-vendor-pkg",
    "data-purelib",
    "data-platlib",
    "other-vendor-pkg",
    "second-dist-info",
    "vendor-egg-info",
    "lib64-into-torch",
    "lib64-pth",
    "lib64-finder",
    "console-script-pip",
    "console-script-dtkpip",
    "console-script-python3",
    "data-scripts-pip3",
    "data-scripts-activate",
    "shadows-pip-module",
    "protected-copy",
    "guard-pyc-opt-2",
    "editable-pth-of-another",
    "editable-pth-own-name-evil",
    "distutils-precedence",
    "virtualenv-pth",
    "nspkg-evil",
    "sitecustomize-pyc",
]


def _refused(g: Guarded, before: dict[str, str], proc, rule: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "dtkguard: refusing" in proc.stderr, proc.stderr
    assert rule in proc.stderr, proc.stderr
    assert changed(before, g.venv.snapshot()) == []
    assert g.venv.installed()["torch"] == TORCH


@pytest.mark.parametrize("case", WHEEL_CASES)
def test_wheel_effects_are_refused(case: str, guarded: Guarded, tmp_path: Path) -> None:
    rule, files, kw = _wheel_cases(guarded)[case]
    wheel = build_wheel(tmp_path, "x", "1.0", files=files, **kw)
    before = guarded.venv.snapshot()
    proc = guarded.pip("install", "--no-deps", "--no-index", str(wheel))
    _refused(guarded, before, proc, rule)
    assert not any(p.name.startswith("x-1.0") for p in guarded.venv.site_packages.iterdir()), (
        "x was installed"
    )


def test_lib64_is_an_alias_here(guarded: Guarded) -> None:
    """The lib64 routes above only mean something where lib64 is a link to lib."""
    lib64 = guarded.venv.path / "lib64"
    assert lib64.is_symlink() and os.path.realpath(lib64) == str(guarded.venv.path / "lib")


def test_innocent_wheels_still_install(fresh: Guarded, tmp_path: Path) -> None:
    g = fresh
    finder = "__editable___proj_0_1_finder"
    wheels = [
        build_wheel(tmp_path, "torch-helpers", "1.0", files={"torch_helpers/__init__.py": ""}),
        build_wheel(
            tmp_path,
            "proj",
            "0.1",
            files={
                "__editable__.proj-0.1.pth": f"import {finder}; {finder}.install()\n",
                f"{finder}.py": "def install():\n    pass\n",
            },
        ),
        build_wheel(tmp_path, "tool", "1.0", files={"tool/__init__.py": ""}, **_scripts("toolcmd")),
    ]
    proc = g.pip("install", "--no-deps", "--no-index", *map(str, wheels))
    assert proc.returncode == 0, proc.stderr
    assert {"torch-helpers", "proj", "tool"} <= set(g.venv.installed())
    assert (g.venv.bin / "toolcmd").exists()


def test_unsupported_pip_is_refused(guarded: Guarded, tmp_path: Path) -> None:
    """A "pip" the hook does not support may not replace pip (the hook would be gone)."""
    wheel = build_wheel(tmp_path, "pip", "27.0", files={"pip/__init__.py": "__version__='27.0'"})
    before = guarded.venv.snapshot()
    proc = guarded.pip("install", "--no-deps", "--no-index", str(wheel))
    _refused(guarded, before, proc, "not a pip the guard supports")


# -- 5. removals are judged by what they delete ---------------------------------------------


def _plant_egg_info(g: Guarded, name: str, top: str) -> Path:
    """A legacy egg-info dist whose top_level.txt names ``top`` (pip deletes that folder)."""
    info = g.venv.site_packages / f"{name.replace('-', '_')}-1.0-py3.11.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "top_level.txt").write_text(f"{top}\n")
    return info


def test_uninstall_expanding_to_vendor_files_is_refused(guarded: Guarded) -> None:
    import shutil

    info = _plant_egg_info(guarded, "innocent-egg", "torch")
    try:
        before = guarded.venv.snapshot()
        proc = guarded.pip("uninstall", "-y", "innocent-egg")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "dtkguard: refusing" in proc.stderr and "file-conflict" in proc.stderr
        assert changed(before, guarded.venv.snapshot()) == []
    finally:
        shutil.rmtree(info)


def test_uninstall_of_a_record_with_a_folder_row(fresh: Guarded, tmp_path: Path) -> None:
    g = fresh
    wheel = build_wheel(tmp_path, "innocent", "1.0", files={"innocent/__init__.py": ""})
    assert g.pip("install", "--no-deps", "--no-index", str(wheel)).returncode == 0
    record = next(g.venv.site_packages.glob("innocent-1.0.dist-info")) / "RECORD"
    for row in ("torch,,\n", "_dtkguard_pip_hook.py,,\n", "../../../bin/pip,,\n"):
        saved = record.read_text()
        record.write_text(saved + row)
        before = g.venv.snapshot()
        proc = g.pip("uninstall", "-y", "innocent")
        assert proc.returncode == 1, (row, proc.stdout + proc.stderr)
        assert "dtkguard: refusing" in proc.stderr
        assert changed(before, g.venv.snapshot()) == []
        record.write_text(saved)
    assert g.pip("uninstall", "-y", "innocent").returncode == 0  # its own files go


# -- 6. the vendor builds keep what they need -----------------------------------------------


def test_vendor_requirements_stay_met(fresh: Guarded, tmp_path: Path) -> None:
    g = fresh
    assert "filelock" in g.venv.installed()
    before = g.venv.snapshot()
    proc = g.pip("uninstall", "-y", "filelock")
    _refused(g, before, proc, "vendor-deps-broken")
    old = build_wheel(tmp_path, "typing-extensions", "4.0.0", files={"typing_extensions.py": ""})
    proc = g.pip("install", "--no-deps", "--no-index", str(old))
    _refused(g, before, proc, "vendor-deps-broken")
    assert "typing-extensions>=4.8.0" in proc.stderr
    # a route no hook sees (a manual removal): `check` finds it
    import shutil

    for p in g.venv.site_packages.glob("filelock*"):
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    check = g.dtkguard("check", "--python", str(g.venv.python), "--format", "json")
    assert check.returncode == 1 and '"vendor-deps-broken"' in check.stdout, check.stdout


# -- 7. build-time code --------------------------------------------------------------------


def test_build_that_changes_a_vendor_file_aborts(fresh: Guarded, tmp_path: Path) -> None:
    g = fresh
    target = g.venv.site_packages / "torch" / "__init__.py"
    proj = tmp_path / "evilbuild"
    proj.mkdir()
    (proj / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    (proj / "setup.py").write_text(
        "import os\n"
        f"p = {str(target)!r}\n"
        "st = os.stat(p)\n"
        "data = open(p, 'rb').read()\n"
        "open(p, 'wb').write(b'#' * len(data))\n"  # same size, same mtime: only ctime moves
        "os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))\n"
        "from setuptools import setup\n"
        "setup(name='evilbuild', version='1.0', py_modules=[])\n"
    )
    installed = g.venv.installed()
    proc = g.pip("install", *g.index_args, str(proj))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "code run while pip prepared or built packages changed" in proc.stderr, proc.stderr
    assert str(target) in proc.stderr
    assert g.venv.installed() == installed  # nothing was installed


def test_dtkpip_and_dtkuv_keep_vendor_requirements(
    guarded: Guarded, tmp_path: Path, uv: str
) -> None:
    """The same rule on the other paths: dtkpip's and dtkuv's plans are judged by `check`'s
    rules, `vendor-deps-broken` among them."""
    g = guarded
    old = build_wheel(tmp_path, "typing-extensions", "4.0.0", files={"typing_extensions.py": ""})
    env = hermetic_env(UV_CACHE_DIR=str(tmp_path / "uv-cache"), DTKGUARD_UV=uv)
    before = g.venv.snapshot()
    for args in (
        ["pip", "--python", str(g.venv.python), "install", "--no-deps", "--no-index", str(old)],
        ["uv", "--python", str(g.venv.python), "pip", "install", "--no-deps", str(old)],
        ["uv", "--python", str(g.venv.python), "pip", "uninstall", "filelock"],
    ):
        proc = g.dtkguard(*args, env=env)
        assert proc.returncode == 1, (args, proc.stdout + proc.stderr)
        assert "vendor-deps-broken" in proc.stderr, (args, proc.stderr)
        assert changed(before, g.venv.snapshot()) == []


def test_upgrading_pip_to_a_supported_pip_keeps_the_guard(
    build_guarded: Callable[..., Guarded], tmp_path: Path, community_wheelhouse: Path
) -> None:
    """pip's own files may be written by pip itself, a release the hook supports; after the
    upgrade the hook still judges (it lives beside pip, not inside it)."""
    g = build_guarded(tmp_path / "venv", PIP_VERSIONS[0])
    proc = g.pip("install", "--no-index", "-f", str(wheel_dir()), f"pip=={PIP_VERSIONS[-1]}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert g.venv.pip_version() == PIP_VERSIONS[-1]
    before = g.venv.snapshot()
    torch = next(community_wheelhouse.glob("torch-2.6.0-*.whl"))
    proc = g.pip("install", "--no-deps", str(torch))
    _refused(g, before, proc, "vendor-replaced")


def test_missing_protected_copy_fails_closed(guarded: Guarded) -> None:
    copy = guarded.venv.site_packages / "_dtkguard_protected.py"
    pycache = list((guarded.venv.site_packages / "__pycache__").glob("_dtkguard_protected.*"))
    saved = {p: p.read_bytes() for p in [copy, *pycache]}
    try:
        for p in saved:
            p.unlink()
        before = guarded.venv.snapshot()
        proc = guarded.pip("install", *guarded.index_args, "--no-deps", "idna")
        assert proc.returncode == 1 and "protected-set module" in proc.stderr, proc.stderr
        proc = guarded.pip("uninstall", "-y", "filelock")
        assert proc.returncode == 1 and "protected-set module" in proc.stderr, proc.stderr
        assert changed(before, guarded.venv.snapshot()) == []
    finally:
        for p, data in saved.items():
            p.write_bytes(data)
