"""Real processes in other roots for `dtkguard report node`: chroots that stand for containers
(a DAS-like one with a Python process, a busybox-like one without Python), and the wrapper that
makes a container exit between being found and being audited."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cli import REPO

#: a process that chroots into argv[1] and, with argv[2], execs it there (else sleeps as Python)
CHROOTED = """
import os, sys, time
os.chroot(sys.argv[1]); os.chdir("/")
if "--not-dumpable" in sys.argv:
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: /proc/PID/root needs SYS_PTRACE
print("in", flush=True)
if len(sys.argv) > 2 and sys.argv[2].startswith("/"):
    os.execv(sys.argv[2], [sys.argv[2], "600"])
time.sleep(600)
"""


def sleep_root(root: Path) -> Path:
    """A root holding only ``/bin/sleep`` and the libraries it links: no Python at all."""
    (root / "bin").mkdir(parents=True)
    shutil.copy2(shutil.which("sleep") or "/bin/sleep", root / "bin" / "sleep")
    ldd = subprocess.run(["ldd", str(root / "bin" / "sleep")], capture_output=True, text=True)
    for word in ldd.stdout.split():
        if word.startswith("/") and os.path.exists(word):
            dest = root / word.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(word, dest)
    return root


def chrooted(root: Path, *args: str) -> subprocess.Popen:
    """A real process in ``root`` (a Python one, or ``/bin/sleep`` with ``"/bin/sleep"``)."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHROOTED, str(root), *args], stdout=subprocess.PIPE
    )
    assert child.stdout.readline() == b"in\n"
    if "/bin/sleep" in args:  # wait for the exec, so that /proc shows sleep, not python
        for _ in range(200):
            if Path(f"/proc/{child.pid}/comm").read_text().strip() == "sleep":
                break
            time.sleep(0.05)
    return child


def stop(*children: subprocess.Popen) -> None:
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait()


WRAPPER = """#!/bin/sh
# dtkguard, except that the audit of a doomed process kills it first (a container that exits
# between being found and being audited)
for pid in $DOOMED; do
    case " $* " in
        *" --pid $pid "*|*"/proc/$pid/root"*)
            kill -9 "$pid" 2>/dev/null
            while [ -e "/proc/$pid/root/." ]; do sleep 0.05; done ;;
    esac
done
PYTHONPATH={repo} exec {python} -m dtkguard "$@"
"""


def doom_wrapper(path: Path) -> Path:
    """The ``--dtkguard`` command that kills the processes named in ``$DOOMED`` first."""
    path.write_text(WRAPPER.format(repo=REPO, python=sys.executable))
    path.chmod(0o755)
    return path


def reap(children: list[subprocess.Popen]) -> None:
    """Reap killed children in the background, as a container runtime reaps its init."""
    for child in children:
        child.poll()
