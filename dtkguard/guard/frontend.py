"""What an installer gives the guarded-install flow (`dtkguard.guard.flow`): one subclass per
installer (`dtkpip.PipFrontend`, `dtkuv.UvFrontend`), as pre-commit has one module per
language. The front-end parses its command line, plans (with the vendor pins, or without them
to explain a conflict), names the wheels of a plan, runs the installer once for real, and keeps
its special cases (pip's one paused run, uv's satisfied probe and file watch) in the hooks
below; the flow does the judging, the veto, the override record and the journal."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from dtkguard.env import override_log as overrides
from dtkguard.env.interpreter import Interpreter
from dtkguard.guard.pipargs import PipCommand
from dtkguard.guard.plan import Plan, Planned
from dtkguard.guard.tools import Tool
from dtkguard.policy.compiled import CompiledPolicy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from dtkguard.decision import Problem
    from dtkguard.env.environment import Environment


def say(text: str) -> None:
    """dtkguard's words (and the installer's, where it says them for a plan) on stderr."""
    if text:
        sys.stderr.write(text)
        sys.stderr.flush()


def externally_managed_by_us(interp: Interpreter) -> bool:
    """`guard install --externally-managed` wrote the PEP 668 marker of this base interpreter:
    plain pip and uv refuse it, the guarded installers pass ``--break-system-packages``."""
    marker = interp.stdlib / "EXTERNALLY-MANAGED"
    try:
        return not interp.in_venv and "dtkguard" in marker.read_text(encoding="utf-8")
    except OSError:
        return False


def is_quiet(arg: str) -> bool:
    """``-q``, ``-qq``, ``--quiet``: pip's and uv's option to say less."""
    return arg == "--quiet" or re.fullmatch(r"-q+", arg) is not None


class Frontend:
    """One guarded ``install``/``uninstall`` of one installer: what the flow asks of it."""

    #: the installer a message speaks of (`dtkguard.guard.tools`)
    tool: Tool
    #: the subcommand's arguments (pip's ``install ...``, uv's ``pip install ...``)
    cmd: PipCommand
    #: the real run passes through dtkguard's pip hook, which consumes an override's token
    hook_token = False

    def __init__(
        self, interp: Interpreter, policy: CompiledPolicy, reason: str, typed: list[str]
    ) -> None:
        self.interp, self.policy, self.reason = interp, policy, reason
        #: an override was recorded for this run (its reason goes into the journal too)
        self.overridden = False
        #: the installer's arguments as typed (the journal's and the override log's words)
        self.typed = typed
        self.env = dict(os.environ)
        self.env.pop(overrides.ENV_VAR, None)  # the plan never needs it; the real run may
        #: the vendor pins as a constraints file (written by the flow)
        self.constraints = Path()

    @property
    def command(self) -> str:
        """The command as a message quotes it: ``pip install ...``, ``uv pip install ...``."""
        import shlex

        return shlex.join([self.tool.runs, *self.typed])

    @property
    def quiet(self) -> bool:
        """The user asked the installer to say less (``-q``): its plan's words are not said."""
        return any(is_quiet(a) for a in self.typed)

    def system_args(self) -> list[str]:
        """``--break-system-packages`` where the PEP 668 marker is dtkguard's own."""
        return ["--break-system-packages"] if externally_managed_by_us(self.interp) else []

    # planning
    def requested_count(self) -> int:
        raise NotImplementedError

    def plan(self, pins: bool) -> Plan:
        """The installer's dry run: with the vendor pins, or without them (``pins=False``: as
        far as a veto needs it)."""
        raise NotImplementedError

    def removal_plan(self) -> Plan:
        """What an ``uninstall`` removes (``Plan.remove``)."""
        raise NotImplementedError

    def probe(self, args: list[str]) -> Plan:
        """A dry run of ``install ARGS`` with the vendor pins (the veto's suggestions)."""
        raise NotImplementedError

    def locate(self, planned: Planned) -> list[Path] | None:
        """The wheels of a planned dist at hand before the install; None when none is."""
        raise NotImplementedError

    def before(self) -> Environment:
        from dtkguard.env.environment import from_python

        return from_python(self.interp.python)

    def say_satisfied(self, plan: Plan) -> None:
        """Say what the real run would have said for an empty plan."""
        raise NotImplementedError

    def pass_dry_run(self) -> int:
        """The user's own ``--dry-run``: it changes nothing, so it runs once, pinned."""
        raise NotImplementedError

    # the real run
    def real_args(self, pins: bool) -> list[str]:
        """The real run's arguments: the user's, with the vendor pins unless an override
        lifted them."""
        raise NotImplementedError

    def run(self, args: list[str], plan: Plan | None) -> int:
        """Run the installer once for real (inside the journal's transaction)."""
        raise NotImplementedError

    # special cases: the defaults do nothing
    def shortcut(self) -> int | None:
        """An exit code when the install is settled before the flow plans (None: plan)."""
        return None

    def watched(self, rest: Callable[[], int]) -> int:
        """The rest of the flow (plan, judge, real run), inside what the installer needs
        around it (uv: the watch of what its builds and runs change)."""
        return rest()

    def check_plan(self, plan: Plan) -> None:
        """Raise `InputError` when the plan is not for the environment judged."""

    def unpinned_env(self) -> dict[str, str]:
        """The environment of a run without the vendor pins: without those the installer's
        own config gives too (the guarded env's ``pip.conf``, its ``uv.toml``)."""
        return self.env

    def lift_pins(self) -> None:
        """An override lifts the vendor pins: also those the installer's config gives."""
        self.env.update(self.unpinned_env())

    def judge_files(self, plan: Plan, before: Environment) -> list[Problem]:
        """What the plan's files do that the installer itself does not judge."""
        return []

    def unjudged(self, plan: Plan) -> list[Problem]:
        """What the real run would write where nothing judges it nor rolls it back."""
        return []

    def starting(self) -> None:
        """Just before the journalled real run."""

    def finish(self, code: int) -> int:
        """Leave the environment as it was after a run that changed nothing."""
        return code

    def after_run(self, code: int) -> int:
        """After the journalled run (rolled back when ``code`` is not 0)."""
        return code
