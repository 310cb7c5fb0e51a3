"""`dtkguard check`: does the target still hold the vendor builds its policy names?"""

from __future__ import annotations

from dtkguard.commands.common import (
    add_allow_empty_option,
    add_policy_option,
    add_report_options,
    add_stack_options,
    add_target_options,
    fail_on,
    stack_request,
    target_spec,
)
from dtkguard.env.open import TargetSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from dtkguard.audit.request import Request
    from dtkguard.findings import Severity


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    parser = sub.add_parser(
        name,
        help="check an environment against the policy",
        description="Does the target still hold the vendor builds its policy names, and nothing "
        "the policy denies? The build gate of Dockerfiles and CI: exit 1 on findings at or above "
        "--fail-on.",
    )
    add_target_options(parser)
    parser.add_argument(
        "--all-guarded",
        action="store_true",
        help="check every environment the guard's store knows as guarded (one report each)",
    )
    add_policy_option(parser)
    parser.add_argument("--lock", metavar="L", help="also report drift against a PEP 751 lock")
    add_allow_empty_option(parser)
    add_stack_options(parser)
    add_report_options(parser)
    parser.set_defaults(run=run)


#: the formats people read: they say first which target was judged, and why that one
HUMAN_FORMATS = ("table", "markdown")


def chosen_target(args: argparse.Namespace) -> tuple[TargetSpec, str]:
    """The target the options name, else the one dtkpip would act on (the active env, else
    the one guarded env; `InputError` naming both ways when neither is there), and why."""
    spec = target_spec(args)
    given = next((f"--{k.removesuffix('s')}" for k, v in vars(spec).items() if v), "")
    if given:
        return spec, given
    from dtkguard.env.environment import active_python
    from dtkguard.guard.target import choose_python

    why = "the active environment" if active_python() else "the one guarded environment"
    return TargetSpec(python=choose_python(None, "dtkguard check")), why


def run(args: argparse.Namespace) -> int:
    """The command, with the cycle collector paused: a check's objects are freed by their
    reference counts (what it imports and reads would be traversed some twenty times)."""
    import gc

    from dtkguard.util.exit import restore_collector, skip_teardown

    skip_teardown()  # check writes its report, caches and the store's stat caches closed
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(args)
    finally:
        restore_collector(was_enabled)


def _run(args: argparse.Namespace) -> int:
    import sys

    from dtkguard.audit.check import check
    from dtkguard.audit.request import Request
    from dtkguard.report import emit

    threshold = fail_on(args)
    if args.all_guarded:
        return _all_guarded(args, Request(lock=args.lock, **stack_request(args)), threshold)
    spec, why = chosen_target(args)
    request = stack_request(args)
    request["target"] = spec
    report = check(Request(lock=args.lock, **request))
    if args.format in HUMAN_FORMATS:
        from dtkguard.report.table import target_text

        sys.stderr.write(f"dtkguard check: judged {target_text(report.target)} ({why})\n")
    return emit(report, args.format, args.output, fail_on=threshold)


def _all_guarded(args: argparse.Namespace, request: Request, threshold: Severity) -> int:
    """`check --all-guarded`: each guarded env's report in turn, on stdout; exit 1 when any
    fails (a target option or ``-o`` with it is bad input)."""
    import sys

    from dtkguard.audit.check import check_all_guarded
    from dtkguard.env.store import store_root
    from dtkguard.errors import InputError
    from dtkguard.report import emit

    spec = request.target
    if spec.python or spec.paths or spec.root or spec.pid or spec.container:
        raise InputError(
            "--all-guarded checks the store's envs: give no target", field="--all-guarded"
        )
    if args.output and args.output != "-":
        raise InputError("--all-guarded writes one report per env to stdout", field="--output")
    reports = check_all_guarded(request)
    if not reports:
        sys.stderr.write(f"dtkguard check: no guarded environment in the store {store_root()}\n")
    return max((emit(r, args.format, None, fail_on=threshold) for r in reports), default=0)
