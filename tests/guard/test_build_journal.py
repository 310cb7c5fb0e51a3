"""Class 7 of issue 22, build-time code: an sdist whose build backend rewrites a vendor file and
a protected file in place (same size, same mtime: only the ctime moves) and plants files. The
guard refuses the install and its build journal puts everything back, so the env ends
byte-identical. Real pip (oldest and newest; every major under ``-m pip_matrix``), real
sdists built by pip under build isolation, and the same through ``dtkpip install``."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from dtkguard.journal.txn import transactions
from tests.guard.conftest import TORCH, Guarded, changed

pytestmark = pytest.mark.wheel_cache

#: an in-tree PEP 517 backend (no build requirements: pip needs no index to build it) that
#: tampers with the env when pip imports it, then builds a real, empty wheel
BACKEND = """
import base64, hashlib, os, zipfile

def _same_size_same_mtime(path):
    st = os.stat(path)
    with open(path, "r+b") as fh:
        size = len(fh.read())
        fh.seek(0)
        fh.write(b"#" * size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

def _tamper():
    for path in TARGETS:
        _same_size_same_mtime(path)
    for path, text in PLANTS:
        with open(path, "w") as fh:
            fh.write(text)

if not LATE:
    _tamper()

META = "Metadata-Version: 2.1\\nName: evilbuild\\nVersion: 1.0\\n"
WHEEL = "Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"

def _wheel(directory):
    name = "evilbuild-1.0-py3-none-any.whl"
    files = {
        "evilbuild.py": b"",
        "evilbuild-1.0.dist-info/METADATA": META.encode(),
        "evilbuild-1.0.dist-info/WHEEL": WHEEL.encode(),
    }
    rows = []
    for k, v in files.items():
        d = base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b"=").decode()
        rows.append(f"{k},sha256={d},{len(v)}")
    rows.append("evilbuild-1.0.dist-info/RECORD,,")
    files["evilbuild-1.0.dist-info/RECORD"] = ("\\n".join(rows) + "\\n").encode()
    with zipfile.ZipFile(os.path.join(directory, name), "w") as zf:
        for k, v in files.items():
            zf.writestr(k, v)
    return name

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    if LATE:
        _tamper()
    return _wheel(wheel_directory)

if LATE:  # the metadata without running the tampering code: a dry run does not see it
    def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
        info = os.path.join(metadata_directory, "evilbuild-1.0.dist-info")
        os.makedirs(info)
        with open(os.path.join(info, "METADATA"), "w") as fh:
            fh.write(META)
        return "evilbuild-1.0.dist-info"
"""


def _evil_sdist(g: Guarded, dest: Path, late: bool = False) -> tuple[Path, list[Path], list[Path]]:
    """The sdist, the files its backend rewrites and the files it plants (``late``: only
    while it builds the wheel, not when pip asks for its metadata)."""
    site = g.venv.site_packages
    targets = [site / "torch" / "__init__.py", g.venv.bin / "activate"]
    plants = [site / "torch" / "_planted.py", site / "zz-planted.pth"]
    return write_evil_sdist(dest, targets, plants, late), targets, plants


def write_evil_sdist(
    dest: Path, targets: list[Path], plants: list[Path], late: bool = False, requires: str = ""
) -> Path:
    """``dest/evilbuild-1.0.tar.gz``, whose backend rewrites ``targets`` in place (same size,
    same mtime) and plants ``plants``; ``requires``: a Requires-Dist of what it builds."""
    planted = [(str(p), "import os\n") for p in plants]
    backend = f"TARGETS = {[str(t) for t in targets]!r}\nPLANTS = {planted!r}\nLATE = {late}\n"
    backend += BACKEND
    if requires:  # the wheel it would build, and the metadata uv plans with, need `requires`
        backend += f"META += 'Requires-Dist: {requires}\\n'\n"
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
        'backend-path = ["."]\n',
        "backend.py": backend,
        "PKG-INFO": "Metadata-Version: 2.1\nName: evilbuild\nVersion: 1.0\n",
    }
    path = dest / "evilbuild-1.0.tar.gz"
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"evilbuild-1.0/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _assert_put_back(g: Guarded, before: dict[str, str], proc, inodes, targets, plants) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "dtkguard: refusing" in proc.stderr, proc.stderr
    assert "vendor-files-changed" in proc.stderr, proc.stderr
    assert "the guard put back what it changed" in proc.stderr, proc.stderr
    assert changed(before, g.venv.snapshot()) == []
    assert not any(p.exists() for p in plants)
    # put back in place: the same inode (its hard links, a uv cache's, have the bytes too)
    assert [os.stat(t).st_ino for t in targets] == inodes
    assert "evilbuild" not in g.venv.installed()
    assert g.venv.installed()["torch"] == TORCH


@pytest.mark.parametrize("late", [False, True], ids=["on-import", "in-build-wheel"])
def test_a_build_that_rewrites_vendor_and_guard_files_is_put_back(
    fresh: Guarded, tmp_path: Path, late: bool
) -> None:
    g = fresh
    sdist, targets, plants = _evil_sdist(g, tmp_path, late)
    before = g.venv.snapshot()
    inodes = [os.stat(t).st_ino for t in targets]
    proc = g.pip("install", "--no-index", "--no-deps", str(sdist))
    _assert_put_back(g, before, proc, inodes, targets, plants)
    check = g.dtkguard("check", "--python", str(g.venv.python))
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_dry_run_build_is_judged_and_put_back(fresh: Guarded, tmp_path: Path) -> None:
    """A dry run builds too (the metadata of an sdist): no install follows to judge it."""
    g = fresh
    sdist, targets, plants = _evil_sdist(g, tmp_path)
    before = g.venv.snapshot()
    inodes = [os.stat(t).st_ino for t in targets]
    proc = g.pip("install", "--dry-run", "--no-index", "--no-deps", str(sdist))
    _assert_put_back(g, before, proc, inodes, targets, plants)


@pytest.mark.parametrize("late", [False, True], ids=["in-the-plan", "in-the-real-run"])
def test_dtkpip_install_of_the_build_is_refused_and_put_back(
    fresh: Guarded, tmp_path: Path, late: bool
) -> None:
    """In the plan (a dry run) or only in dtkpip's real, journalled pip run."""
    g = fresh
    sdist, targets, plants = _evil_sdist(g, tmp_path, late)
    before = g.venv.snapshot()
    inodes = [os.stat(t).st_ino for t in targets]
    txns = transactions(g.store.journal)
    proc = g.dtkpip("install", "--no-index", "--no-deps", str(sdist))
    _assert_put_back(g, before, proc, inodes, targets, plants)
    assert "kept" not in proc.stderr, proc.stderr  # the journal found nothing left to undo
    assert transactions(g.store.journal) == txns  # a rollback of nothing is not history


@pytest.mark.parametrize(
    ("command", "late"),
    [("wheel", False), ("wheel", True), ("download", False)],
    ids=["wheel-on-import", "wheel-in-build-wheel", "download-on-import"],
)
def test_builds_of_pip_wheel_and_download_are_put_back(
    fresh: Guarded, tmp_path: Path, command: str, late: bool
) -> None:
    """``pip wheel`` and ``pip download`` install nothing here but run build code that can
    write here: the same build journal judges it and puts it back (``download`` asks only for
    the metadata, so only the backend's import-time code runs)."""
    g = fresh
    sdist, targets, plants = _evil_sdist(g, tmp_path, late)
    out = tmp_path / "out"
    before = g.venv.snapshot()
    inodes = [os.stat(t).st_ino for t in targets]
    where = ["-w", str(out)] if command == "wheel" else ["-d", str(out)]
    proc = g.pip(command, "--no-index", "--no-deps", *where, str(sdist))
    _assert_put_back(g, before, proc, inodes, targets, plants)


def test_a_clean_pip_wheel_and_download_pass(fresh: Guarded, tmp_path: Path) -> None:
    """The journal refuses only what changed the env: a build that writes nothing passes."""
    g = fresh
    sdist = tmp_path / "cleanbuild-1.0.tar.gz"
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
        'backend-path = ["."]\n',
        "backend.py": "TARGETS = []\nPLANTS = []\nLATE = False\n"
        + BACKEND.replace("evilbuild", "cleanbuild"),
        "PKG-INFO": "Metadata-Version: 2.1\nName: cleanbuild\nVersion: 1.0\n",
    }
    with tarfile.open(sdist, "w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"cleanbuild-1.0/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    before = g.venv.snapshot()
    for command, flag in (("wheel", "-w"), ("download", "-d")):
        out = tmp_path / command
        proc = g.pip(command, "--no-index", "--no-deps", flag, str(out), str(sdist))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "dtkguard" not in proc.stderr, proc.stderr
        assert list(out.iterdir()), command
    assert changed(before, g.venv.snapshot()) == []
