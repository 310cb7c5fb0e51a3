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
import tempfile
from collections.abc import Callable
from pathlib import Path

from dtkguard.decision import canonical
from dtkguard.env import override_log as overrides
from dtkguard.env.interpreter import Interpreter, interpreter
from dtkguard.env.store import overrides_log
from dtkguard.guard.hook_policy import constraints_text, read_policy_json
from dtkguard.guard.pipargs import PipCommand, split_dtkpip, split_pip, uninstall_names
from dtkguard.guard.plan import Plan, dry_run, run_pip
from dtkguard.guard.target import choose_python, say_target
from dtkguard.policy.compiled import CompiledPolicy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.guard.journal import Transaction
    from dtkguard.guard.verdict import Verdict


def load_guard_policy(ref: str | None, interp: Interpreter) -> CompiledPolicy:
    """--policy, else the policy `guard install` recorded (the store's copy: the one in the
    env is only the hook's cache, and whoever writes the env can edit it), else the default
    lookup."""
    from dtkguard.env.store import env_store
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known

    if ref is None:
        es = env_store(interp.prefix)
        installed = read_policy_json(es.policy if es.policy.is_file() else interp.policy_file)
        if installed is not None:
            return installed
    return load_policy(ref, known_rule=is_known)


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
    """Plan with the pins, judge the result, then veto (or record an override) or run pip once."""
    env = dict(os.environ)
    env.pop(overrides.ENV_VAR, None)  # the plan never needs it; the real run gets it if used
    with tempfile.TemporaryDirectory(prefix="dtkpip-") as tmp:
        constraints = Path(tmp) / "dtkguard-constraints.txt"
        constraints.write_text(constraints_text(policy), encoding="utf-8")
        if cmd.has("--dry-run"):
            return run_pip(
                interp.python, [*pip_args, "-c", str(constraints)], env, False
            ).returncode
        plan, failed_with_pins = _plan(interp, cmd, constraints, env)
        if not plan.ok:
            sys.stdout.write(plan.stdout)
            _say(plan.stderr)
            return plan.returncode
        if not plan.install and not failed_with_pins:
            sys.stdout.write(_satisfied(plan))  # nothing to install: nothing to judge
            return 0
        from dtkguard.env.environment import from_python
        from dtkguard.guard.verdict import judge, pip_locator, say_unjudged

        before = from_python(interp.python)
        verdict = judge(before, plan, policy, interp.purelib, pip_locator(Path(tmp)))
        _say(say_unjudged("dtkpip", verdict))
        command = "pip " + shlex.join(pip_args)
        if verdict.blocked and not reason:
            from dtkguard.guard.instead import suggestions
            from dtkguard.guard.veto_text import render

            instead = suggestions(verdict, policy, interp.python, cmd, constraints, env)
            _say(render(verdict, policy, command, instead, failed_with_pins))
            return 1
        if not verdict.blocked and failed_with_pins:
            _say(plan.stderr)  # pins conflict without a rule finding: show pip's own words
            return 1
        real_args = [*pip_args, "-c", str(constraints)]
        if verdict.blocked:
            _record_override(interp, verdict, reason, pip_args, env)
            if failed_with_pins:
                real_args = list(pip_args)
                env["PIP_CONSTRAINT"] = ""  # the site pip.conf pins too; the override lifts them
        if _externally_managed_by_us(interp):
            real_args.append("--break-system-packages")
        touches = [p.key for p in plan.install]
        return _journalled(interp, pip_args, lambda: _run_once(interp, real_args, env), touches)


def _plan(
    interp: Interpreter, cmd: PipCommand, constraints: Path, env: dict[str, str]
) -> tuple[Plan, bool]:
    """pip's plan under the pins, else (on a conflict) without them: (plan, pins failed)."""
    from dtkguard.guard.progress import planning, requested_count

    with planning("dtkpip", "pip", requested_count(cmd)):
        plan = dry_run(interp.python, cmd.global_args, cmd.args, constraints, env)
    if plan.ok:
        return plan, False
    free = dry_run(interp.python, cmd.global_args, cmd.args, None, env) if plan.conflict else None
    if free is None or not free.ok:
        return plan, False
    return free, True


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
    from dtkguard.guard.journal import journalled

    def then(txn: Transaction) -> None:
        follow(interp, txn.changes())

    argv = ["dtkpip", *pip_args]
    return journalled(interp.python, "dtkpip", argv, run, then, touches=touches or None)


def _satisfied(plan: Plan) -> str:
    return plan.satisfied_output()
