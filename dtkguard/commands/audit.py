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
    open_target,
    require_dists,
)


def register(sub: argparse._SubParsersAction, name: str) -> None:
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
    from dtkguard.errors import InputError
    from dtkguard.policy.load import load_policy
    from dtkguard.report import emit
    from dtkguard.rules.catalog import is_known

    threshold = fail_on(args)
    if args.workers is not None and args.workers < 1:
        raise InputError("must be at least 1", field="--workers")
    env = open_target(args)  # first: a target that cannot be read is exit 3 whatever else
    require_dists(env, args)
    policy = load_policy(args.policy, known_rule=is_known)
    lock = None
    if args.lock:
        from dtkguard.lock.read import read_lock

        lock = read_lock(args.lock)
    request = AuditRequest(
        lock=lock,
        verify_files=args.verify_files,
        workers=args.workers,
        models=list(args.models),
        processes=args.processes,
        hy_smi_output=args.hy_smi_output,
        expect_devices=args.expect_devices,
        inventory=args.format == "cyclonedx",
        allow_empty=args.allow_empty,
    )
    report = audit(env, policy, request)
    return emit(report, args.format, args.output, fail_on=threshold)
