"""A command's own peak memory and CPU time.

``wait4`` in the process that forked the command would report at least that process's size (a
forked child's high-water mark starts at its parent's), so the command is started by a small
launcher (``python -S``, about 10 MB) that reports its child's ``ru_maxrss`` and CPU time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Measured", "measure"]

_LAUNCHER = r"""
import json, os, resource, subprocess, sys
cmd = json.loads(sys.argv[1])
proc = subprocess.run(cmd, stdin=sys.stdin, stdout=sys.stdout, stderr=sys.stderr)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[2], "w") as fh:
    json.dump([proc.returncode, use.ru_maxrss * 1024, use.ru_utime + use.ru_stime], fh)
"""


@dataclass(frozen=True)
class Measured:
    returncode: int
    peak_rss: int  # bytes
    cpu: float  # user + system seconds
    output: str


def measure(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    input: str = "",
) -> Measured:
    """Run ``cmd`` (stdout and stderr together in ``output``) and measure it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dtkguard-rss-") as tmp:
        report = Path(tmp) / "rss.json"
        argv = [sys.executable, "-S", "-c", _LAUNCHER, json.dumps([str(c) for c in cmd]),
                str(report)]  # fmt: skip
        proc = subprocess.run(argv, env=dict(env) if env is not None else None, cwd=cwd,
                              input=input, capture_output=True, text=True)  # fmt: skip
        code, peak, cpu = json.loads(report.read_text())
    return Measured(code, peak, cpu, proc.stdout + proc.stderr)
