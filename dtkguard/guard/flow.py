"""The guarded-install flow, one for every installer (`dtkguard.guard.frontend`).

install: plan with the vendor pins; on a conflict, plan without them to explain it; judge the
environment after the plan with the rules of `dtkguard check`; then stop with the veto and its
suggestions (exit 1, nothing touched), or record the override, and run the installer once as one
transaction of the environment's journal. uninstall: the same judgement of what is removed.
"""

from __future__ import annotations

from pathlib import Path

from dtkguard.decision import canonical
from dtkguard.env import override_log as overrides
from dtkguard.env.store import overrides_log
from dtkguard.guard.frontend import Frontend, say
from dtkguard.guard.hook_policy import constraints_text
from dtkguard.guard.plan import Plan, Planned

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from dtkguard.decision import Problem
    from dtkguard.env.environment import Environment
    from dtkguard.guard.verdict import Verdict
    from dtkguard.journal.txn import Transaction


def install(front: Frontend) -> int:
    """One guarded install (the vendor pins written for the whole of it)."""
    from dtkguard.util.scratch import scratch_dir

    with scratch_dir(f"{front.tool.name}-") as tmp:
        front.constraints = Path(tmp) / "dtkguard-constraints.txt"
        front.constraints.write_text(constraints_text(front.policy), encoding="utf-8")
        if front.cmd.has("--dry-run"):  # changes nothing: no transaction
            return front.pass_dry_run()
        code = front.shortcut()
        if code is not None:
            return code
        return front.watched(lambda: _planned(front))


def _planned(front: Frontend) -> int:
    """Plan, judge, then veto or run once."""
    pinned, plan = _plan(front)
    if not plan.ok:
        return _unresolved(front, pinned, plan)
    failed_with_pins = plan is not pinned
    front.check_plan(plan)
    if not plan.install and not plan.remove and not failed_with_pins:
        front.say_satisfied(plan)  # nothing to install: nothing to judge
        return front.finish(0)
    before = front.before()
    verdict = verdict_of(front, plan, before)
    if not verdict.blocked:  # a blocked plan gets the veto, files or not
        code = _allowed(front, front.judge_files(plan, before))
        if code is not None:
            return code
    if verdict.blocked and not front.reason:
        return veto(front, verdict, failed_with_pins)
    if not verdict.blocked and failed_with_pins:
        say(pinned.stderr)  # pins conflict without a rule finding: the installer's own words
        return front.finish(1)
    pins = True
    if verdict.blocked:
        record_override(front, [f"{f.rule}: {f.message}" for f in verdict.blocking])
        if failed_with_pins:
            pins = False  # the override lifts the vendor pins
            front.lift_pins()
    code = _allowed(front, front.unjudged(plan))
    if code is not None:
        return code
    return real(front, front.real_args(pins), plan, plan.touches)


def _plan(front: Frontend) -> tuple[Plan, Plan]:
    """(the plan with the vendor pins, the plan to judge): the pinned plan, else on a conflict
    the plan without the pins (not ``ok`` when that failed too)."""
    from dtkguard.guard.progress import planning

    with planning(front.tool.name, front.tool.runs, front.requested_count()):
        pinned = front.plan(pins=True)
    if pinned.ok:
        return pinned, pinned
    return pinned, front.plan(pins=False) if pinned.conflict else pinned


def _unresolved(front: Frontend, pinned: Plan, free: Plan) -> int:
    """The installer could not plan: its words; on a conflict dtkguard's sentence, which
    blames the vendor pins only where the request resolves without them."""
    say_stdout(pinned.stdout)
    say(pinned.stderr)
    if pinned.conflict:
        if free.conflict:  # the request itself conflicts: the pins are not the cause
            why, see = "with or without the vendor builds", ""
        else:
            why, see = "while keeping the vendor builds", " See `dtkguard policy explain torch`."
        say(
            f"{front.tool.name}: stopped `{front.command}`: {front.tool.runs} cannot satisfy it "
            f"{why} of policy {front.policy.name}; nothing was installed or removed.{see}\n"
        )
    return front.finish(pinned.returncode)


def say_stdout(text: str) -> None:
    import sys

    sys.stdout.write(text)
    sys.stdout.flush()


def verdict_of(
    front: Frontend,
    plan: Plan,
    before: Environment | None = None,
    locate: Callable[[Planned], list[Path] | None] | None = None,
) -> Verdict:
    """The plan judged against the environment ``before`` it (its wheels by ``locate``, else
    by the front-end's)."""
    from dtkguard.guard.verdict import judge, say_unjudged

    env = before if before is not None else front.before()
    verdict = judge(env, plan, front.policy, front.interp.purelib, locate or front.locate)
    say(say_unjudged(front.tool.name, verdict))
    return verdict


def veto_text(front: Frontend, verdict: Verdict, failed_with_pins: bool) -> str:
    """The veto in plain words, with suggestions the installer's pinned dry runs checked."""
    from dtkguard.guard.instead import suggestions
    from dtkguard.guard.veto_text import render

    instead = suggestions(
        verdict, front.policy, front.interp.python, front.cmd, front.constraints, front.env,
        tool=front.tool, probe=front.probe,
    )  # fmt: skip
    return render(verdict, front.policy, front.command, instead, failed_with_pins, front.tool)


def veto(front: Frontend, verdict: Verdict, failed_with_pins: bool) -> int:
    say(veto_text(front, verdict, failed_with_pins))
    return front.finish(1)


def _allowed(front: Frontend, problems: list[Problem]) -> int | None:
    """``problems`` refused (the exit code), or with an override recorded (None)."""
    if not problems:
        return None
    if front.reason:
        record_override(front, [f"{p.rule}: {p.message}" for p in problems])
        return None
    return refuse(front, problems)


def refuse(front: Frontend, problems: list[Problem], said: str = "") -> int:
    """Refuse with ``problems`` (``said``: what was put back), the environment as it was."""
    tool = front.tool.name
    rest = front.command[len(front.tool.runs) + 1 :]
    lines = "".join(f"  {p.message} [{p.rule}, {p.severity}]\n" for p in problems[:8])
    more = f"  ... and {len(problems) - 8} more\n" if len(problems) > 8 else ""
    said = f" ({said})" if said else ""
    say(
        f"{tool}: stopped `{front.command}`: nothing was installed or removed{said}.\n"
        f"{lines}{more}"
        f"dtkguard: this environment is guarded by policy {front.policy.name}; "
        f"`dtkguard policy explain {problems[0].package}` shows the rule. "
        f'Override (recorded): {tool} --override "reason" {rest}\n'
    )
    return front.finish(1)


def record_override(front: Frontend, allowed: list[str]) -> None:
    """Record the override of ``allowed`` and hand it to the real run in ``front.env`` (with a
    one-time token where the run passes the pip hook, so the hook records it no second time)."""
    log = overrides_log(front.interp)
    argv = [front.tool.runs, *front.typed]
    if front.hook_token:
        token = overrides.record_with_token(log, front.reason, argv, allowed, front.tool.name)
        front.env[overrides.TOKEN_VAR] = token
    else:
        overrides.record(log, front.reason, argv, allowed, front.tool.name)
    front.env[overrides.ENV_VAR] = front.reason
    front.overridden = True
    say(f"{front.tool.name}: override recorded in {log}: {front.reason}\n")


def real(front: Frontend, args: list[str], plan: Plan | None, touches: list[str]) -> int:
    """The real run as one transaction of the environment's journal (`dtkguard history`;
    `dtkguard undo` reverts it, a failed run is rolled back); ``touches``: the names its plan
    installs or removes (only their files are snapshotted)."""
    return journalled(front, lambda: _run_once(front, args, plan), touches)


def journalled(front: Frontend, run: Callable[[], int], touches: list[str]) -> int:
    """``run`` inside the journal's transaction; the baseline follows what it changed."""
    from dtkguard.guard.baseline import follow
    from dtkguard.guard.pipargs import installs_elsewhere
    from dtkguard.journal.transaction import journalled as in_transaction

    def then(txn: Transaction) -> None:
        follow(front.interp, txn.changes(), touched=touches)

    argv = [front.tool.name, *front.typed]
    front.starting()
    if installs_elsewhere(argv):  # not the environment's roots: nothing to journal
        return front.after_run(run())
    reason = front.reason if front.overridden else ""  # `dtkguard history` says it
    code = in_transaction(
        str(front.interp.python),
        front.tool.name,
        argv,
        run,
        then,
        touches=touches or None,
        reason=reason,
    )
    return front.after_run(code)


def _run_once(front: Frontend, args: list[str], plan: Plan | None) -> int:
    """The installer's real run; an override token the hook did not consume is withdrawn."""
    try:
        return front.run(args, plan)
    finally:
        token = front.env.get(overrides.TOKEN_VAR)
        if token:
            overrides.token_file(overrides_log(front.interp), token).unlink(missing_ok=True)


def uninstall(front: Frontend) -> int:
    """A guarded uninstall: a vendor build may not be removed, nor what the environment after
    the removal needs (judged like an install), unless overridden."""
    from dtkguard.guard.verdict import judge, vendor_removals
    from dtkguard.guard.veto_text import render, render_removal

    plan = front.removal_plan()
    if not plan.ok:
        say(plan.stderr)
        return front.finish(plan.returncode)
    front.check_plan(plan)
    vendor = vendor_removals(plan.remove, front.policy)
    if vendor and not front.reason:
        say(render_removal(vendor, front.policy, front.command, front.tool))
        return front.finish(1)
    before = front.before()
    # the env after the removals, judged like an install: `vendor-deps-broken` ...
    verdict = judge(before, plan, front.policy, front.interp.purelib)
    if not verdict.blocked and not vendor:
        code = _allowed(front, front.judge_files(plan, before))
        if code is not None:
            return code
    if verdict.blocked and not front.reason:
        say(render(verdict, front.policy, front.command, [], False, front.tool))
        return front.finish(1)
    allowed = [f"remove {v}" for v in vendor] + [f"{f.rule}: {f.message}" for f in verdict.blocking]
    if allowed:
        record_override(front, allowed)
    touches = [canonical(r) for r in plan.remove]
    return real(front, front.real_args(pins=False), None, touches)
