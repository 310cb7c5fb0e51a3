"""Classes 1-5 of issue 22 on the uv route: uv has no in-process hook, so ``dtkuv pip install``
judges the files of every wheel of its plan (and ``dtkuv pip uninstall`` the files a removal
deletes) with the decision core before uv runs. Real uv, real wheels; every refusal leaves the
venv byte-identical."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.guard.test_effect_routes import EVIL_PTH, TAG, WHEEL_CASES, _plant_egg_info, _wheel_cases
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache


@pytest.fixture(scope="module")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("uv-cache")


@pytest.fixture(scope="module")
def ug(tmp_path_factory: pytest.TempPathFactory, build_guarded: Callable[..., Guarded]) -> Guarded:
    """A guarded venv shared by the cases that must change nothing."""
    return build_guarded(tmp_path_factory.mktemp("uv-effects") / "venv")


def _dtkuv(g: Guarded, cache: Path, uv: str, *args: str):
    env = hermetic_env(UV_CACHE_DIR=str(cache), DTKGUARD_UV=uv)
    return g.dtkguard("uv", "--python", str(g.venv.python), "pip", *args, env=env)


def _refused(g: Guarded, before: dict[str, str], proc, rule: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "dtkuv: stopped `uv " in proc.stderr, proc.stderr
    assert rule in proc.stderr, proc.stderr
    assert changed(before, g.venv.snapshot()) == []
    assert g.venv.installed()["torch"] == TORCH


@pytest.mark.parametrize("case", WHEEL_CASES)
def test_wheel_effects_are_refused_on_the_uv_route(
    case: str, ug: Guarded, uv_cache: Path, uv: str, tmp_path: Path
) -> None:
    rule, files, kw = _wheel_cases(ug)[case]
    wheel = build_wheel(tmp_path, "x", "1.0", files=files, **kw)
    before = ug.venv.snapshot()
    proc = _dtkuv(ug, uv_cache, uv, "install", "--no-deps", str(wheel))
    _refused(ug, before, proc, rule)


def test_an_innocent_wheel_installs_through_dtkuv(
    fresh: Guarded, uv_cache: Path, uv: str, tmp_path: Path
) -> None:
    """The same judgement lets a wheel through that touches nothing of the vendor builds or
    the guard: its own package, its own console script, its own editable ``.pth``."""
    files = {"innocent/__init__.py": "", "__editable__.innocent-1.0.pth": "/src\n"}
    kw = {"entry_points": {"console_scripts": {"innocent": "innocent:main"}}}
    wheel = build_wheel(tmp_path, "innocent", "1.0", files=files, **kw)
    proc = _dtkuv(fresh, uv_cache, uv, "install", "--no-deps", str(wheel))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fresh.venv.installed()["innocent"] == "1.0"
    assert (fresh.venv.bin / "innocent").exists()


def test_removals_are_judged_by_what_they_delete_on_the_uv_route(
    fresh: Guarded, uv_cache: Path, uv: str, tmp_path: Path
) -> None:
    g = fresh
    wheel = build_wheel(tmp_path, "innocent", "1.0", files={"innocent/__init__.py": ""})
    assert _dtkuv(g, uv_cache, uv, "install", "--no-deps", str(wheel)).returncode == 0
    record = next(g.venv.site_packages.glob("innocent-1.0.dist-info")) / "RECORD"
    saved = record.read_text()
    for row, rule in (
        ("torch,,\n", "file-conflict"),
        ("torch/version.py,,\n", "file-conflict"),
        ("_dtkguard_pip_hook.py,,\n", "guard-tamper"),
        ("../../../bin/pip,,\n", "guard-tamper"),
    ):
        record.write_text(saved + row)
        before = g.venv.snapshot()
        proc = _dtkuv(g, uv_cache, uv, "uninstall", "innocent")
        _refused(g, before, proc, rule)
        # an upgrade removes the old files too
        new = build_wheel(tmp_path / "v2", "innocent", "2.0", files={"innocent/__init__.py": ""})
        proc = _dtkuv(g, uv_cache, uv, "install", "--no-deps", str(new))
        _refused(g, before, proc, rule)
        record.write_text(saved)
    assert _dtkuv(g, uv_cache, uv, "uninstall", "innocent").returncode == 0  # its own files go


def test_an_egg_info_naming_torch_is_not_removed_by_dtkuv(
    ug: Guarded, uv_cache: Path, uv: str
) -> None:
    info = _plant_egg_info(ug, "innocent-egg", "torch")
    try:
        before = ug.venv.snapshot()
        proc = _dtkuv(ug, uv_cache, uv, "uninstall", "innocent-egg")
        _refused(ug, before, proc, "file-conflict")
    finally:
        shutil.rmtree(info)


#: wheels whose members share a folder with, or sort before, one that must be refused: the
#: judgement computes some answers once per folder (`file_effects.wheel_effect`,
#: `decision.judge_files`), never for a site's top or its ``__pycache__``, whose files differ
FOLDER_CASES = {
    "site-top-after-innocent": ("file-conflict", {"aaa.py": "x", "torch.py": "x"}),
    "pycache-top-after-innocent": (
        "file-conflict",
        {f"__pycache__/aaa.{TAG}.pyc": "x", f"__pycache__/torch.{TAG}.pyc": "x"},
    ),
    "guard-after-innocent": ("guard-tamper", {"Aaa.py": "x", "_dtkguard_finder.py": "x"}),
    "pip-beside-pipx": ("guard-tamper", {"pip/a.py": "x", "pipx/a.py": "x"}),
    "dot-dot-into-torch": ("file-conflict", {"aaa/../torch/a.py": "x", "aaa/a.py": "x"}),
    "data-after-plain": ("file-conflict", {"aaa/a.py": "x", "x-1.0.data/purelib/torch/a.py": "x"}),
}


@pytest.mark.parametrize("case", sorted(FOLDER_CASES))
def test_answers_kept_per_folder_do_not_leak(
    case: str, ug: Guarded, uv_cache: Path, uv: str, tmp_path: Path
) -> None:
    rule, files = FOLDER_CASES[case]
    wheel = build_wheel(tmp_path, "x", "1.0", files=files)
    before = ug.venv.snapshot()
    proc = _dtkuv(ug, uv_cache, uv, "install", "--no-deps", str(wheel))
    _refused(ug, before, proc, rule)


@pytest.mark.parametrize(
    ("target", "files", "rule"),
    [
        ("torch", {"alias/a.py": "x"}, "file-conflict"),
        ("torch", {"Innocent/a.py": "x", "alias/sub/b.py": "x"}, "file-conflict"),
        ("pip/_internal", {"alias/a.py": "x"}, "guard-tamper"),
        ("", {"alias/zz.pth": EVIL_PTH}, "startup-code"),  # the site itself
    ],
)
def test_a_symlinked_folder_in_the_site_is_judged_by_where_it_leads(
    target: str,
    files: dict[str, str],
    rule: str,
    ug: Guarded,
    uv_cache: Path,
    uv: str,
    tmp_path: Path,
) -> None:
    alias = ug.venv.site_packages / "alias"
    alias.symlink_to(ug.venv.site_packages / target if target else ug.venv.site_packages)
    try:
        wheel = build_wheel(tmp_path, "x", "1.0", files=files)
        before = ug.venv.snapshot()
        proc = _dtkuv(ug, uv_cache, uv, "install", "--no-deps", str(wheel))
        _refused(ug, before, proc, rule)
    finally:
        alias.unlink()
