"""Run the dtkguard command line in tests: in a subprocess as users run it, or in this process."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

#: the checkout under test (first on the path of a subprocess run with `dtkguard_in`)
REPO = Path(__file__).resolve().parents[2]


def command(*args) -> list[str]:
    """The argv of ``python -m dtkguard ARGS`` (for `subprocess.Popen`, or behind a tracer)."""
    return [sys.executable, "-m", "dtkguard", *map(str, args)]


def dtkguard(
    *args, env=None, cwd=None, timeout=None, prefix=()
) -> subprocess.CompletedProcess[str]:
    """``python -m dtkguard ARGS`` in a subprocess: this process's (hermetic) environment plus
    ``env``, no colour, no ``$DTKGUARD_POLICY``, this checkout first on the path; ``timeout``
    (seconds) turns a hang into a test failure; ``prefix`` runs it under another program
    (``strace ...``)."""
    run_env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO), **(env or {})}
    run_env.pop("DTKGUARD_POLICY", None)
    return subprocess.run(
        [*map(str, prefix), *command(*args)],
        capture_output=True,
        text=True,
        env=run_env,
        cwd=cwd,
        timeout=timeout,
    )


def dtkguard_in(env: dict[str, str], *args, cwd=None) -> subprocess.CompletedProcess[str]:
    """``python -m dtkguard ARGS`` with exactly ``env`` (e.g. `hermetic_env()`) and this
    checkout first on the path."""
    return subprocess.run(
        command(*args),
        env={**env, "PYTHONPATH": str(REPO)},
        cwd=cwd,
        capture_output=True,
        text=True,
    )


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


def run_in_process(*args: str, env: dict[str, str] | None = None) -> Result:
    """``dtkguard ARGS`` in this process (stdout/stderr captured, env vars applied)."""
    from dtkguard.cli import main

    saved = dict(os.environ)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # argparse: --help, --version, bad arguments
                code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return Result(code, out.getvalue(), err.getvalue())
