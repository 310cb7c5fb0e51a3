"""``dtkguard scan-model PATH...``: FP8/FP4 detection in model folders and files."""

from __future__ import annotations

import argparse
import os
import sys

from dtkguard.commands.common import (
    add_allow_empty_option,
    add_policy_option,
    add_report_options,
    fail_on,
)


def register(subparsers: argparse._SubParsersAction, name: str) -> None:
    p = subparsers.add_parser(
        name,
        help="find FP8/FP4 weights, scales and KV caches in model folders and files",
        description="Find FP8/FP4 weights, scales and KV caches in model folders, Hugging Face "
        "cache repositories and weight files. Reads headers only; never unpickles.",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="model folder, Hugging Face cache repo or snapshot, or weight file",
    )
    add_policy_option(p)
    p.add_argument("--card", metavar="SERIES", help="card series (default: read from hy-smi)")
    add_allow_empty_option(p)
    add_report_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dtkguard.env.device import read_card_series
    from dtkguard.errors import InputError
    from dtkguard.modelscan.bom import model_items
    from dtkguard.modelscan.scan import scan, unread_paths
    from dtkguard.policy.load import load_policy
    from dtkguard.report import Report, emit
    from dtkguard.rules.catalog import is_known
    from dtkguard.rules.engine import apply_exceptions
    from dtkguard.rules.fp8 import RULES, fp8_findings, pick_card, problem_lines

    threshold = fail_on(args)
    for path in args.paths:
        if not os.path.lexists(path):
            raise InputError("no such file or folder", file=path)
    policy = load_policy(args.policy, known_rule=is_known)
    cards = [args.card] if args.card else read_card_series()
    card = pick_card(cards, policy)
    scans = scan(args.paths)
    findings = apply_exceptions(policy, fp8_findings(scans, policy, card), housekeeping=False)
    problems = problem_lines(scans)
    for line in problems:
        print(f"dtkguard: error: {line}", file=sys.stderr)
    if not problems and not args.allow_empty and (unread := unread_paths(args.paths, scans)):
        from dtkguard.errors import TargetError

        raise TargetError(
            f"nothing to scan at {unread[0]}: no config, index or weight header could be read "
            "(a folder of other files, FIFOs or devices; --allow-empty to pass it)"
        )
    facts = {
        "card": card,
        "cards": cards,
        "models": [
            {
                "path": s.path,
                "name": s.name,
                "shards": s.shards,
                "tensors": s.tensors,
                "bytes_read": s.bytes_read,
            }
            for s in scans
        ],
    }
    report = Report(
        findings,
        target={"kind": "models", "paths": list(args.paths)},
        policy=policy.name,
        command="scan-model",
        facts=facts,
        warnings=problems,
        rules=[r.id for r in RULES],
        inventory=model_items(scans) if args.format == "cyclonedx" else [],
    )
    code = emit(report, args.format, args.output, fail_on=threshold)
    return 2 if problems and code == 0 else code
