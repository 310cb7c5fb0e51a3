"""dtkpip's one pip run: the real install, paused by the hook before it installs anything.

dtkpip starts ``pip install --dry-run --report FILE ARGS`` with two pipes named by
``$DTKGUARD_DTKPIP_CHANNEL`` (descriptors ``W,R``). Where the hook is present it answers
``hello``, turns the dry run into the real run and, once pip has resolved, downloaded and built
(the report is written), sends ``plan {name: wheel}`` and waits: dtkpip judges the plan and
answers ``go`` (inside the journal's transaction) or refuses. ``conflict REPORT``: the
resolution failed on the guard's vendor pins; REPORT (pip's report's shape) holds what the hook
knows of the request without them, which dtkpip explains the conflict from where it suffices.
Where no hook answers, pip ran the dry run and changed nothing; a dtkpip that dies closes the
pipe, which the hook takes as a refusal.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from dtkguard.lightclass import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.util.json_types import JSON

#: the variable the hook reads (``plugins/pip/_dtkguard_pip_hook.CHANNEL``)
CHANNEL = "DTKGUARD_DTKPIP_CHANNEL"


@record
class OneRun:
    """The running pip and dtkpip's ends of the two pipes."""

    proc: subprocess.Popen[bytes]
    report: Path
    _read: int
    _write: int | None
    attached: bool = False
    conflict: bool = False
    #: {canonical name: the local wheel pip installs}, from the ``plan`` message
    wheels: dict[str, str] = field(default_factory=dict)
    #: the ``conflict`` message's report: the request's dists without the pins, where known
    unpinned: dict[str, JSON] = field(default_factory=dict)

    @classmethod
    def start(cls, python: str, args: list[str], report: Path, env: dict[str, str]) -> OneRun:
        """``python -m pip ARGS`` (ARGS hold ``install --dry-run --report REPORT``)."""
        from_hook, to_us = os.pipe()
        from_us, to_hook = os.pipe()
        env = {**env, CHANNEL: f"{to_us},{from_us}"}
        try:
            proc = subprocess.Popen(
                [python, "-m", "pip", *args], env=env, pass_fds=(to_us, from_us)
            )
        except BaseException:
            for fd in (from_hook, to_hook):
                os.close(fd)
            raise
        finally:
            os.close(to_us)
            os.close(from_us)
        return cls(proc, report, from_hook, to_hook)

    def wait_plan(self) -> bool:
        """Read the hook's messages until its plan (True) or pip's end (False)."""
        with os.fdopen(os.dup(self._read), "rb") as fh:
            for raw in fh:
                line = raw.decode("utf-8", "replace").strip()
                if line == "hello":
                    self.attached = True
                elif line == "conflict" or line.startswith("conflict "):
                    self.conflict = True
                    self.unpinned = _json_object(line[9:])
                elif line.startswith("plan "):
                    self.wheels = _json_object(line[5:])
                    return self.attached
        return False

    def answer(self, go: bool) -> None:
        """Tell the paused pip to install (``go``) or to refuse; once."""
        if self._write is None:
            return
        try:
            if go:
                os.write(self._write, b"go\n")
        except OSError:
            pass
        finally:
            os.close(self._write)
            self._write = None

    def finish(self) -> int:
        """Refuse whatever was not answered, wait for pip, close the pipes: pip's exit code."""
        self.answer(False)
        code = self.proc.wait()
        if self._read >= 0:
            os.close(self._read)
            self._read = -1
        return code

    def go(self) -> int:
        self.answer(True)
        return self.finish()


def _json_object(text: str) -> dict[str, JSON]:
    """``text`` as a JSON object; ``{}`` when it is none."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
