"""dtkpip: pip with the policy in front of it.

install: plan with the target's pip (``--dry-run --report`` plus the vendor pins as ``-c``),
judge the environment-after-install with the rules of `dtkguard check`, then either stop with
an explanation (exit 1, nothing touched) or run the real pip once with the same arguments and
the same ``-c``. uninstall: a vendor build may not be removed. Everything else: plain pip.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from dtkguard.decision import canonical
from dtkguard.env import override_log as overrides
from dtkguard.env.interpreter import Interpreter, interpreter
from dtkguard.env.store import overrides_log
from dtkguard.guard.hook_policy import constraints_text, load_guard_policy
from dtkguard.guard.pipargs import (
    ELSEWHERE,
    PipCommand,
    installs_elsewhere,
    split_dtkpip,
    split_pip,
    uninstall_names,
)
from dtkguard.guard.plan import Plan, Planned, dry_run, run_pip
from dtkguard.guard.target import choose_python, refuse_empty_places, say_target
from dtkguard.lightclass import record
from dtkguard.policy.compiled import CompiledPolicy
from dtkguard.util.scratch import scratch_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.guard.verdict import Verdict
    from dtkguard.journal.txn import Transaction


def _say(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def _externally_managed_by_us(interp: Interpreter) -> bool:
    marker = interp.stdlib / "EXTERNALLY-MANAGED"
    try:
        return not interp.in_venv and "dtkguard" in marker.read_text(encoding="utf-8")
    except OSError:
        return False


def main(argv: list[str]) -> int:
    opts = split_dtkpip(argv)
    cmd = split_pip(opts.pip_args)
    if cmd.command is None and cmd.has("-V", "--version"):
        return _version(opts.python)
    if cmd.command is None or cmd.has("-h", "--help"):
        from dtkguard.env.environment import active_python
        from dtkguard.guard.tools import DTKPIP
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
    if cmd.command == "uninstall":
        return _uninstall(interp, policy, cmd, opts.pip_args, reason)
    return _install(interp, policy, cmd, opts.pip_args, reason)


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


def _uninstall(
    interp: Interpreter, policy: CompiledPolicy, cmd: PipCommand, pip_args: list[str], reason: str
) -> int:
    from dtkguard.guard.tools import DTKPIP
    from dtkguard.guard.verdict import vendor_removals
    from dtkguard.guard.veto_text import render_removal

    vendor = vendor_removals(uninstall_names(cmd), policy)
    env = dict(os.environ)
    if vendor:
        if not reason:
            _say(render_removal(vendor, policy, f"pip {shlex.join(pip_args)}", DTKPIP))
            return 1
        token = overrides.record_with_token(
            overrides_log(interp),
            reason,
            ["pip", *pip_args],
            [f"remove {v}" for v in vendor],
            "dtkpip",
        )
        env.update({overrides.ENV_VAR: reason, overrides.TOKEN_VAR: token})
    touches = [canonical(n) for n in uninstall_names(cmd) if n]
    return _journalled(interp, pip_args, lambda: _run_once(interp, pip_args, env), touches)


def _run_once(interp: Interpreter, pip_args: list[str], env: dict[str, str]) -> int:
    """Run the real pip; an override token the hook did not consume is withdrawn after."""
    try:
        return run_pip(interp.python, pip_args, env, capture=False).returncode
    finally:
        token = env.get(overrides.TOKEN_VAR)
        if token:
            overrides.token_file(overrides_log(interp), token).unlink(missing_ok=True)


def _install(
    interp: Interpreter, policy: CompiledPolicy, cmd: PipCommand, pip_args: list[str], reason: str
) -> int:
    """One pip run where the hook can pause it (`_install_once`); else plan with the pins,
    judge the result, then veto (or record an override) or run pip once."""
    env = dict(os.environ)
    env.pop(overrides.ENV_VAR, None)  # the plan never needs it; the real run gets it if used
    with scratch_dir("dtkpip-") as tmp:
        constraints = Path(tmp) / "dtkguard-constraints.txt"
        constraints.write_text(constraints_text(policy), encoding="utf-8")
        if cmd.has("--dry-run"):
            return run_pip(
                interp.python, [*pip_args, "-c", str(constraints)], env, False
            ).returncode
        job = _Job(interp, policy, cmd, pip_args, constraints, env)
        if not reason and _one_run_fits(interp, cmd):
            code = _install_once(job, Path(tmp))
            if code is not None:
                return code
        return _install_planned(job, reason)


@record
class _Job:
    """One ``dtkpip install``: where, under which policy, with which arguments and pins."""

    interp: Interpreter
    policy: CompiledPolicy
    cmd: PipCommand
    pip_args: list[str]
    constraints: Path
    env: dict[str, str]

    @property
    def command(self) -> str:
        return "pip " + shlex.join(self.pip_args)


def _install_planned(job: _Job, reason: str) -> int:
    """The dry run first (`_plan`), then the verdict, then the real pip run."""
    interp, env = job.interp, job.env
    plan, failed_with_pins = _plan(interp, job.policy, job.cmd, job.constraints, env)
    if not plan.ok:
        sys.stdout.write(plan.stdout)
        _say(plan.stderr)
        return plan.returncode
    if not plan.install and not failed_with_pins:
        sys.stdout.write(_satisfied(plan))  # nothing to install: nothing to judge
        return 0
    verdict = _verdict(job, plan)
    if verdict.blocked and not reason:
        _say(_veto_text(job, verdict, failed_with_pins))
        return 1
    if not verdict.blocked and failed_with_pins:
        _say(plan.stderr)  # pins conflict without a rule finding: show pip's own words
        return 1
    real_args = [*job.pip_args, "-c", str(job.constraints)]
    if verdict.blocked:
        _record_override(interp, verdict, reason, job.pip_args, env)
        if failed_with_pins:
            real_args = list(job.pip_args)
            env["PIP_CONSTRAINT"] = ""  # the site pip.conf pins too; the override lifts them
    if _externally_managed_by_us(interp):
        real_args.append("--break-system-packages")
    touches = [p.key for p in plan.install]
    return _journalled(interp, job.pip_args, lambda: _run_once(interp, real_args, env), touches)


def _verdict(job: _Job, plan: Plan, wheels: dict[str, str] | None = None) -> Verdict:
    """The plan judged against the environment now (the wheels of a paused pip run where
    ``wheels`` names them, else the report's files)."""
    from dtkguard.env.environment import from_python
    from dtkguard.guard.verdict import judge, pip_locator, say_unjudged

    tmp = job.constraints.parent
    locate = pip_locator(tmp)
    if wheels:
        locate = _paused_locator(wheels, locate)
    before = from_python(job.interp.python)
    verdict = judge(before, plan, job.policy, job.interp.purelib, locate)
    _say(say_unjudged("dtkpip", verdict))
    return verdict


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


def _veto_text(job: _Job, verdict: Verdict, failed_with_pins: bool) -> str:
    from dtkguard.guard.instead import suggestions
    from dtkguard.guard.veto_text import render

    cmd = job.cmd
    instead = suggestions(
        verdict, job.policy, job.interp.python, cmd, job.constraints, _plain(job.env)
    )
    return render(verdict, job.policy, job.command, instead, failed_with_pins)


def _plain(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the one-run channel (a probe is a dry run of its own)."""
    from dtkguard.guard.pip_channel import CHANNEL

    return {k: v for k, v in env.items() if k != CHANNEL}


def _one_run_fits(interp: Interpreter, cmd: PipCommand) -> bool:
    """The hook of this dtkguard is in the environment, so the real run can be the only run;
    an install elsewhere or with a report of its own is planned first."""
    from dtkguard.guard.layers import FINDER_MODULE, HOOK_MODULE, HOOK_PTH, hook_source

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


def _install_once(job: _Job, tmp: Path) -> int | None:
    """The real pip run, paused by the hook before it installs: the plan is judged, then pip
    goes on inside the journal's transaction, or refuses with nothing changed. None: no hook
    answered, pip ran the dry run only (plan the usual way)."""
    from dtkguard.guard.pip_channel import OneRun
    from dtkguard.guard.plan import read_report

    interp, cmd = job.interp, job.cmd
    report = tmp / "report.json"
    args = [*cmd.global_args, "install", "--dry-run", "--report", str(report), *cmd.args]
    args += ["-c", str(job.constraints)]
    if _externally_managed_by_us(interp):
        args.append("--break-system-packages")
    run = OneRun.start(interp.python, args, report, job.env)
    try:
        if not run.wait_plan():
            code = run.finish()
            if not run.attached:
                return None
            return _explain_pinned(job, code) if run.conflict else code
        plan = Plan(0, "", "")
        if not read_report(report, plan) or not set(run.wheels) <= {p.key for p in plan.install}:
            run.finish()
            _say("dtkpip: pip's plan could not be read; nothing was installed or removed\n")
            return 1
        if not plan.install:
            return run.go()
        verdict = _verdict(job, plan, run.wheels)
        if verdict.blocked:
            text = _veto_text(job, verdict, False)
            run.finish()
            _say(text)
            return 1
        touches = [p.key for p in plan.install]
        return _journalled(interp, job.pip_args, run.go, touches)
    finally:
        run.finish()


def _explain_pinned(job: _Job, code: int) -> int:
    """The one run failed on the vendor pins (pip said so above): what it would do without
    them, judged; a veto in dtkguard's words when that is refused."""
    free = _free(job.interp, job.policy, job.cmd, _plain(job.env))
    if not free.ok:
        return code
    verdict = _verdict(job, free)
    if verdict.blocked:
        _say(_veto_text(job, verdict, True))
    return code or 1


def _plan(
    interp: Interpreter,
    policy: CompiledPolicy,
    cmd: PipCommand,
    constraints: Path,
    env: dict[str, str],
) -> tuple[Plan, bool]:
    """pip's plan under the pins, else (on a conflict) without them: (plan, pins failed)."""
    from dtkguard.guard.progress import planning, requested_count

    with planning("dtkpip", "pip", requested_count(cmd)):
        plan = dry_run(interp.python, cmd.global_args, cmd.args, constraints, env)
    if plan.ok:
        return plan, False
    free = _free(interp, policy, cmd, env) if plan.conflict else None
    if free is None or not free.ok:
        return plan, False
    return free, True


def _free(
    interp: Interpreter, policy: CompiledPolicy, cmd: PipCommand, env: dict[str, str]
) -> Plan:
    """What pip would install without the vendor pins, as far as a veto needs it."""
    from dtkguard.guard.free_plan import free_plan
    from dtkguard.guard.instead import options_only

    options = options_only(cmd.args, cmd.value_options)
    return free_plan(interp.python, cmd.global_args, cmd.args, options, policy, env)


def _record_override(
    interp: Interpreter, verdict: Verdict, reason: str, pip_args: list[str], env: dict[str, str]
) -> None:
    """Record the override of what blocks and hand its token to the real pip run in ``env``."""
    allowed = [f"{f.rule}: {f.message}" for f in verdict.blocking]
    token = overrides.record_with_token(
        overrides_log(interp), reason, ["pip", *pip_args], allowed, "dtkpip"
    )
    env.update({overrides.ENV_VAR: reason, overrides.TOKEN_VAR: token})
    _say(f"dtkpip: override recorded in {overrides_log(interp)}: {reason}\n")


def _journalled(
    interp: Interpreter, pip_args: list[str], run: Callable[[], int], touches: list[str]
) -> int:
    """The real pip run as one transaction of the environment's journal (`dtkguard history`);
    ``touches``: the names its plan installs or removes (only their files are snapshotted)."""
    from dtkguard.guard.baseline import follow
    from dtkguard.journal.transaction import journalled

    def then(txn: Transaction) -> None:
        follow(interp, txn.changes(), touched=touches)

    argv = ["dtkpip", *pip_args]
    if installs_elsewhere(argv):  # not the environment's roots: nothing to journal
        return run()
    return journalled(interp.python, "dtkpip", argv, run, then, touches=touches or None)


def _satisfied(plan: Plan) -> str:
    return plan.satisfied_output()
