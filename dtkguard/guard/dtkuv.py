"""dtkuv: uv with the policy in front of it; uv's front-end of the guarded-install flow
(`dtkguard.guard.flow`), the uv counterpart of dtkpip.

``uv pip install|sync|uninstall``: plan with uv's ``--dry-run`` (the vendor pins as ``-c``,
the target named with ``--python``, which beats uv's config and ``UV_PYTHON``), judge the plan
with dtkpip's verdict, then stop with dtkpip's explanation (exit 1, nothing touched) or run the
real uv once with the same arguments. Every other uv command runs unchanged.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from dtkguard.env import override_log as overrides
from dtkguard.env.interpreter import Interpreter, interpreter
from dtkguard.errors import InputError
from dtkguard.guard import flow
from dtkguard.guard.frontend import Frontend, is_quiet, say
from dtkguard.guard.hook_policy import load_guard_policy
from dtkguard.guard.pipargs import PipCommand, requirement_name, split_dtkpip, split_pip
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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from dtkguard.decision import Problem
    from dtkguard.env.environment import Environment
    from dtkguard.guard.file_effects import EnvFiles
    from dtkguard.guard.run_effects import Watch

#: the ``uv pip`` subcommands that change an environment
_JUDGED = ("install", "sync", "uninstall")
#: uv's words when the environment already satisfies the request (its dry run's "Audited")
_CHECKED = re.compile(r"^Checked \d+ packages? in ")
#: a requirement by name (``torch``, ``torch==2.4.1``, ``rich[jupyter]>=13``), no path or URL
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?\s*([<>=!~][^@/\\]*)?$")
_META = (".dist-info", ".egg-info")


def main(argv: list[str]) -> int:
    opts = split_dtkpip(argv, own=("--shim-of",))
    uv = real_uv()
    top = split_pip(opts.pip_args, UV_VALUE_OPTIONS)
    sub = split_pip(top.args, UV_VALUE_OPTIONS)
    wants_help = top.has("-h", "--help") or (top.command == "help") or not opts.pip_args
    if top.command == "pip" and not wants_help:
        refuse_empty_places(sub, "dtkuv")
    if wants_help:
        from dtkguard.guard.usage import print_own_help

        print_own_help(DTKUV)
    if wants_help or top.command != "pip" or sub.command not in _JUDGED:
        return run_uv(uv, opts.pip_args, capture=False).returncode
    interp = interpreter(_target(opts.python, opts.shim_of, sub))
    say_target("dtkuv", interp.python)
    elsewhere = _destination_outside(sub, interp)
    if elsewhere:
        say(f"dtkuv: {elsewhere} is outside {interp.prefix}: uv runs unchanged\n")
        return run_uv(uv, opts.pip_args, capture=False).returncode
    policy = load_guard_policy(opts.policy, interp)
    reason = (opts.override or os.environ.get(overrides.ENV_VAR, "")).strip()
    front = UvFrontend(uv, interp, policy, reason, opts.pip_args, (top, sub))
    return front.go()


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


def _loud(args: list[str]) -> list[str]:
    """A dry run's arguments without ``-q``: its plan is read from what uv says."""
    return [a for a in args if not is_quiet(a)]


class UvFrontend(Frontend):
    """One judged ``uv pip install|sync|uninstall``: uv's dry runs, the wheels it names, its
    satisfied probe, the watch of what its builds and real run change, its one real run."""

    tool = DTKUV

    def __init__(
        self,
        uv: str,
        interp: Interpreter,
        policy: CompiledPolicy,
        reason: str,
        typed: list[str],
        parsed: tuple[PipCommand, PipCommand],
    ) -> None:
        super().__init__(interp, policy, reason, typed)
        top, sub = parsed
        self.uv, self.cmd = uv, sub
        python = [] if sub.option_values("-p", "--python") else ["--python", interp.python]
        #: ``[uv globals] pip [pip globals]``
        self.head = [*top.global_args, "pip", *sub.global_args]
        #: the user's command line with the target named: ``[globals] pip CMD --python PY ...``
        system = self.system_args()  # uv checks PEP 668 on every run, dry runs too
        self.args = [*self.head, str(sub.command), *python, *system, *sub.args]
        #: the environment before the change, its file facts, and the hook's build journal of it
        self.before_env: Environment | None = None
        self.files: EnvFiles | None = None
        self.watch: Watch | None = None
        #: `locate`'s answers: the file judgement, the binaries' and `unjudged` ask each
        self.located: dict[tuple[str, str, str], list[Path] | None] = {}
        #: a dry run's build may have changed vendor files not compared yet (`finish`)
        self.deferred = False
        # uv's dry run takes an empty ``.lock`` in the env it plans for, or the --target/--prefix
        # folder (from the command line or, for a refusal, from uv's config: site-packages)
        dests = sub.option_values("-t", "--target", "--prefix")
        roots = [interp.prefix, interp.purelib, *map(Path, dests)]
        self.new_locks = [r / ".lock" for r in roots if not (r / ".lock").exists()]

    def go(self) -> int:
        if self.cmd.command != "uninstall":
            return flow.install(self)
        if self.cmd.has("--dry-run"):  # changes nothing: no transaction
            return self.pass_dry_run()
        return flow.uninstall(self)

    def pins(self) -> list[str]:
        return [] if self.cmd.command == "uninstall" else ["-c", str(self.constraints)]

    def pass_dry_run(self) -> int:
        return run_uv(self.uv, [*self.args, *self.pins()], self.env, capture=False).returncode

    def shortcut(self) -> int | None:
        """Satisfied already: nothing runs, nothing is watched."""
        return self.finish(0) if self.satisfied(self.pins()) else None

    def watched(self, rest: Callable[[], int]) -> int:
        """``rest`` with the watch of what uv's builds and runs change: a refusal puts it
        back (`dtkguard.guard.run_effects`)."""
        from dtkguard.guard.run_effects import Refused  # loads the pip hook: not before

        try:
            self.start_watch()
            return rest()
        except Refused as exc:
            return flow.refuse(self, exc.problems, self.put_back())
        except BaseException:
            self.finish(1)  # a crash too: what a dry run's build changed goes back
            raise

    def satisfied(self, pins: list[str]) -> bool:
        """The environment already holds what ``uv pip install`` asks for: uv's dry run with
        ``--no-build`` (which runs no code: builds are refused) took uv's satisfied path
        (``Checked N packages``, no resolution), whose check reads installed metadata only
        and is the same with builds allowed. Then nothing runs, so nothing is watched; uv's
        words are said. False (plan and watch as usual) when it did anything else."""
        if self.cmd.command != "install" or self.cmd.has("--no-build") or not self.installed():
            return False
        args = _loud([*self.args, "--dry-run", "--no-build", *pins])
        probe = uv_dry_run(self.uv, args, self.env, set())
        lines = probe.stderr.splitlines()
        audited = any(_CHECKED.match(line) for line in lines)
        if not probe.ok or probe.install or probe.remove or not audited:
            return False
        if any(line.startswith("Resolved ") for line in lines):
            return False
        self.check_plan(probe)
        self.say_satisfied(probe)
        return True

    def installed(self) -> bool:
        """Every requirement named on the command line is installed (by name; a path, URL
        or ``-r`` file counts as maybe): else uv cannot be satisfied and is not asked."""
        names = set()
        for site in {self.interp.purelib, self.interp.platlib or self.interp.purelib}:
            with contextlib.suppress(OSError):
                names |= {dist_key(e) for e in os.listdir(site) if e.endswith(_META)}
        plain = [a for a in self.cmd.positionals() if _PLAIN.match(a)]
        return all(requirement_name(a) in names for a in plain)

    def start_watch(self) -> None:
        """The environment as it is before uv's first run, and the hook's build journal of
        what uv's builds and install must not change (`dtkguard.guard.run_effects`)."""
        from dtkguard.env.environment import from_python
        from dtkguard.guard.file_effects import EnvFiles
        from dtkguard.guard.run_effects import Watch

        self.before_env = from_python(self.interp.python)
        self.files = EnvFiles(self.interp, self.before_env, self.policy.to_json())
        self.watch = Watch(self.interp, self.files.policy, self.files)

    def before(self) -> Environment:
        return self.before_env if self.before_env is not None else super().before()

    def put_back(self) -> str:
        """Put back what uv changed of the watched files; said in one sentence ("" if none)."""
        from dtkguard.guard.run_effects import put_back_said

        self.deferred = False
        return put_back_said(self.watch) if self.watch is not None else ""

    def dry(self, args: list[str], requested: set[str], env: dict[str, str] | None = None) -> Plan:
        """uv's dry run, then what code it ran (an sdist's build) changed: `Refused`, or with
        an override put back and recorded."""
        from dtkguard.guard.run_effects import Refused

        env = self.env if env is None else env
        plan = uv_dry_run(self.uv, _loud(args), env, requested, meanwhile=_import_ahead)
        if self.watch is not None:
            try:  # the vendor files are compared once, after the real run or before refusing
                self.watch.after_dry_run(quick=not self.reason)
                self.deferred = not self.reason
            except Refused as exc:
                if not self.reason:
                    raise
                said = self.put_back()
                flow.record_override(self, [f"{p.rule}: {p.message}; {said}" for p in exc.problems])
        return plan

    def requested(self) -> set[str]:
        if self.cmd.command == "sync":
            return set()  # sync names the whole environment: no one package was asked for
        return {requirement_name(a) for a in self.cmd.positionals()}

    def requested_count(self) -> int:
        from dtkguard.guard.progress import requested_count

        files = self.cmd.positionals() if self.cmd.command == "sync" else None
        return requested_count(self.cmd, files)

    def plan(self, pins: bool) -> Plan:
        if pins:
            return self.dry([*self.args, "--dry-run", *self.pins()], self.requested())
        return self.dry([*self.args, "--dry-run"], self.requested(), self.unpinned_env())

    def unpinned_env(self) -> dict[str, str]:
        """The env's uv shim names its ``uv.toml`` (``UV_CONFIG_FILE``), whose
        ``constraint-dependencies`` hold the vendor pins: a copy without them, beside the
        constraints file, for this run."""
        config = self.env.get("UV_CONFIG_FILE")
        if not config:
            return self.env
        from dtkguard.guard.layers import without_vendor_pins

        copy = self.constraints.parent / "uv-without-vendor-pins.toml"
        if not copy.exists():
            copy.write_text(without_vendor_pins(Path(config), self.policy), encoding="utf-8")
        return {**self.env, "UV_CONFIG_FILE": str(copy)}

    def removal_plan(self) -> Plan:
        return uv_dry_run(self.uv, _loud([*self.args, "--dry-run"]), self.env, set())

    def probe(self, args: list[str]) -> Plan:
        cmd = [*self.head, "install", "--python", self.interp.python, *self.system_args()]
        cmd.append("--dry-run")
        return self.dry([*cmd, *args, *self.pins()], self.requested())

    def say_satisfied(self, plan: Plan) -> None:
        if not self.quiet:
            say(quiet_output(plan))

    def real_args(self, pins: bool) -> list[str]:
        return [*self.args, *(self.pins() if pins else ())]

    def unjudged(self, plan: Plan) -> list[Problem]:
        """A ``--target``/``--prefix`` inside the environment runs no journal transaction, so
        what uv's real run writes there could not be rolled back if judged afterwards: a wheel
        taken from an index (or built) is refused there; local wheels were judged before."""
        from dtkguard.decision import Problem

        dests = self.cmd.option_values("-t", "--target", "--prefix")
        remote = [p for p in plan.install if self.locate(p) is None] if dests else []
        if not remote:
            return []
        msg = (
            f"uv would write {remote[0].name} {remote[0].version} from an index or a build into "
            f"{dests[-1]}, inside the guarded environment, where its files cannot be judged "
            "before uv writes them nor rolled back after (no transaction runs for --target or "
            "--prefix); dtkpip judges such files inside pip"
        )
        return [Problem("file-conflict", "critical", remote[0].key, msg)]

    def locate(self, planned: Planned) -> list[Path] | None:
        """The wheels of a planned dist uv would install: its direct URL or path, else the
        wheels of that name and version given on the command line or in its find-links
        folders; None when none is local (from an index: judged in the real run, `Watch`)."""
        key = (planned.name, planned.version, planned.url)
        if key not in self.located:
            self.located[key] = self._locate(planned)
        return self.located[key]

    def _locate(self, planned: Planned) -> list[Path] | None:
        from dtkguard.resolve.binaries import fetch_wheel, local_wheels

        if planned.url.endswith(".whl") and not planned.url.startswith(("http:", "https:")):
            try:
                return [fetch_wheel(planned.url, Path())]
            except InputError:
                return None
        folders = [v for v in self.cmd.option_values("-f", "--find-links") if "://" not in v]
        paths = [a for a in self.cmd.positionals() if a.endswith(".whl")]
        found = local_wheels(planned.name, planned.version, folders, paths)
        return found or None

    def judge_files(self, plan: Plan, before: Environment) -> list[Problem]:
        """The files the plan writes and deletes, judged as the pip hook judges pip's
        (`dtkguard.guard.file_effects`)."""
        from dtkguard.guard.file_effects import judge_plan

        # the wheels uv takes from an index are judged by what uv's real run writes
        problems, _ = judge_plan(
            self.interp, before, self.policy.to_json(), plan, self.locate, facts=self.files
        )
        return problems

    def check_plan(self, plan: Plan) -> None:
        """uv must have planned for the interpreter dtkuv judges (fail closed otherwise)."""
        if into_folder(plan) and not self.cmd.option_values("-t", "--target", "--prefix"):
            self.finish(2)
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
            self.finish(2)
            raise InputError(
                f"uv planned for {named}, not for {self.interp.prefix}: nothing was changed",
                field="--python",
            )

    def finish(self, code: int) -> int:
        """Leave the environment as it was: uv's dry run takes an empty ``.lock`` in it, and
        what a dry run's build changed of the vendor files is put back and refused."""
        if self.deferred and self.watch is not None:
            self.deferred = False
            moved, added = self.watch.changed()
            if moved or added:
                from dtkguard.guard.run_effects import built_problem

                return flow.refuse(self, [built_problem(moved + added)], self.put_back())
        for lock in self.new_locks:
            try:
                if lock.stat().st_size == 0:
                    lock.unlink()
            except OSError:
                pass
        return code

    def starting(self) -> None:
        self.deferred = False  # `Watch.judge_run` compares everything, `put_back` too

    def run(self, args: list[str], plan: Plan | None) -> int:
        """Run the real uv once. What it wrote is judged inside the transaction
        (`Watch.judge_run`): a refusal rolls it back and puts the watched files back."""
        from dtkguard.guard.run_effects import Refused

        ahead = self._ahead(plan)
        code = run_uv(self.uv, args, self.env, capture=False, meanwhile=ahead).returncode
        if code == 0 and plan is not None and self.watch is not None:
            problems = self.watch.judge_run(plan)
            if problems and not self.reason:
                raise Refused(problems)
            if problems:
                flow.record_override(self, [f"{p.rule}: {p.message}" for p in problems])
        return code

    def _ahead(self, plan: Plan | None) -> Callable[[], object] | None:
        """What the baseline's follow reads first, read while uv's real run goes on (on a
        second core: the bytes of the vendor builds' line and the search of it)."""
        if plan is None:
            return None
        from dtkguard.guard.baseline import prepare_follow

        return lambda: prepare_follow(self.interp, plan.touches)

    def after_run(self, code: int) -> int:
        if code != 0:  # rolled back: what its builds changed of the watched files too
            self.put_back()
            return self.finish(code)
        return code


#: what judging a plan and running it in the journal import (`flow._planned`): imported while
#: uv's dry run plans, on a second core
_AFTER_THE_PLAN = (
    "dtkguard.guard.verdict",
    "dtkguard.resolve.binaries",
    "dtkguard.rules.engine",
    "dtkguard.journal.transaction",
    "dtkguard.guard.baseline",
)


def _import_ahead() -> None:
    import importlib

    for name in _AFTER_THE_PLAN:
        importlib.import_module(name)
