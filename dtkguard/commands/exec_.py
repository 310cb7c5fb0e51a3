"""``dtkguard exec -- CMD...``: check a serving command for FP8, then become it (exec)."""

from __future__ import annotations

import argparse
import os
import sys

from dtkguard.commands.common import add_fail_on_option, add_policy_option, fail_on


def register(subparsers: argparse._SubParsersAction, name: str) -> None:
    p = subparsers.add_parser(
        name,
        help="check a serving command's model and flags for FP8, then exec it",
        description="Check what a serving command (vllm serve, sglang, ...) would load and ask "
        "for: FP8/FP4 weights, KV cache and flags on a card that cannot run them. Stop with the "
        "findings (exit 1), or replace this process with the command.",
    )
    add_policy_option(p)
    p.add_argument("--card", help="card series (default: read from hy-smi)")
    add_fail_on_option(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD...")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dtkguard.env.device import read_card_series
    from dtkguard.errors import InputError
    from dtkguard.findings import sort_key
    from dtkguard.models.serving import ServingProcess, parse_command, resolve_model
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.engine import apply_exceptions
    from dtkguard.rules.fp8 import pick_card, serving_findings

    cmd = list(args.cmd)
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        raise InputError("exec needs a command: dtkguard exec [OPTIONS] -- CMD...")
    threshold = fail_on(args)
    policy = load_policy(args.policy)
    card = pick_card([args.card] if args.card else read_card_series(), policy)
    command = parse_command(cmd, os.environ)
    cwd = os.getcwd()
    proc = ServingProcess(
        pid=0, command=command, cwd=cwd, model_path=resolve_model(command.model, cwd, os.environ)
    )
    findings = sorted(
        apply_exceptions(policy, serving_findings(proc, policy, card), housekeeping=False),
        key=sort_key,
    )
    for f in findings:
        print(f"dtkguard: {f.severity.value}: {f.rule}: {f.message}", file=sys.stderr)
        print(f"  evidence: {f.evidence.get('summary', '')}", file=sys.stderr)
        print(f"  fix: {f.remediation}", file=sys.stderr)
    if any(f.severity >= threshold for f in findings):
        print(
            f"dtkguard: veto: not starting {cmd[0]} (findings at or above {threshold.value})",
            file=sys.stderr,
        )
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(cmd[0], cmd)
    except OSError as exc:
        print(f"dtkguard: error: {cmd[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return 0  # not reached
