"""`dtkguard check`: does the target still hold the vendor builds its policy names?"""

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


def register(sub: argparse._SubParsersAction, name: str) -> None:
    parser = sub.add_parser(
        name,
        help="check an environment against the policy",
        description="Does the target still hold the vendor builds its policy names, and nothing "
        "the policy denies? The build gate of Dockerfiles and CI: exit 1 on findings at or above "
        "--fail-on.",
    )
    add_target_options(parser)
    add_policy_option(parser)
    parser.add_argument("--lock", metavar="L", help="also report drift against a PEP 751 lock")
    add_allow_empty_option(parser)
    add_stack_options(parser)
    add_report_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dtkguard.audit.check import check
    from dtkguard.audit.request import Request
    from dtkguard.report import emit

    threshold = fail_on(args)
    report = check(Request(lock=args.lock, **stack_request(args)))
    return emit(report, args.format, args.output, fail_on=threshold)
