"""`dtkguard doctor`: one screen that says whether this DCU environment can be trusted."""

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
        help="verify the environment: cards, driver, DTK, torch build, vendor builds, FP8",
        description="Verify a DCU environment the way the DTK guides ask before trusting "
        "torch: every card and its driver, the DTK release and HIP, the torch build, the "
        "vendor builds and their DTK, FP8 capability, and every problem with its fix. "
        "Runs nothing of the target; hy-smi only on the host (or --hy-smi-output FILE).",
    )
    add_target_options(parser)
    add_policy_option(parser)
    add_allow_empty_option(parser)
    add_stack_options(parser)
    add_report_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dtkguard.audit.doctor import FAMILIES, doctor_facts
    from dtkguard.policy.load import load_policy
    from dtkguard.report import Report, emit
    from dtkguard.rules.catalog import checked_by, is_known
    from dtkguard.rules.context import CheckContext
    from dtkguard.rules.engine import run_checks

    threshold = fail_on(args)
    env = open_target(args)
    require_dists(env, args)  # a typo'd path is not a healthy environment
    policy = load_policy(args.policy, known_rule=is_known)
    live = env.target.live
    extra = stack_inputs(args, env, run_hy_smi=live)
    extra["expect_devices"] = live or args.expect_devices  # doctor is asked of a DCU target
    timings: dict[str, float] = {}
    findings = run_checks(CheckContext(env, policy, extra=extra), FAMILIES, timings=timings)
    report = Report(
        findings,
        target=env.target.to_json(),
        policy=policy.name,
        command="doctor",
        warnings=env.warnings,
        rules=checked_by(FAMILIES),
        facts={"doctor": doctor_facts(env, policy, extra["stack"])},
        timings=timings,
    )
    renderer = None
    if args.format == "table":
        from dtkguard.report.doctor_screen import render as renderer
    return emit(report, args.format, args.output, fail_on=threshold, renderer=renderer)
