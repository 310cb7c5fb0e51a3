"""`dtkguard export constraints|requirements LOCK`: for pip -c, uv, --require-hashes."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    p = sub.add_parser(
        name,
        help="export a lock as constraints or hashed requirements",
        description="Write a PEP 751 lock as pip/uv constraints (-c) or as requirements with "
        "--hash lines (--require-hashes).",
    )
    p.add_argument("kind", choices=("constraints", "requirements"))
    p.add_argument("lock", metavar="LOCK")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dtkguard.lock import export
    from dtkguard.lock.read import read_lock

    lock = read_lock(args.lock)
    text = export.constraints(lock) if args.kind == "constraints" else export.requirements(lock)
    if args.output:
        from dtkguard.util.output import write_output

        write_output(args.output, text)
    else:
        sys.stdout.write(text)
    return 0
