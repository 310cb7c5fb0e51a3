"""``dtkguard scan-model PATH...``: FP8/FP4 detection in model folders and files."""

from __future__ import annotations

import argparse
import os
import sys

FORMATS = ("table", "json", "sarif", "junit", "markdown")


def register(subparsers: argparse._SubParsersAction, name: str) -> None:
    p = subparsers.add_parser(
        name, help="find FP8/FP4 weights, scales and KV caches in model folders and files"
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="model folder, Hugging Face cache repo or snapshot, or weight file",
    )
    p.add_argument("--policy", help="policy name or path")
    p.add_argument("--card", help="card series (default: read from hy-smi)")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--fail-on", default="high", help="lowest severity that fails (default high)")
    p.add_argument("-o", "--output", help="write the report to FILE")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dtkguard.env.device import read_card_series
    from dtkguard.errors import InputError
    from dtkguard.findings import Severity
    from dtkguard.models.scan import scan
    from dtkguard.policy.load import load_policy
    from dtkguard.report import Report, emit
    from dtkguard.rules.fp8 import fp8_findings, pick_card, problem_lines

    try:
        fail_on = Severity.parse(args.fail_on)
    except ValueError as exc:
        raise InputError(str(exc), field="--fail-on") from None
    for path in args.paths:
        if not os.path.lexists(path):
            raise InputError("no such file or folder", file=path)
    policy = load_policy(args.policy)
    cards = [args.card] if args.card else read_card_series()
    card = pick_card(cards, policy)
    scans = scan(args.paths)
    findings = list(fp8_findings(scans, policy, card))
    problems = problem_lines(scans)
    for line in problems:
        print(f"dtkguard: error: {line}", file=sys.stderr)
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
        "problems": problems,
    }
    report = Report(
        findings=findings,
        target={"kind": "models", "paths": list(args.paths)},
        policy=policy.name,
        facts=facts,
    )
    code = emit(report, args.format, args.output, fail_on)
    return 2 if problems and code == 0 else code
