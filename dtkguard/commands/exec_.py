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


def _say(line: str) -> None:
    print(f"dtkguard: {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from dtkguard.env.device import read_card_series
    from dtkguard.errors import InputError
    from dtkguard.findings import sort_key
    from dtkguard.modelscan.scan import scan
    from dtkguard.modelscan.serving import ServingProcess, parse_command, resolve_model, unresolved
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known
    from dtkguard.rules.engine import apply_exceptions
    from dtkguard.rules.fp8 import pick_card, problem_lines, serving_findings

    cmd = list(args.cmd)
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        raise InputError("exec needs a command: dtkguard exec [OPTIONS] -- CMD...")
    threshold = fail_on(args)
    policy = load_policy(args.policy, known_rule=is_known)
    card = pick_card([args.card] if args.card else read_card_series(), policy)
    command = parse_command(cmd, os.environ)
    cwd = os.getcwd()
    model_path = resolve_model(command.model, cwd, os.environ)
    models = scan([model_path]) if model_path else []
    for line in problem_lines(models):
        _say(f"warning: {line}")
    reason = unresolved(command, model_path)
    if reason is None and model_path and not any(m.weight_files or m.config.source for m in models):
        reason = f"{model_path}: no weight file and no quantisation config could be read"
    proc = ServingProcess(pid=0, command=command, cwd=cwd, model_path=model_path)
    findings = sorted(
        apply_exceptions(policy, serving_findings(proc, policy, card, models), housekeeping=False),
        key=sort_key,
    )
    for f in findings:
        _say(f"{f.severity.value}: {f.rule}: {f.message}")
        print(f"  evidence: {f.evidence.get('summary', '')}", file=sys.stderr)
        print(f"  fix: {f.remediation}", file=sys.stderr)
    deny = reason is not None and policy.fp8.unresolved_model == "deny"
    if reason is not None:
        _say(
            f"{'error' if deny else 'warning'}: model not checked for FP8: {reason} "
            f'(policy [fp8] unresolved-model = "{policy.fp8.unresolved_model}")'
        )
    if deny or any(f.severity >= threshold for f in findings):
        why = f"findings at or above {threshold.value}"
        if deny:
            why = "its model could not be checked"
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
