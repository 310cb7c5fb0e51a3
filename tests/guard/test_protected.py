"""The protected set of a real venv: the guard's layers, pip's RECORD, the interpreter's
scripts, the uv shim; and who may write which."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dtkguard import protected
from tests.support.venvs import make_venv

pytestmark = pytest.mark.wheel_cache


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory):
    v = make_venv(tmp_path_factory.mktemp("protected") / "venv", pip_version="26.3")
    (v.site_packages / "_dtkguard_finder.py").write_text("x = 1\n")
    (v.site_packages / "__pycache__").mkdir(exist_ok=True)
    (v.site_packages / "__pycache__" / "_dtkguard_finder.cpython-311.opt-1.pyc").write_bytes(b"")
    (v.bin / "uv").write_text("#!/bin/sh\n# dtkguard-uv-shim: ...\n")
    return v


def _table(v) -> dict[str, str]:
    return protected.protected_paths(v.path, [v.site_packages], v.bin, [v.path / "state.json"])


def test_every_kind_is_listed(venv) -> None:
    table = _table(venv)
    site, bin_ = str(venv.site_packages), str(venv.bin)
    assert table[f"{site}/_dtkguard_finder.py"] == "guard"
    assert table[f"{site}/__pycache__/_dtkguard_finder.cpython-311.opt-1.pyc"] == "guard"
    assert table[f"{site}/pip/_internal/commands/install.py"] == "pip"
    assert table[f"{bin_}/pip"] == "pip" and table[f"{bin_}/pip3"] == "pip"
    assert table[f"{bin_}/python"] == "interpreter" and table[f"{bin_}/activate"] == "interpreter"
    assert table[os.path.realpath(f"{bin_}/python")] == "interpreter"  # both spellings
    assert table[f"{bin_}/uv"] == "uv-shim"
    assert table[f"{venv.path}/pip.conf"] == "guard"
    assert table[f"{venv.path}/state.json"] == "guard"
    assert set(table.values()) <= set(protected.KINDS)


def test_by_name_for_files_that_do_not_exist(venv) -> None:
    site, bin_ = str(venv.site_packages), str(venv.bin)
    kind = protected.protected_kind
    assert kind(f"{site}/pip/_internal/commands/install/__init__.py", [site], bin_) == "pip"
    assert kind(f"{site}/pip-99.dist-info/METADATA", [site], bin_) == "pip"
    assert kind(f"{site}/__pycache__/_dtkguard_pip_hook.cpython-311.opt-2.pyc", [site], bin_)
    assert kind(f"{site}/_dtkguard_anything.py", [site], bin_) == "guard"
    assert kind(f"{bin_}/python3.99", [site], bin_) == "interpreter"
    assert kind(f"{bin_}/dtkpip", [site], bin_) == "dtkguard"
    assert kind(f"{site}/pipx/__init__.py", [site], bin_) is None
    assert kind(f"{bin_}/uvicorn", [site], bin_) is None


def test_a_real_uv_is_not_the_shim(tmp_path: Path) -> None:
    (tmp_path / "uv").write_bytes(b"\x7fELF....")
    assert protected.script_kind("uv", str(tmp_path / "uv")) is None


@pytest.mark.parametrize(
    ("kind", "dist", "version", "ok"),
    [
        ("pip", "pip", "26.3", True),
        ("pip", "pip", "22.2.2", True),
        ("pip", "pip", "22.1", False),
        ("pip", "pip", "27.0", False),
        ("pip", "pip", None, False),
        ("pip", "evil", "26.3", False),
        ("guard", "dtkguard", "1.0", False),
        ("interpreter", "python", "3.11", False),
        ("uv-shim", "uv", "0.9", False),
        ("dtkguard", "dtkguard", "1.0", True),
        ("dtkguard", "dtkpip", "1.0", False),
    ],
)
def test_who_may_write(kind: str, dist: str, version: str | None, ok: bool) -> None:
    assert protected.may_write(kind, dist, version) is ok


@pytest.fixture
def linked(tmp_path: Path):
    """A venv whose pip has a folder and a file moved out of site-packages, symlinks left."""
    v = make_venv(tmp_path / "venv", pip_version="26.3")
    away = tmp_path / "away"
    away.mkdir()
    commands = v.site_packages / "pip" / "_internal" / "commands"
    os.rename(commands, away / "commands")
    commands.symlink_to(away / "commands")
    init = v.site_packages / "pip" / "__init__.py"
    os.rename(init, away / "init.py")
    init.symlink_to(away / "init.py")
    return v, away


def test_resolved_spellings_of_pip_files_are_protected(linked) -> None:
    v, away = linked
    table = _table(v)
    site = str(v.site_packages)
    assert table[f"{site}/pip/_internal/commands/install.py"] == "pip"  # as RECORD gives it
    assert table[f"{away}/commands/install.py"] == "pip"  # through the symlinked folder
    assert table[f"{away}/init.py"] == "pip"  # the target of a symlinked file
    lib64 = v.path / "lib64"
    if lib64.is_symlink():  # the site given through lib64: resolved spellings are the same
        spelled = lib64 / v.site_packages.relative_to(v.path / "lib")
        other = protected.protected_paths(v.path, [spelled], v.bin, [])
        assert other[f"{away}/commands/install.py"] == "pip"
        assert other[f"{away}/init.py"] == "pip"


def test_a_folder_swapped_for_a_symlink_between_two_tables_is_seen(tmp_path: Path) -> None:
    v = make_venv(tmp_path / "venv", pip_version="26.3")
    before = _table(v)
    commands = v.site_packages / "pip" / "_internal" / "commands"
    away = tmp_path / "away"
    away.mkdir()
    os.rename(commands, away / "commands")
    commands.symlink_to(away / "commands")
    assert f"{away}/commands/install.py" not in before
    assert _table(v)[f"{away}/commands/install.py"] == "pip"
