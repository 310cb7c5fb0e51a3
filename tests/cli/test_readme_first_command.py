"""The README's first command ends with a `dtkguard check` that works on a fresh machine: run
as it is written (with nothing active and no guarded env known), it judges an interpreter and
gives a verdict, not exit 2 for a target it cannot choose."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.support.venvs import hermetic_env

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_first_command_checks_an_interpreter(tmp_path: Path) -> None:
    first = re.search(r"```sh\n(.+?)\n```", README.read_text(encoding="utf-8"), re.S)
    assert first is not None
    last = first.group(1).split("&&")[-1].strip()
    argv = shlex.split(last)
    assert argv[0] == ".venv/bin/dtkguard", last
    env = hermetic_env(
        DTKGUARD_STORE=str(tmp_path / "store"),  # no guarded env known
        DTKGUARD_CACHE_DIR=str(tmp_path / "cache"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        PYTHONPATH=str(README.parent),
    )
    env.pop("CONDA_PREFIX", None)
    proc = subprocess.run(
        [sys.executable, "-m", "dtkguard", *argv[1:]],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr  # a verdict, not exit 2
    assert proc.stdout.splitlines()[-1].startswith("dtkguard check: "), proc.stdout
    assert "judged" in proc.stderr
