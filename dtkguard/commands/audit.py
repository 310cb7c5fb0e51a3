"""`dtkguard audit`: drift against the lock, tampered files, device facts, FP8 models and serving.

Parses the options into an `AuditRequest` and emits the report of `dtkguard.audit.assemble.audit`
(every check family; ``drift`` with ``--lock``, ``files`` with ``--verify-files``, FP8 with
``--models``/``--processes``; the target's identity and device facts in every format).
"""

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


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    parser = sub.add_parser(
        name,
        help="audit an environment: drift, tampered files, device facts, FP8",
        description="Audit a target in depth: drift against a lock, installed files against "
        "their RECORD (--verify-files), the DTK and cards, FP8 models (--models) and FP8 "
        "serving processes (--processes). Every format; cyclonedx gives an SBOM.",
    )
    add_target_options(parser)
    add_policy_option(parser)
    parser.add_argument("--lock", metavar="L", help="a PEP 751 pylock.*.toml to compare with")
    parser.add_argument(
        "--verify-files", action="store_true", help="hash installed files against their RECORD"
    )
    parser.add_argument(
        "--workers", type=int, default=None, metavar="N", help="hashing threads (default: cores)"
    )
    parser.add_argument(
        "--models",
        nargs="+",
        action="extend",
        default=[],
        metavar="DIR",
        help="model folders or files to scan for FP8/FP4",
    )
    parser.add_argument(
        "--processes", action="store_true", help="scan running serving processes for FP8 requests"
    )
    add_allow_empty_option(parser)
    add_stack_options(parser)
    add_report_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dtkguard.audit.assemble import AuditRequest, audit
    from dtkguard.report import emit

    threshold = fail_on(args)
    request = AuditRequest(
        lock=args.lock,
        verify_files=args.verify_files,
        workers=args.workers,
        models=list(args.models),
        processes=args.processes,
        inventory=args.format == "cyclonedx",
        **stack_request(args),
    )
    return emit(audit(request), args.format, args.output, fail_on=threshold)
