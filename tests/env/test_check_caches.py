"""The two caches of a repeated `check`: what an interpreter reported about itself (asked again
as soon as the interpreter or its pyvenv.cfg is another file), and the vendor-deps judgement
(judged again as soon as a version or a requirement differs). Real venvs, real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dtkguard.env import environment
from tests.support.cli import REPO
from tests.support.reports import DAS_25041
from tests.support.sitetree import add_dist
from tests.support.venvs import hermetic_env, make_venv


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("DTKGUARD_CACHE_DIR", str(path))
    return path


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []
    real = environment.ask_interpreter_fields

    def ask(python: str, code: str, what: str) -> list[str]:
        asked.append(python)
        return real(python, code, what)

    monkeypatch.setattr(environment, "ask_interpreter_fields", ask)
    return asked


def test_the_interpreter_is_asked_again_only_when_it_changed(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = make_venv(tmp_path / "venv", with_pip=False)
    asked = _counting(monkeypatch)
    first = environment.describe_python(str(venv.python))
    again = environment.describe_python(str(venv.python))
    assert asked == [str(venv.python)]  # the second answer is the kept one
    assert again == first
    assert str(venv.site_packages) in first[0]
    # pyvenv.cfg written again (same bytes: its ctime is new): asked again
    cfg = venv.path / "pyvenv.cfg"
    cfg.write_text(cfg.read_text())
    assert environment.describe_python(str(venv.python)) == first
    assert len(asked) == 2
    # the interpreter replaced by another file (what `venv --clear` does): asked again
    os.unlink(venv.python)
    os.symlink(os.path.realpath(sys.executable), venv.python)
    environment.describe_python(str(venv.python))
    assert len(asked) == 3
    environment.describe_python(str(venv.python))
    assert len(asked) == 3


def test_a_kept_answer_that_does_not_read_is_asked_again(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = make_venv(tmp_path / "venv", with_pip=False)
    asked = _counting(monkeypatch)
    first = environment.describe_python(str(venv.python))
    (entry,) = (cache / "interpreters").iterdir()
    data = json.loads(entry.read_text())
    data["facts"] = [1, 2]  # not a list of strings
    entry.write_text(json.dumps(data))
    assert environment.describe_python(str(venv.python)) == first
    entry.write_text("{not json")
    assert environment.describe_python(str(venv.python)) == first
    assert len(asked) == 3


_PROBE = (
    "import atexit, json, runpy, sys\n"
    "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules))))\n"
    "sys.argv = ['dtkguard', *sys.argv[1:]]\n"
    "runpy.run_module('dtkguard', run_name='__main__', alter_sys=True)\n"
)


def _check(python: Path, env: dict[str, str]) -> tuple[dict, set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, "check", "--python", str(python), "-f", "json"],
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    modules = set(json.loads(proc.stderr.rpartition("\nMODULES ")[2]))
    return json.loads(proc.stdout), modules


def _deps(report: dict) -> list[tuple[str, str]]:
    found = report["findings"]
    return sorted((f["subject"], f["message"]) for f in found if f["rule"] == "vendor-deps-broken")


def test_vendor_deps_are_judged_again_when_the_env_changes(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv", with_pip=False)
    site = venv.site_packages
    add_dist(site, "torch", DAS_25041["torch"], requires=("sympy==1.13.1", "filelock"))
    add_dist(site, "filelock", "3.16.1")
    env = hermetic_env(
        DTKGUARD_CACHE_DIR=str(tmp_path / "cache"), DTKGUARD_STORE=str(tmp_path / "store")
    )
    first, cold = _check(venv.python, env)
    assert [s for s, _ in _deps(first)] == ["sympy"]
    assert "packaging.requirements" in cold
    again, warm = _check(venv.python, env)
    assert _deps(again) == _deps(first)
    assert "packaging.requirements" not in warm  # judged for these very inputs already
    add_dist(site, "sympy", "1.14.0")  # the wrong version: another judgement
    third, _ = _check(venv.python, env)
    assert [m for _, m in _deps(third)] == [
        f"the vendor build torch {DAS_25041['torch']} needs sympy==1.13.1: sympy 1.14.0 would "
        "not do"
    ]
    for info in site.glob("sympy-*.dist-info"):
        for f in info.iterdir():
            f.unlink()
        info.rmdir()
    add_dist(site, "sympy", "1.13.1")
    fourth, _ = _check(venv.python, env)
    assert _deps(fourth) == []
