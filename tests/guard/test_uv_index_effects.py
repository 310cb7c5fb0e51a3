"""Issue 22 on the uv route, for what no file can be read of before uv runs: the wheels uv takes
from an index (downloaded only by its real run) and the sdists it builds itself (in its dry run
and in its real run). dtkuv judges what uv's real run wrote inside the journal transaction and
watches, with the pip hook's build journal, the protected set and the vendor builds around
every uv run. Real uv, the real local index of tests/support/index.py (no network), the same
wheels as tests/guard/test_uv_effects.py; every refusal leaves the venv byte-identical."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.guard.test_build_journal import _evil_sdist
from tests.guard.test_effect_routes import WHEEL_CASES, _wheel_cases
from tests.support.index import serve_index
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache


@pytest.fixture(scope="module")
def ug(tmp_path_factory: pytest.TempPathFactory, build_guarded: Callable[..., Guarded]) -> Guarded:
    """A guarded venv shared by the cases that must change nothing."""
    return build_guarded(tmp_path_factory.mktemp("uv-index") / "venv")


def _dtkuv(g: Guarded, cache: Path, uv: str, *args: str):
    env = hermetic_env(UV_CACHE_DIR=str(cache), DTKGUARD_UV=uv)
    return g.dtkguard("uv", "--python", str(g.venv.python), "pip", *args, env=env)


def _refused(g: Guarded, before: dict[str, str], proc, rule: str, name: str = "x") -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "dtkuv: stopped `uv " in proc.stderr, proc.stderr
    assert rule in proc.stderr, proc.stderr
    assert changed(before, g.venv.snapshot()) == []
    assert name not in g.venv.installed()
    assert g.venv.installed()["torch"] == TORCH


@pytest.mark.parametrize("case", WHEEL_CASES)
def test_index_wheel_effects_are_refused_on_the_uv_route(
    case: str, ug: Guarded, uv: str, tmp_path: Path
) -> None:
    """The wheel is only on the index: dtkuv cannot read it before uv runs, and judges what
    uv wrote before the transaction commits."""
    rule, files, kw = _wheel_cases(ug)[case]
    build_wheel(tmp_path / "index", "x", "1.0", files=files, **kw)
    before = ug.venv.snapshot()
    with serve_index(tmp_path / "index") as index:
        proc = _dtkuv(ug, tmp_path / "cache", uv, "install", "--no-deps", "-i", index.url, "x")
        assert index.downloads() == ["x-1.0-py3-none-any.whl"]  # uv did take it from there
    if case == "console-script-python3" and "reserved name" in proc.stderr:
        assert proc.returncode == 2, proc.stderr  # uv refuses that one itself: rolled back
        assert changed(before, ug.venv.snapshot()) == []
        return
    _refused(ug, before, proc, rule)


def test_an_innocent_index_wheel_installs_through_dtkuv(
    fresh: Guarded, uv: str, tmp_path: Path
) -> None:
    files = {"innocent/__init__.py": "", "__editable__.innocent-1.0.pth": "/src\n"}
    kw = {"entry_points": {"console_scripts": {"innocent": "innocent:main"}}}
    build_wheel(tmp_path / "index", "innocent", "1.0", files=files, **kw)
    with serve_index(tmp_path / "index") as index:
        args = ("install", "--no-deps", "-i", index.url, "innocent")
        proc = _dtkuv(fresh, tmp_path / "cache", uv, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "could not be judged" not in proc.stderr, proc.stderr
    assert fresh.venv.installed()["innocent"] == "1.0"
    assert (fresh.venv.bin / "innocent").exists()
    check = fresh.dtkguard("check", "--python", str(fresh.venv.python))
    assert check.returncode == 0, check.stdout + check.stderr


def test_an_override_lets_an_index_wheel_through_and_records_it(
    fresh: Guarded, uv: str, tmp_path: Path
) -> None:
    build_wheel(tmp_path / "index", "x", "1.0", files={"torch/_evil.py": "x"})
    env = hermetic_env(UV_CACHE_DIR=str(tmp_path / "cache"), DTKGUARD_UV=uv)
    with serve_index(tmp_path / "index") as index:
        proc = fresh.dtkguard(
            "uv", "--python", str(fresh.venv.python), "--override", "ticket 7", "pip",
            "install", "--no-deps", "-i", index.url, "x", env=env,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "override recorded" in proc.stderr, proc.stderr
    assert (fresh.venv.site_packages / "torch" / "_evil.py").exists()


def _assert_put_back(g: Guarded, before, proc, inodes, targets, plants) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "dtkuv: stopped `uv " in proc.stderr, proc.stderr
    assert "vendor-files-changed" in proc.stderr, proc.stderr
    assert "the guard put back what uv changed" in proc.stderr, proc.stderr
    assert changed(before, g.venv.snapshot()) == []
    assert not any(p.exists() for p in plants)
    assert [os.stat(t).st_ino for t in targets] == inodes  # in place: a uv cache's links too
    assert "evilbuild" not in g.venv.installed()
    assert g.venv.installed()["torch"] == TORCH


@pytest.mark.parametrize("source", ["path", "index", "beside-installed"])
@pytest.mark.parametrize("late", [False, True], ids=["in-the-plan", "in-the-real-run"])
def test_a_build_uv_runs_is_refused_and_put_back(
    fresh: Guarded, uv: str, tmp_path: Path, late: bool, source: str
) -> None:
    """An sdist whose backend rewrites torch/__init__.py and bin/activate in place (same size,
    same mtime) and plants files, when uv imports it to plan (its dry run) or only while it
    builds the wheel (the real run): refused, and the guard puts everything back. Beside an
    installed name (``torch SDIST``) too: dtkuv asks uv first whether the environment is
    already satisfied, without builds, and that must not let the build run unwatched."""
    g = fresh
    (tmp_path / "index").mkdir()
    sdist, targets, plants = _evil_sdist(g, tmp_path / "index", late)
    before = g.venv.snapshot()
    inodes = [os.stat(t).st_ino for t in targets]
    cache = tmp_path / "cache"
    if source == "path":
        proc = _dtkuv(g, cache, uv, "install", "--no-deps", "--no-index", str(sdist))
    elif source == "beside-installed":
        proc = _dtkuv(g, cache, uv, "install", "--no-deps", "--no-index", "torch", str(sdist))
    else:
        with serve_index(tmp_path / "index") as index:
            proc = _dtkuv(g, cache, uv, "install", "--no-deps", "-i", index.url, "evilbuild")
    _assert_put_back(g, before, proc, inodes, targets, plants)
    check = g.dtkguard("check", "--python", str(g.venv.python))
    assert check.returncode == 0, check.stdout + check.stderr
    shutil.rmtree(cache, ignore_errors=True)


@pytest.mark.parametrize("option", ["--target", "--prefix"])
def test_an_index_wheel_into_a_folder_inside_the_env_is_refused_before_uv_runs(
    option: str, ug: Guarded, uv: str, tmp_path: Path
) -> None:
    """``--target``/``--prefix`` inside the environment run no journal transaction: what uv's
    real run writes there could not be rolled back, so a wheel dtkuv cannot read first is
    refused before uv runs (innocent or not)."""
    build_wheel(tmp_path / "index", "x", "1.0", files={"torch/version/__init__.py": "x = 1\n"})
    dest = ug.venv.site_packages if option == "--target" else ug.venv.path
    before = ug.venv.snapshot()
    with serve_index(tmp_path / "index") as index:
        args = ("install", "--no-deps", "-i", index.url, option, str(dest), "x")
        proc = _dtkuv(ug, tmp_path / "cache", uv, *args)
        assert index.downloads() == []  # refused from the plan: uv's real run never started
    _refused(ug, before, proc, "file-conflict")
    assert "no transaction runs for --target or --prefix" in proc.stderr, proc.stderr


def test_a_local_wheel_into_the_site_folder_is_judged_before_and_installs(
    fresh: Guarded, uv: str, tmp_path: Path
) -> None:
    wheel = build_wheel(tmp_path / "wheels", "innocent", "1.0", files={"innocent/__init__.py": ""})
    proc = _dtkuv(fresh, tmp_path / "cache", uv, "install", "--no-deps", "--no-index",
                  "--target", str(fresh.venv.site_packages), str(wheel))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (fresh.venv.site_packages / "innocent" / "__init__.py").exists()
