"""``dtkguard scan-model PATH...``: FP8/FP4 detection in model folders and files."""

from __future__ import annotations

import argparse
import sys

from dtkguard.commands.common import (
    add_allow_empty_option,
    add_policy_option,
    add_report_options,
    fail_on,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    from dtkguard.modelscan.reads import help_text

    p = subparsers.add_parser(
        name,
        help="find FP8/FP4 weights, scales and KV caches in model folders and files",
        description="Find FP8/FP4 weights, scales and KV caches in model folders, Hugging Face "
        "cache repositories and weight files. Reads headers only; never unpickles.",
        epilog=help_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    from dtkguard.audit.models import ModelScanRequest, scan_models
    from dtkguard.report import emit

    threshold = fail_on(args)
    request = ModelScanRequest(
        paths=list(args.paths),
        policy=args.policy,
        card=args.card,
        allow_empty=args.allow_empty,
        inventory=args.format == "cyclonedx",
    )
    report = scan_models(request)
    for line in report.warnings:  # files that could not be read
        print(f"dtkguard: error: {line}", file=sys.stderr)
    for model in report.facts.get("models", ()):  # what a verdict without weights rests on
        for note in model["notes"]:
            print(f"dtkguard: note: {note}", file=sys.stderr)
    code = emit(report, args.format, args.output, fail_on=threshold)
    return 2 if report.warnings and code == 0 else code
