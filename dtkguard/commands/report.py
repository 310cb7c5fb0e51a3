"""`dtkguard report merge`: one fleet view of many per-node json reports; `dtkguard report node`:
the report of one node, from the containers running on it.

Exit codes of merge: 0 every node passed; 1 a node failed, or a report is missing, truncated,
unreadable or of an older schema version; 2 bad arguments (e.g. an unreadable --nodes file).
Exit codes of node: 0 pass (containers without Python do not fail it); 1 a container failed or
could not be read or audited; 2 bad arguments; 3 no readable /proc.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dtkguard.errors import InputError
from dtkguard.findings import Severity


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
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
    _register_node(actions)


def _register_node(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    node = actions.add_parser(
        "node",
        help="audit every container of this node into one json report (Kubernetes)",
        description="Audit every container running on this node (one process per container "
        "root, found through the host's /proc) and write one json report, NODE.json, for "
        "`report merge`. Options after -- are passed to each container's audit. A container "
        "without a Python environment (pause, nginx and Go sidecars) is listed as no-python "
        "and never fails the node; one whose root cannot be read fails it. Exit 0 pass; "
        "1 a container failed or could not be audited; 2 bad arguments; 3 no readable /proc.",
    )
    node.add_argument("--proc", default="/proc", help="the host's /proc (default /proc)")
    node.add_argument(
        "--out", required=True, help="report folder (one NODE.json), or - for stdout only"
    )
    node.add_argument(
        "--node", help="node name (default: $DTKGUARD_NODE or the scheduler's, else the host's)"
    )
    node.add_argument("--command", choices=("audit", "check"), help="default: audit if present")
    node.add_argument(
        "--dtkguard", help="the dtkguard command line that audits (default: this one)"
    )
    node.add_argument("--fail-on", default="high", help="severity that fails (default high)")
    node.add_argument(
        "audit_args", nargs="*", metavar="-- AUDIT-OPTIONS", help="passed to every audit"
    )
    node.set_defaults(run=run_node)


#: a node list of tens of thousands of names is well under this
MAX_NODES_FILE_BYTES = 4 << 20


def _read_names(path: str) -> list[str]:
    from dtkguard.util.safe_read import read_capped, reason
    from dtkguard.util.text import Undecodable, decode_utf8

    try:
        lines = decode_utf8(read_capped(path, MAX_NODES_FILE_BYTES, what="node list")).splitlines()
    except OSError as exc:
        raise InputError(reason(exc), path, field="--nodes") from None
    except Undecodable as exc:
        raise InputError(str(exc), path, exc.line, exc.col, "--nodes") from None
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
        from dtkguard.util.output import write_output

        write_output(args.output, text)
        from dtkguard.fleet.render import headline
        from dtkguard.util.console import note

        note(f"{headline(fleet)}; wrote {args.output}")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return fleet.exit_code()


def _node_name(given: str | None) -> str:
    """``--node``, else the scheduler's name, else the host name; never a path."""
    import socket

    from dtkguard.env.scheduler_node import scheduler_node

    name = given if given is not None else scheduler_node() or socket.gethostname()
    if not name or "/" in name or name in (".", ".."):
        raise InputError(f"not a node name: {name!r}", field="--node")
    return name


def _out_dir(out: str) -> None:
    """``--out`` as a folder, made before anything is audited."""
    try:
        Path(out).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = f"cannot write output: {exc.strerror or exc}"
        raise InputError(why, out, field="--out") from None


def run_node(args: argparse.Namespace) -> int:
    import json

    from dtkguard.errors import TargetError
    from dtkguard.fleet.node import node_report, summary_line
    from dtkguard.util.output import write_output

    proc = Path(args.proc)
    if not (proc / "1").is_dir():
        raise TargetError(f"{proc}: no process 1 (is hostPID set?)")
    node = _node_name(args.node)
    if args.out != "-":
        _out_dir(args.out)
    dtkguard = args.dtkguard.split() if args.dtkguard else [sys.executable, "-m", "dtkguard"]
    data = node_report(proc, node, dtkguard, args.command, args.audit_args, args.fail_on)
    text = json.dumps(data, indent=2, default=str) + "\n"
    failed = 1 if data["verdict"] == "fail" else 0
    if args.out == "-":  # the report alone, so that `kubectl logs` of the pod is the report
        sys.stdout.write(text)
        return failed
    path = Path(args.out) / f"{node}.json"
    write_output(path, text, field="--out")
    real = [f for f in data["findings"] if f["rule"] != "container-skipped"]
    print(
        f"dtkguard node {node}: {data['verdict'].upper()} "
        f"({summary_line(data)}; {len(real)} findings) -> {path}"
    )
    return failed
