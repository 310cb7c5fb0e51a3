"""`dtkguard doctor`: one screen that says whether this DCU environment can be trusted."""

from __future__ import annotations

import argparse

from dtkguard.commands.common import (
    add_allow_empty_option,
    add_policy_option,
    add_report_options,
    add_stack_options,
    add_target_options,
    fail_on,
    stack_request,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    parser = sub.add_parser(
        name,
        help="verify the environment: cards, driver, DTK, torch build, vendor builds, FP8",
        description="Verify a DCU environment the way the DTK guides ask before trusting "
        "torch: every card and its driver, the DTK release and HIP, the torch build, the "
        "vendor builds and their DTK, FP8 capability, and every problem with its fix. "
        "Runs nothing of the target; hy-smi only on the host (or --hy-smi-output FILE).",
    )
    add_target_options(parser)
    add_policy_option(parser)
    add_allow_empty_option(parser)
    add_stack_options(parser)
    add_report_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dtkguard.audit.doctor import doctor
    from dtkguard.audit.request import Request
    from dtkguard.report import emit

    threshold = fail_on(args)
    report = doctor(Request(**stack_request(args)))
    renderer: Callable[..., str] | None = None
    if args.format == "table":
        from dtkguard.report.doctor_screen import render as renderer
    return emit(report, args.format, args.output, fail_on=threshold, renderer=renderer)
