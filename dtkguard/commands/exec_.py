"""``dtkguard exec -- CMD...``: check a serving command for FP8, then become it (exec)."""

from __future__ import annotations

import argparse
import os
import sys

from dtkguard.commands.common import add_fail_on_option, add_policy_option, fail_on


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
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


def _say(line: str) -> None:
    print(f"dtkguard: {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from dtkguard.audit.serving import ServingRequest, check_serving
    from dtkguard.errors import InputError

    cmd = list(args.cmd)
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        raise InputError("exec needs a command: dtkguard exec [OPTIONS] -- CMD...")
    threshold = fail_on(args)
    request = ServingRequest(cmd, os.environ, os.getcwd(), policy=args.policy, card=args.card)
    checked = check_serving(request)
    for line in checked.problems:
        _say(f"warning: {line}")
    for line in checked.notes:
        _say(f"note: {line}")
    for f in checked.findings:
        _say(f"{f.severity.value}: {f.rule}: {f.message}")
        print(f"  evidence: {f.evidence.get('summary', '')}", file=sys.stderr)
        print(f"  fix: {f.remediation}", file=sys.stderr)
    if checked.unresolved is not None:
        _say(
            f"{'error' if checked.denied_unresolved else 'warning'}: model not checked for FP8: "
            f"{checked.unresolved} "
            f'(policy [fp8] unresolved-model = "{checked.unresolved_action}")'
        )
    why = checked.veto(threshold)
    if why is not None:
        _say(f"veto: not starting {cmd[0]} ({why})")
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(cmd[0], cmd)
    except OSError as exc:
        _say(f"error: {cmd[0]}: {exc.strerror or exc}")
        return 127
    return 0  # not reached
