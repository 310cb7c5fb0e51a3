"""dtkguard never runs the target's code: a ``.pth`` line of a ``--python`` target (run by
``site`` at every start-up) must not run when dtkguard asks the interpreter for its paths, in
any command; its path lines still count (dtkguard reads them itself)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.cli import dtkguard_in
from tests.support.pythons import find_python
from tests.support.sitetree import add_dist
from tests.support.venvs import hermetic_env, make_venv

#: every command that asks a ``--python`` interpreter for its paths
COMMANDS = [
    ["check"],
    ["audit"],
    ["doctor"],
    ["lock", "--from-env", "-o", "pylock.t.toml", "--no-index"],
    ["policy", "init", "--from-env"],
    ["guard", "status"],
    ["restore", "--dry-run"],
    ["history"],
    ["undo"],
    ["guard", "install", "--policy", "dtk-25.04.1"],
    ["guard", "remove"],
    ["check", "--policy", "dtk-25.04.1"],
]


def _hostile_venv(tmp_path: Path, base: str = sys.executable) -> tuple[Path, Path, Path]:
    """(python, marker, extra site): a venv whose ``.pth`` writes ``marker`` when run, and
    names ``extra`` (holding dist ``from-pth``) on a path line."""
    venv = make_venv(tmp_path / "venv", with_pip=False, base_python=base)
    marker = tmp_path / "RAN"
    extra = tmp_path / "extra"
    add_dist(extra, "from-pth", "1.0")
    (venv.site_packages / "zz-evil.pth").write_text(
        f"import os; open({str(marker)!r}, 'w').write('ran')\n# a comment\n{extra}\n"
        f"import\tos; open({str(marker)!r}, 'w').write('tab')\n",
        encoding="utf-8",
    )
    (venv.site_packages / "sitecustomize.py").write_text(
        f"open({str(marker)!r}, 'w').write('sitecustomize')\n", encoding="utf-8"
    )
    return venv.python, marker, extra


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_no_pth_line_or_sitecustomize_runs(cmd: list[str], tmp_path: Path) -> None:
    python, marker, _ = _hostile_venv(tmp_path)
    proc = dtkguard_in(hermetic_env(), *cmd, "--python", str(python), cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert not marker.exists(), f"{cmd}: the target's code ran: {marker.read_text()}"


def test_path_lines_still_count(tmp_path: Path) -> None:
    from dtkguard.env.environment import from_python

    python, marker, extra = _hostile_venv(tmp_path)
    env = from_python(str(python))
    assert env.get("from-pth") is not None and env.get("from-pth").path.parent == extra
    assert not marker.exists()


@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_sys_path_equals_sites_own_without_running_it(version: str, tmp_path: Path) -> None:
    """For other Pythons too (``site`` moved the venv logic between versions): dtkguard's
    computed sys.path is exactly the one the interpreter builds at start-up."""
    import json
    import subprocess

    base = find_python(version)
    if base is None:
        pytest.skip(f"no python{version} here")
    python, marker, extra = _hostile_venv(tmp_path, base)
    from dtkguard.env.environment import describe_python

    ours, _ = describe_python(str(python))
    assert not marker.exists()
    code = "import sys,json;print(json.dumps(sys.path[1:]))"
    real = json.loads(subprocess.run([str(python), "-c", code], capture_output=True).stdout)
    assert ours == real and str(extra) in ours
