"""A plan dtkpip or dtkuv cannot read is refused with the same exit code (1, nothing changed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dtkguard.guard.plan import UNREADABLE, dry_run
from tests.support.venvs import hermetic_env

#: a stand-in for the target's ``python -m pip install --dry-run --report FILE ...``: it writes
#: REPORT to the file pip would write its installation report to, and exits 0
FAKE_PIP = """#!/bin/sh
while [ "$#" -gt 0 ]; do
    if [ "$1" = "--report" ]; then printf '%s' "$REPORT" > "$2"; fi
    shift
done
exit 0
"""


@pytest.mark.parametrize("report", ["", "{", "[]", '"install"'])
def test_a_pip_plan_dtkpip_cannot_read_is_refused(tmp_path: Path, report: str) -> None:
    fake = tmp_path / "python"
    fake.write_text(FAKE_PIP)
    fake.chmod(0o755)
    env = {**hermetic_env(), "REPORT": report}
    plan = dry_run(str(fake), [], ["accelerate"], None, env)
    assert plan.returncode == UNREADABLE == 1
    assert "cannot read pip's plan" in plan.stderr and not plan.install


def test_a_pip_plan_that_reads_is_a_plan(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text(FAKE_PIP)
    fake.chmod(0o755)
    report = '{"version": "1", "install": [{"metadata": {"name": "six", "version": "1.17.0"}}]}'
    plan = dry_run(str(fake), [], ["six"], None, {**hermetic_env(), "REPORT": report})
    assert plan.ok and [(p.name, p.version) for p in plan.install] == [("six", "1.17.0")]
