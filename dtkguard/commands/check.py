"""`dtkguard check`: does the target still hold the vendor builds its policy names?"""

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
    stack_inputs,
)


def register(sub: argparse._SubParsersAction, name: str) -> None:
    parser = sub.add_parser(
        name,
        help="check an environment against the policy",
        description="Does the target still hold the vendor builds its policy names, and nothing "
        "the policy denies? The build gate of Dockerfiles and CI: exit 1 on findings at or above "
        "--fail-on.",
    )
    add_target_options(parser)
    add_policy_option(parser)
    parser.add_argument("--lock", metavar="L", help="also report drift against a PEP 751 lock")
    add_allow_empty_option(parser)
    add_stack_options(parser)
    add_report_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dtkguard.policy.load import load_policy
    from dtkguard.report import Report, emit
    from dtkguard.rules.catalog import checked_by, is_known
    from dtkguard.rules.context import CheckContext
    from dtkguard.rules.engine import ENVIRONMENT_CHECKS, run_checks

    threshold = fail_on(args)
    policy = load_policy(args.policy, known_rule=is_known)
    lock = None
    if getattr(args, "lock", None):
        from dtkguard.lock.read import read_lock

        lock = read_lock(args.lock)
    env = open_target(args)
    require_dists(env, args)
    families = ENVIRONMENT_CHECKS + ("stack",) + (("drift",) if lock else ())
    extra = {"lock": lock, **stack_inputs(args, env, run_hy_smi=False)}
    timings: dict[str, float] = {}
    findings = run_checks(CheckContext(env, policy, extra=extra), families, timings=timings)
    report = Report(
        findings,
        target=env.target.to_json(),
        policy=policy.name,
        command="check",
        warnings=env.warnings,
        rules=checked_by(families),
        facts={"dists": len(env.dists), "sites": [env.root.inner(s) for s in env.sites]},
        timings=timings,
    )
    return emit(report, args.format, args.output, fail_on=threshold)
