"""`dtkguard report merge`: one fleet view of many per-node json reports.

Exit codes: 0 every node passed; 1 a node failed, or a report is missing, truncated, unreadable or
of an older schema version; 2 bad arguments (e.g. an unreadable --nodes file).
"""

from __future__ import annotations

import argparse
import sys

from dtkguard.errors import InputError
from dtkguard.findings import Severity


def register(sub: argparse._SubParsersAction, name: str) -> None:
    parser = sub.add_parser(
        name,
        help="work with json reports (merge a fleet)",
        description="Work with the json reports of check and audit.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    merge = actions.add_parser(
        "merge",
        help="merge per-node json reports into one fleet view",
        description="Merge per-node json reports into one fleet view (markdown, html or json). "
        "Exit 0 every node passed; 1 a node failed, or a report is missing, truncated, "
        "unreadable or of an older schema; 2 bad arguments.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    merge.add_argument(
        "reports", nargs="+", metavar="REPORT", help="json reports (a directory: its *.json)"
    )
    merge.add_argument(
        "--format", "-f", choices=("markdown", "html", "json"), default="markdown",
        help="output format (default: markdown)",
    )  # fmt: skip
    merge.add_argument("-o", "--output", metavar="FILE", help="write the fleet view to FILE")
    merge.add_argument(
        "--fail-on",
        metavar="SEV",
        help="re-judge every node at SEV (critical|high|medium|low|info; default: each "
        "report's own verdict)",
    )
    expect = merge.add_mutually_exclusive_group()
    expect.add_argument(
        "--expect-nodes", type=int, metavar="N", help="N reports are expected; fewer is a failure"
    )
    expect.add_argument(
        "--nodes", metavar="FILE", help="node names, one a line: each must have a report"
    )
    merge.add_argument("--top", type=int, default=20, help="most common findings shown (20)")
    merge.set_defaults(run=run_merge)


def _read_names(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(reason, file=path, field="--nodes") from None
    names = [line.split("#", 1)[0].strip() for line in lines]
    return [n for n in names if n]


def run_merge(args: argparse.Namespace) -> int:
    from dtkguard.fleet.merge import merge

    threshold = None
    if args.fail_on:
        try:
            threshold = Severity.parse(args.fail_on)
        except ValueError as exc:
            raise InputError(str(exc), field="--fail-on") from None
    if args.expect_nodes is not None and args.expect_nodes < 0:
        raise InputError("must be 0 or more", field="--expect-nodes")
    names = _read_names(args.nodes) if args.nodes else None
    fleet = merge(
        args.reports,
        fail_on=threshold,
        expect_nodes=args.expect_nodes,
        node_names=names,
        top=args.top,
    )
    if args.format == "html":
        from dtkguard.fleet.html import render_html as render
    elif args.format == "json":
        from dtkguard.fleet.render import render_json as render
    else:
        from dtkguard.fleet.render import render_markdown as render
    text = render(fleet)
    if args.output and args.output != "-":
        from dtkguard.util.atomic import atomic_write_text

        atomic_write_text(args.output, text)
        from dtkguard.fleet.render import headline

        print(f"dtkguard: {headline(fleet)}; wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return fleet.exit_code()
