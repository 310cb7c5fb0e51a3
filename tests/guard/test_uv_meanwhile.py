"""`uvplan.run_uv`'s ``meanwhile``: dtkuv's own work done while the real uv runs, with real
child processes (a Python script stands in for uv: `run_uv` runs whatever it is given)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from dtkguard.guard.uvplan import run_uv

#: waits (at most 60 s) for the file argv[1] that ``meanwhile`` writes, then says so
_WAITS = (
    "import os, sys, time\n"
    "for _ in range(6000):\n"
    "    if os.path.exists(sys.argv[1]): print('seen'); sys.exit(0)\n"
    "    time.sleep(0.01)\n"
    "sys.exit(3)\n"
)


def test_meanwhile_runs_while_the_child_runs_and_its_error_is_dropped(tmp_path: Path) -> None:
    flag = tmp_path / "flag"

    def meanwhile() -> None:
        flag.write_text("x")  # the child ends only once this exists: it ran meanwhile
        raise ValueError("a failed read ahead is done again by whoever needs it")

    proc = run_uv(sys.executable, ["-c", _WAITS, str(flag)], meanwhile=meanwhile)
    assert (proc.returncode, proc.stdout.strip()) == (0, "seen")


def test_an_interrupted_dtkuv_leaves_no_uv_running(tmp_path: Path) -> None:
    pid_file, lived = tmp_path / "pid", tmp_path / "lived"
    child = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
        f"time.sleep(5); open({str(lived)!r}, 'w')"
    )

    def meanwhile() -> None:
        for _ in range(6000):  # at most 60 s for the child to start
            if pid_file.exists() and pid_file.read_text():
                raise KeyboardInterrupt
            time.sleep(0.01)

    with pytest.raises(KeyboardInterrupt):
        run_uv(sys.executable, ["-c", child], meanwhile=meanwhile)
    with pytest.raises(ProcessLookupError):  # reaped before run_uv returned
        os.kill(int(pid_file.read_text()), 0)
    assert not lived.exists()  # killed, not waited for


def test_what_dtkuv_imports_during_its_dry_run_exists() -> None:
    """`run_uv` drops the errors of ``meanwhile``: a misspelt module would never be seen."""
    import importlib

    from dtkguard.guard import dtkuv

    for name in dtkuv._AFTER_THE_PLAN:
        importlib.import_module(name)
