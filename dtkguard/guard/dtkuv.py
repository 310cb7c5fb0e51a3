"""dtkuv: uv with the policy in front of it, the uv counterpart of dtkpip.

``uv pip install|sync|uninstall``: plan with uv's ``--dry-run`` (the vendor pins as ``-c``,
the target named with ``--python``, which beats uv's config and ``UV_PYTHON``), judge the plan
with dtkpip's verdict, then stop with dtkpip's explanation (exit 1, nothing touched) or run the
real uv once with the same arguments. Every other uv command runs unchanged.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import sys
from pathlib import Path

from dtkguard.decision import canonical
from dtkguard.env import override_log as overrides
from dtkguard.env.interpreter import Interpreter, interpreter
from dtkguard.env.store import overrides_log
from dtkguard.errors import InputError
from dtkguard.guard.hook_policy import constraints_text, load_guard_policy
from dtkguard.guard.pipargs import (
    PipCommand,
    installs_elsewhere,
    requirement_name,
    split_dtkpip,
    split_pip,
)
from dtkguard.guard.plan import Plan, Planned
from dtkguard.guard.target import choose_python, refuse_empty_places, say_target
from dtkguard.guard.tools import DTKUV
from dtkguard.guard.uvplan import (
    UV_VALUE_OPTIONS,
    environment_of,
    into_folder,
    quiet_output,
    real_uv,
    run_uv,
    uv_dry_run,
)
from dtkguard.journal.owned import dist_key
from dtkguard.policy.compiled import CompiledPolicy
from dtkguard.util.scratch import scratch_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from dtkguard.decision import Problem
    from dtkguard.env.environment import Environment
    from dtkguard.guard.file_effects import EnvFiles
    from dtkguard.guard.run_effects import Watch
    from dtkguard.guard.verdict import Verdict
    from dtkguard.journal.txn import Transaction

#: the ``uv pip`` subcommands that change an environment
_JUDGED = ("install", "sync", "uninstall")
#: uv's words when the environment already satisfies the request (its dry run's "Audited")
_CHECKED = re.compile(r"^Checked \d+ packages? in ")
#: a requirement by name (``torch``, ``torch==2.4.1``, ``rich[jupyter]>=13``), no path or URL
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?\s*([<>=!~][^@/\\]*)?$")
_META = (".dist-info", ".egg-info")


def _say(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def main(argv: list[str]) -> int:
    opts = split_dtkpip(argv, own=("--shim-of",))
    uv = real_uv()
    top = split_pip(opts.pip_args, UV_VALUE_OPTIONS)
    sub = split_pip(top.args, UV_VALUE_OPTIONS)
    wants_help = top.has("-h", "--help") or (top.command == "help") or not opts.pip_args
    if wants_help:
        from dtkguard.guard.usage import print_own_help

        print_own_help(DTKUV)
    if wants_help or top.command != "pip" or sub.command not in _JUDGED:
        return run_uv(uv, opts.pip_args, capture=False).returncode
    interp = interpreter(_target(opts.python, opts.shim_of, sub))
    say_target("dtkuv", interp.python)
    elsewhere = _destination_outside(sub, interp)
    if elsewhere:
        _say(f"dtkuv: {elsewhere} is outside {interp.prefix}: uv runs unchanged\n")
        return run_uv(uv, opts.pip_args, capture=False).returncode
    policy = load_guard_policy(opts.policy, interp)
    reason = (opts.override or os.environ.get(overrides.ENV_VAR, "")).strip()
    return _Run(uv, interp, policy, top, sub, reason).go()


def _target(own: str | None, shim_of: str | None, sub: PipCommand) -> str:
    """The interpreter uv will act on, chosen the way dtkpip chooses, and uv told so."""
    # dtkuv passes --python to uv, which beats UV_PYTHON: it counts only when nothing else names one
    given: Sequence[str | None] = sub.option_values("-p", "--python") or [
        None if own else (os.environ.get("UV_PYTHON") or None)
    ]
    if sub.has("--system") and not (own or given[-1]):
        raise InputError(
            "dtkuv judges the environment uv would change: name it with --python PATH "
            "instead of --system",
            field="--system",
        )
    refuse_empty_places(sub, "dtkuv")
    return choose_python(own, "dtkuv", fallback=shim_of, given=given[-1])


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _destination_outside(sub: PipCommand, interp: Interpreter) -> str | None:
    """``--target``/``--prefix`` naming a folder that is neither in the guarded environment nor
    holds one of its ``sys.path`` entries: uv then only reads and writes that folder. Decided by
    where files land (``--prefix /usr/local`` holds a ``sys.path`` entry of a system Python)."""
    dests = sub.option_values("-t", "--target", "--prefix")
    if not dests:
        return None
    from dtkguard.env.environment import python_sys_path

    entries = [os.path.realpath(p) for p in python_sys_path(interp.python)[0]]
    prefix = os.path.realpath(interp.prefix)
    for dest in dests:
        real = os.path.realpath(dest)
        if not _inside(real, prefix) and not any(_inside(e, real) for e in entries):
            return dest
    return None


class _Run:
    """One judged ``uv pip install|sync|uninstall``."""

    def __init__(
        self,
        uv: str,
        interp: Interpreter,
        policy: CompiledPolicy,
        top: PipCommand,
        sub: PipCommand,
        reason: str,
    ) -> None:
        self.uv, self.interp, self.policy, self.sub, self.reason = uv, interp, policy, sub, reason
        python = [] if sub.option_values("-p", "--python") else ["--python", interp.python]
        #: ``[uv globals] pip [pip globals]``
        self.head = [*top.global_args, "pip", *sub.global_args]
        #: the user's command line with the target named: ``[globals] pip CMD --python PY ...``
        self.args = [*self.head, str(sub.command), *python, *sub.args]
        self.command = shlex.join(["uv", *top.global_args, "pip", *top.args])
        self.env = dict(os.environ)
        #: canonical names the plan installs or removes (the journal snapshots only these)
        self.touches: list[str] | None = None
        #: the environment before the change, its file facts, and the hook's build journal of it
        self.before: Environment | None = None
        self.files: EnvFiles | None = None
        self.watch: Watch | None = None
        #: a dry run's build may have changed vendor files not compared yet (`untouched`)
        self.deferred = False
        self.env.pop(overrides.ENV_VAR, None)
        # uv's dry run takes an empty ``.lock`` in the env it plans for, or the --target/--prefix
        # folder (from the command line or, for a refusal, from uv's config: site-packages)
        dests = sub.option_values("-t", "--target", "--prefix")
        roots = [interp.prefix, interp.purelib, *map(Path, dests)]
        self.new_locks = [r / ".lock" for r in roots if not (r / ".lock").exists()]

    def go(self) -> int:
        with scratch_dir("dtkuv-") as tmp:
            constraints = Path(tmp) / "dtkguard-constraints.txt"
            constraints.write_text(constraints_text(self.policy), encoding="utf-8")
            pins = [] if self.sub.command == "uninstall" else ["-c", str(constraints)]
            if self.sub.has("--dry-run"):  # changes nothing: no transaction
                return run_uv(self.uv, [*self.args, *pins], self.env, capture=False).returncode
            if self.sub.command == "uninstall":
                return self._uninstall()
            if self.satisfied(pins):
                return self.untouched(0)
            from dtkguard.guard.run_effects import Refused  # loads the pip hook: not before

            try:
                self.start_watch()
                return self._install(pins)
            except Refused as exc:
                return self.stop(exc.problems, self.put_back())
            except BaseException:
                self.untouched(1)  # a crash too: what a dry run's build changed goes back
                raise

    def satisfied(self, pins: list[str]) -> bool:
        """The environment already holds what ``uv pip install`` asks for: uv's dry run with
        ``--no-build`` (which runs no code: builds are refused) took uv's satisfied path
        (``Checked N packages``, no resolution), whose check reads installed metadata only
        and is the same with builds allowed. Then nothing runs, so nothing is watched; uv's
        words are said. False (plan and watch as usual) when it did anything else."""
        if self.sub.command != "install" or self.sub.has("--no-build") or not self.installed():
            return False
        probe = uv_dry_run(self.uv, [*self.args, "--dry-run", "--no-build", *pins], self.env, set())
        lines = probe.stderr.splitlines()
        audited = any(_CHECKED.match(line) for line in lines)
        if not probe.ok or probe.install or probe.remove or not audited:
            return False
        if any(line.startswith("Resolved ") for line in lines):
            return False
        self.same_environment(probe)
        _say(quiet_output(probe))
        return True

    def installed(self) -> bool:
        """Every requirement named on the command line is installed (by name; a path, URL
        or ``-r`` file counts as maybe): else uv cannot be satisfied and is not asked."""
        names = set()
        for site in {self.interp.purelib, self.interp.platlib or self.interp.purelib}:
            with contextlib.suppress(OSError):
                names |= {dist_key(e) for e in os.listdir(site) if e.endswith(_META)}
        plain = [a for a in self.sub.positionals() if _PLAIN.match(a)]
        return all(requirement_name(a) in names for a in plain)

    def start_watch(self) -> None:
        """The environment as it is before uv's first run, and the hook's build journal of
        what uv's builds and install must not change (`dtkguard.guard.run_effects`)."""
        from dtkguard.env.environment import from_python
        from dtkguard.guard.file_effects import EnvFiles
        from dtkguard.guard.run_effects import Watch

        self.before = from_python(self.interp.python)
        self.files = EnvFiles(self.interp, self.before, self.policy.to_json())
        self.watch = Watch(self.interp, self.files.policy, self.files)

    def put_back(self) -> str:
        """Put back what uv changed of the watched files; said in one sentence ("" if none)."""
        from dtkguard.guard.run_effects import put_back_said

        self.deferred = False
        return put_back_said(self.watch) if self.watch is not None else ""

    def dry(self, args: list[str], requested: set[str]) -> Plan:
        """uv's dry run, then what code it ran (an sdist's build) changed: `Refused`, or with
        an override put back and recorded."""
        from dtkguard.guard.run_effects import Refused

        plan = uv_dry_run(self.uv, args, self.env, requested)
        if self.watch is not None:
            try:  # the vendor files are compared once, after the real run or before refusing
                self.watch.after_dry_run(quick=not self.reason)
                self.deferred = not self.reason
            except Refused as exc:
                if not self.reason:
                    raise
                said = self.put_back()
                self.record([f"{p.rule}: {p.message}; {said}" for p in exc.problems])
        return plan

    def requested(self) -> set[str]:
        if self.sub.command == "sync":
            return set()  # sync names the whole environment: no one package was asked for
        return {requirement_name(a) for a in self.sub.positionals()}

    def plan(self, pins: list[str]) -> Plan:
        return self.dry([*self.args, "--dry-run", *pins], self.requested())

    def _install(self, pins: list[str]) -> int:
        from dtkguard.guard.progress import planning, requested_count

        files = self.sub.positionals() if self.sub.command == "sync" else None
        with planning("dtkuv", "uv", requested_count(self.sub, files)):
            plan = self.plan(pins)
        failed_with_pins = False
        if not plan.ok:
            free = self.plan([]) if plan.conflict else None
            if free is None or not free.ok:
                _say(plan.stderr)
                if plan.conflict:
                    _say(
                        f"dtkuv: stopped `{self.command}`: uv cannot satisfy it while keeping the "
                        f"vendor builds of policy {self.policy.name}; nothing was installed or "
                        "removed. See `dtkguard policy explain torch`.\n"
                    )
                return self.untouched(plan.returncode)
            pinned, plan, failed_with_pins = plan, free, True
        self.same_environment(plan)
        if not plan.install and not plan.remove and not failed_with_pins:
            _say(quiet_output(plan))  # an empty plan changes nothing: nothing to judge
            return self.untouched(0)
        from dtkguard.guard.verdict import judge, say_unjudged

        before = self.before
        assert before is not None
        verdict = judge(before, plan, self.policy, self.interp.purelib, self.locate)
        _say(say_unjudged("dtkuv", verdict))
        if not verdict.blocked:  # a blocked plan gets dtkpip's explanation, files or not
            stopped = self.judge_files(plan, before)
            if stopped is not None:
                return stopped
        if verdict.blocked and not self.reason:
            return self._veto(verdict, pins, failed_with_pins)
        if not verdict.blocked and failed_with_pins:
            _say(pinned.stderr)  # pins conflict without a rule finding: show uv's own words
            return self.untouched(1)
        if verdict.blocked:
            self.record([f"{f.rule}: {f.message}" for f in verdict.blocking])
            if failed_with_pins:
                pins = []  # the override lifts the vendor pins
        elif not plan.install and not plan.remove:
            _say(quiet_output(plan))
            return self.untouched(0)
        unjudged = self.unjudged_destination(plan)
        if unjudged is not None and not self.reason:
            return self.stop([unjudged])
        if unjudged is not None:
            self.record([f"{unjudged.rule}: {unjudged.message}"])
        self.touches = [p.key for p in plan.install] + [canonical(r) for r in plan.remove]
        return self.real([*self.args, *pins], plan)

    def unjudged_destination(self, plan: Plan) -> Problem | None:
        """A ``--target``/``--prefix`` inside the environment runs no journal transaction, so
        what uv's real run writes there could not be rolled back if judged afterwards: a wheel
        taken from an index (or built) is refused there; local wheels were judged before."""
        from dtkguard.decision import Problem

        dests = self.sub.option_values("-t", "--target", "--prefix")
        remote = [p for p in plan.install if self.locate(p) is None] if dests else []
        if not remote:
            return None
        msg = (
            f"uv would write {remote[0].name} {remote[0].version} from an index or a build into "
            f"{dests[-1]}, inside the guarded environment, where its files cannot be judged "
            "before uv writes them nor rolled back after (no transaction runs for --target or "
            "--prefix); dtkpip judges such files inside pip"
        )
        return Problem("file-conflict", "critical", remote[0].key, msg)

    def _veto(self, verdict: Verdict, pins: list[str], failed_with_pins: bool) -> int:
        """Refuse a blocked plan with dtkpip's explanation and judged suggestions."""
        from dtkguard.guard.instead import suggestions
        from dtkguard.guard.veto_text import render

        def probe(args: list[str]) -> Plan:
            cmd = [*self.head, "install", "--python", self.interp.python, "--dry-run"]
            return self.dry([*cmd, *args, *pins], self.requested())

        instead = suggestions(
            verdict, self.policy, self.interp.python, self.sub, Path(), self.env,
            tool=DTKUV, probe=probe,
        )  # fmt: skip
        _say(render(verdict, self.policy, self.command, instead, failed_with_pins, DTKUV))
        return self.untouched(1)

    def locate(self, planned: Planned) -> list[Path] | None:
        """The wheels of a planned dist uv would install: its direct URL or path, else the
        wheels of that name and version given on the command line or in its find-links
        folders; None when none is local (from an index: judged in the real run, `Watch`)."""
        from dtkguard.resolve.binaries import fetch_wheel, local_wheels

        if planned.url.endswith(".whl") and not planned.url.startswith(("http:", "https:")):
            try:
                return [fetch_wheel(planned.url, Path())]
            except InputError:
                return None
        folders = [v for v in self.sub.option_values("-f", "--find-links") if "://" not in v]
        paths = [a for a in self.sub.positionals() if a.endswith(".whl")]
        found = local_wheels(planned.name, planned.version, folders, paths)
        return found or None

    def _uninstall(self) -> int:
        from dtkguard.guard.verdict import vendor_removals
        from dtkguard.guard.veto_text import render_removal

        plan = uv_dry_run(self.uv, [*self.args, "--dry-run"], self.env, set())
        if not plan.ok:
            _say(plan.stderr)
            return self.untouched(plan.returncode)
        self.same_environment(plan)
        vendor = vendor_removals(plan.remove, self.policy)
        if vendor and not self.reason:
            _say(render_removal(vendor, self.policy, self.command, DTKUV))
            return self.untouched(1)
        from dtkguard.env.environment import from_python
        from dtkguard.guard.verdict import judge
        from dtkguard.guard.veto_text import render

        before = from_python(self.interp.python)
        # the env after the removals, judged like an install: `vendor-deps-broken` ...
        verdict = judge(before, plan, self.policy, self.interp.purelib)
        if not verdict.blocked and not vendor:
            stopped = self.judge_files(plan, before)
            if stopped is not None:
                return stopped
        if verdict.blocked and not self.reason:
            _say(render(verdict, self.policy, self.command, [], False, DTKUV))
            return self.untouched(1)
        blocking = [f"{f.rule}: {f.message}" for f in verdict.blocking]
        if vendor or blocking:
            self.record([f"remove {v}" for v in vendor] + blocking)
        self.touches = [canonical(r) for r in plan.remove]
        return self.real(self.args)

    def judge_files(self, plan: Plan, before: Environment) -> int | None:
        """The files the plan writes and deletes, judged as the pip hook judges pip's
        (`dtkguard.guard.file_effects`): the exit code when that stops it, else None."""
        from dtkguard.guard.file_effects import judge_plan

        # the wheels uv takes from an index are judged by what uv's real run writes
        problems, _ = judge_plan(
            self.interp, before, self.policy.to_json(), plan, self.locate, facts=self.files
        )
        if not problems:
            return None
        if self.reason:
            self.record([f"{p.rule}: {p.message}" for p in problems])
            return None
        return self.stop(problems)

    def stop(self, problems: list[Problem], said: str = "") -> int:
        """Refuse with ``problems`` (``said``: what was put back), the environment as it was."""
        lines = "".join(f"  {p.message} [{p.rule}, {p.severity}]\n" for p in problems[:8])
        more = f"  ... and {len(problems) - 8} more\n" if len(problems) > 8 else ""
        said = f" ({said})" if said else ""
        _say(
            f"dtkuv: stopped `{self.command}`: nothing was installed or removed{said}.\n"
            f"{lines}{more}"
            f"dtkguard: this environment is guarded by policy {self.policy.name}; "
            f"`dtkguard policy explain {problems[0].package}` shows the rule. "
            f'Override (recorded): dtkuv --override "reason" {self.command[3:]}\n'
        )
        return self.untouched(1)

    def same_environment(self, plan: Plan) -> None:
        """uv must have planned for the interpreter dtkuv judges (fail closed otherwise)."""
        if into_folder(plan) and not self.sub.option_values("-t", "--target", "--prefix"):
            self.untouched(2)
            raise InputError(
                "uv's configuration sends this to a --target/--prefix folder dtkuv was not told "
                "of: give it on the command line; nothing was changed",
                field="--target",
            )
        named = environment_of(plan)
        if named is None:
            return  # uv names no env for ./.venv of the cwd; --python already pinned it
        where = Path(named) if os.path.isabs(named) else Path.cwd() / named
        if os.path.realpath(where) != os.path.realpath(self.interp.prefix):
            self.untouched(2)
            raise InputError(
                f"uv planned for {named}, not for {self.interp.prefix}: nothing was changed",
                field="--python",
            )

    def record(self, allowed: list[str]) -> None:
        overrides.record(
            overrides_log(self.interp),
            self.reason,
            ["uv", "pip", str(self.sub.command), *self.sub.args],
            allowed,
            "dtkuv",
        )
        # uv runs no pip hook, so no token is handed on: this record is the only one
        self.env[overrides.ENV_VAR] = self.reason
        _say(f"dtkuv: override recorded in {overrides_log(self.interp)}: {self.reason}\n")

    def untouched(self, code: int) -> int:
        """Leave the environment as it was: uv's dry run takes an empty ``.lock`` in it, and
        what a dry run's build changed of the vendor files is put back and refused."""
        if self.deferred and self.watch is not None:
            self.deferred = False
            moved, added = self.watch.changed()
            if moved or added:
                from dtkguard.guard.run_effects import built_problem

                return self.stop([built_problem(moved + added)], self.put_back())
        for lock in self.new_locks:
            try:
                if lock.stat().st_size == 0:
                    lock.unlink()
            except OSError:
                pass
        return code

    def real(self, args: list[str], plan: Plan | None = None) -> int:
        """Run the real uv once: the only step that changes the environment, journalled as one
        transaction (`dtkguard undo` reverts it; a failed run is rolled back), like dtkpip's.
        What it wrote is judged inside the transaction (`Watch.judge_run`): a refusal rolls it
        back and puts the watched files back."""
        from dtkguard.guard.baseline import follow
        from dtkguard.guard.run_effects import Refused
        from dtkguard.journal.transaction import journalled

        def run() -> int:
            code = run_uv(self.uv, args, self.env, capture=False).returncode
            if code == 0 and plan is not None and self.watch is not None:
                problems = self.watch.judge_run(plan)
                if problems and not self.reason:
                    raise Refused(problems)
                if problems:
                    self.record([f"{p.rule}: {p.message}" for p in problems])
            return code

        def then(txn: Transaction) -> None:
            follow(self.interp, txn.changes(), touched=self.touches)

        argv = ["dtkuv", *args]
        self.deferred = False  # `Watch.judge_run` compares everything, `put_back` too
        if installs_elsewhere(argv):  # not the environment's roots: nothing to journal
            code = run()
        else:
            code = journalled(
                str(self.interp.python), "dtkuv", argv, run, then, touches=self.touches or None
            )
        if code != 0:  # rolled back: what its builds changed of the watched files too
            self.put_back()
            return self.untouched(code)
        return code
