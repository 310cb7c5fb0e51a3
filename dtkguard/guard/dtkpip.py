"""dtkpip: pip with the policy in front of it; pip's front-end of the guarded-install flow
(`dtkguard.guard.flow`).

install: plan with the target's pip (``--dry-run --report`` plus the vendor pins as ``-c``),
judge, then veto or run the real pip once with the same arguments and the same ``-c``; where
dtkguard's hook is in the environment, that one run is the plan too, paused before it installs
(`guard/pip_channel.py`). uninstall: judged by what it removes. Everything else: plain pip.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from dtkguard.decision import canonical
from dtkguard.env import override_log as overrides
from dtkguard.env.interpreter import Interpreter, interpreter
from dtkguard.guard import flow
from dtkguard.guard.frontend import Frontend, say
from dtkguard.guard.hook_policy import load_guard_policy
from dtkguard.guard.pipargs import PipCommand, split_dtkpip, split_pip, uninstall_names
from dtkguard.guard.plan import Plan, Planned, dry_run, run_pip
from dtkguard.guard.target import choose_python, refuse_empty_places, say_target
from dtkguard.guard.tools import DTKPIP
from dtkguard.policy.compiled import CompiledPolicy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.util.json_types import JSON


def main(argv: list[str]) -> int:
    opts = split_dtkpip(argv)
    cmd = split_pip(opts.pip_args)
    if cmd.command is None and cmd.has("-V", "--version"):
        return _version(opts.python)
    if cmd.command is None or cmd.has("-h", "--help"):
        from dtkguard.env.environment import active_python
        from dtkguard.guard.usage import print_own_help

        if cmd.has("-h", "--help") or not opts.pip_args:
            print_own_help(DTKPIP)
        python = opts.python or active_python() or sys.executable
        return run_pip(python, opts.pip_args, capture=False).returncode
    refuse_empty_places(cmd, "dtkpip")
    told = PipCommand([], None, [*cmd.global_args, *cmd.args]).option_values("--python")
    python = choose_python(opts.python, "dtkpip", given=told[-1] if told else None)
    say_target("dtkpip", python)
    if cmd.command not in ("install", "uninstall"):
        return run_pip(python, opts.pip_args, capture=False).returncode
    interp = interpreter(python)
    policy = load_guard_policy(opts.policy, interp)
    reason = (opts.override or os.environ.get(overrides.ENV_VAR, "")).strip()
    front = PipFrontend(interp, policy, reason, opts.pip_args, cmd)
    if cmd.command == "uninstall":
        return flow.uninstall(front)
    return flow.install(front)


def _version(explicit: str | None) -> int:
    """dtkguard's version, then the pip of the environment dtkpip would act on (not the pip of
    dtkguard's own venv); without one, how to name it."""
    from dtkguard import __version__
    from dtkguard.errors import InputError

    print(f"dtkpip (dtkguard {__version__})")
    try:
        python = choose_python(explicit, "dtkpip")
    except InputError as exc:
        print(f"target: none: {exc}")
        return 0
    return run_pip(python, ["--version"], capture=False).returncode


class PipFrontend(Frontend):
    """One ``dtkpip install|uninstall``: pip's plans, its report's wheels, its one real run."""

    tool = DTKPIP
    hook_token = True  # pip runs dtkguard's hook: it takes the override's token

    def __init__(
        self,
        interp: Interpreter,
        policy: CompiledPolicy,
        reason: str,
        typed: list[str],
        cmd: PipCommand,
    ) -> None:
        super().__init__(interp, policy, reason, typed)
        self.cmd = cmd

    def pins(self) -> list[str]:
        return ["-c", str(self.constraints)]

    def requested_count(self) -> int:
        from dtkguard.guard.progress import requested_count

        return requested_count(self.cmd)

    def plan(self, pins: bool) -> Plan:
        if pins:
            constraints = self.constraints
            return dry_run(
                self.interp.python, self.cmd.global_args, self.cmd.args, constraints, self.env
            )
        return self.free(self.unpinned_env())

    def free(self, env: dict[str, str], head: Plan | None = None) -> Plan:
        """What pip would install without the vendor pins, as far as a veto needs it (``head``:
        the requested packages, already known)."""
        from dtkguard.guard.free_plan import free_plan
        from dtkguard.guard.instead import options_only

        cmd = self.cmd
        options = options_only(cmd.args, cmd.value_options)
        python, policy = self.interp.python, self.policy
        return free_plan(python, cmd.global_args, cmd.args, options, policy, env, head)

    def removal_plan(self) -> Plan:
        return Plan(0, "", "", remove=[canonical(n) for n in uninstall_names(self.cmd) if n])

    def probe(self, args: list[str]) -> Plan:
        return dry_run(
            self.interp.python, self.cmd.global_args, args, self.constraints, _plain(self.env)
        )

    def locate(self, planned: Planned) -> list[Path] | None:
        from dtkguard.guard.verdict import pip_locator

        return pip_locator(self.constraints.parent)(planned)

    def say_satisfied(self, plan: Plan) -> None:
        flow.say_stdout(plan.satisfied_output())

    def pass_dry_run(self) -> int:
        # pip checks PEP 668 on a dry run without --report too
        args = [*self.typed, *self.pins(), *self.system_args()]
        return run_pip(self.interp.python, args, self.env, False).returncode

    def real_args(self, pins: bool) -> list[str]:
        if self.cmd.command == "uninstall":
            return [*self.typed, *self.system_args()]
        return [*self.typed, *(self.pins() if pins else ()), *self.system_args()]

    def unpinned_env(self) -> dict[str, str]:
        from dtkguard.guard.plan import NO_CONSTRAINTS

        return {**self.env, **NO_CONSTRAINTS}  # over the env's pip.conf `constraint`

    def run(self, args: list[str], plan: Plan | None) -> int:
        return run_pip(self.interp.python, args, self.env, capture=False).returncode

    def shortcut(self) -> int | None:
        """One pip run, paused by the hook before it installs (`_install_once`); None: plan
        the usual way."""
        if self.reason or not _one_run_fits(self.interp, self.cmd):
            return None
        return _install_once(self)


def _plain(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the one-run channel (a probe is a dry run of its own)."""
    from dtkguard.guard.pip_channel import CHANNEL

    return {k: v for k, v in env.items() if k != CHANNEL}


def _paused_locator(
    wheels: dict[str, str], fallback: Callable[[Planned], list[Path] | None]
) -> Callable[[Planned], list[Path] | None]:
    """The wheel the paused pip is about to install (downloaded or built), else ``fallback``."""

    def locate(planned: Planned) -> list[Path] | None:
        wheel = wheels.get(planned.key, "")
        if wheel.endswith(".whl") and Path(wheel).is_file():
            return [Path(wheel)]
        return fallback(planned)

    return locate


def _one_run_fits(interp: Interpreter, cmd: PipCommand) -> bool:
    """The hook of this dtkguard is in the environment, so the real run can be the only run;
    an install elsewhere or with a report of its own is planned first."""
    from dtkguard.guard.hook_files import FINDER_MODULE, HOOK_MODULE, HOOK_PTH, hook_source
    from dtkguard.guard.pipargs import ELSEWHERE

    if cmd.has("--report", *ELSEWHERE) or any(a.startswith(("-t", "--target")) for a in cmd.args):
        return False
    site = interp.purelib
    try:
        hook = (site / HOOK_MODULE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return (
        hook == hook_source(HOOK_MODULE)
        and (site / HOOK_PTH).is_file()
        and (site / FINDER_MODULE).is_file()
    )


def _install_once(front: PipFrontend) -> int | None:
    """The real pip run, paused by the hook before it installs: the plan is judged, then pip
    goes on inside the journal's transaction, or refuses with nothing changed. None: no hook
    answered, pip ran the dry run only (plan the usual way)."""
    from dtkguard.guard.pip_channel import OneRun
    from dtkguard.guard.plan import UNREADABLE, read_report

    cmd = front.cmd
    report = front.constraints.parent / "report.json"
    args = [*cmd.global_args, "install", "--dry-run", "--report", str(report), *cmd.args]
    args += [*front.pins(), *front.system_args()]
    run = OneRun.start(front.interp.python, args, report, front.env)
    try:
        if not run.wait_plan():
            code = run.finish()
            if not run.attached:
                return None
            return _explain_pinned(front, code, run.unpinned) if run.conflict else code
        plan = Plan(0, "", "")
        if not read_report(report, plan) or not set(run.wheels) <= {p.key for p in plan.install}:
            run.finish()
            say("dtkpip: pip's plan could not be read; nothing was installed or removed\n")
            return UNREADABLE
        if not plan.install:
            return run.go()
        locate = _paused_locator(run.wheels, front.locate)
        verdict = flow.verdict_of(front, plan, locate=locate)
        if verdict.blocked:
            text = flow.veto_text(front, verdict, False)
            run.finish()
            say(text)
            return 1
        return flow.journalled(front, run.go, [p.key for p in plan.install])
    finally:
        run.finish()


def _explain_pinned(front: PipFrontend, code: int, unpinned: dict[str, JSON]) -> int:
    """The one run failed on the vendor pins (pip said so above): what it would do without
    them, judged; a veto in dtkguard's words when that is refused. ``unpinned``: what the hook
    found of the request without the pins (`_requested_head`)."""
    free = front.free(_plain(front.unpinned_env()), _requested_head(front.cmd, unpinned))
    if not free.ok:
        return code
    verdict = flow.verdict_of(front, free)
    if verdict.blocked:
        say(flow.veto_text(front, verdict, True))
    return code or 1


def _requested_head(cmd: PipCommand, unpinned: dict[str, JSON]) -> Plan | None:
    """The requested packages without the pins (``install --no-deps``'s plan) from the hook's
    report of the failed resolution, where it holds them all: every requirement named as an
    argument with one exact version (``name==V``, no extras, markers, URLs or files) and no
    ``-r``/``-e``. None: pip plans them again."""
    from packaging.requirements import InvalidRequirement, Requirement

    from dtkguard.guard.plan import read_report_data

    if not cmd.positionals() or cmd.has("-r", "--requirement", "-e", "--editable"):
        return None
    wanted = {}
    for spec in cmd.positionals():
        try:
            req = Requirement(spec)
        except InvalidRequirement:
            return None
        exact = [s for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version]
        if req.url or req.extras or req.marker or len(req.specifier) != 1 or not exact:
            return None
        wanted[canonical(req.name)] = req.specifier
    head = Plan(0, "", "")
    if not read_report_data(unpinned, head):
        return None
    found = [
        p
        for p in head.install
        if p.key in wanted and wanted[p.key].contains(p.version, prereleases=True)
    ]
    if sorted(p.key for p in found) != sorted(wanted):  # each once
        return None
    for p in found:
        p.requested = True
    head.install = found
    return head
