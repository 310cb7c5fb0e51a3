"""`dtkguard policy check|show|explain|init`: write and understand policies."""

from __future__ import annotations

import argparse
import json
import sys

from dtkguard.commands.common import add_policy_option, add_target_options


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    parser = sub.add_parser(
        name,
        help="validate, show and explain policies",
        description="Validate policies, show the effective policy after extends, and explain "
        "which rule governs a package.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    check = actions.add_parser(
        "check",
        help="validate policies (every error as FILE:LINE:COL)",
        description="Validate policy files; every error is one line FILE:LINE:COL field: message.",
    )
    check.add_argument("policies", nargs="*", metavar="POLICY")
    check.set_defaults(run=run_check)
    show = actions.add_parser(
        "show",
        help="the effective policy after extends",
        description="Show the effective policy, after every extends is merged.",
    )
    show.add_argument("policy", nargs="?", metavar="POLICY")
    show.add_argument("--format", "-f", choices=("table", "json"), default="table")
    show.set_defaults(run=run_show)
    explain = actions.add_parser(
        "explain",
        help="which rule governs PACKAGE and why",
        description="Which rule of the policy governs PACKAGE, why, and which builds it allows.",
    )
    explain.add_argument("package")
    add_policy_option(explain)
    explain.set_defaults(run=run_explain)
    init = actions.add_parser(
        "init",
        help="write a policy from an official image (--from-env)",
        description="Write a policy whose [vendor] table is the target's DAS/DTK-labelled "
        "builds, with its DTK release and the bundled deny list. TARGET is an interpreter or "
        "an unpacked image root (or use the target options).",
    )
    init.add_argument("target", nargs="?", metavar="TARGET")
    init.add_argument("--from-env", action="store_true", required=True, help="read TARGET")
    init.add_argument("--name", help="the policy's name (default: site-dtk-<release>)")
    init.add_argument("-o", "--output", metavar="policy.toml", help="default: stdout")
    add_target_options(init)
    init.set_defaults(run=run_init)


def run_check(args: argparse.Namespace) -> int:
    from dtkguard.errors import PolicyError
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known

    status = 0
    for ref in args.policies or [None]:
        try:
            policy = load_policy(ref, known_rule=is_known, cache=False)
        except PolicyError as exc:
            print(f"dtkguard: error: {exc.line()}", file=sys.stderr)
            status = 2
            continue
        print(
            f"ok: {policy.name} ({policy.files[0]}): {len(policy.vendor)} vendor builds, "
            f"{len(policy.deny)} deny rules, {len(policy.exceptions)} exceptions"
        )
    return status


def run_show(args: argparse.Namespace) -> int:
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known

    policy = load_policy(args.policy, known_rule=is_known)
    if args.format == "json":
        print(json.dumps(policy.to_json(), indent=2))
        return 0
    print(f"policy {policy.name}: {policy.description}")
    print(f"  files: {' <- '.join(policy.files)}")
    print(f"  DTK {policy.dtk or '-'}; also allowed: {', '.join(policy.dtk_allow) or '-'}")
    t = policy.target
    print(f"  target: {t.implementation}{t.python} on {', '.join(t.platforms)}")
    print(f"  sources: {', '.join(policy.find_links + policy.indexes) or '(none)'}")
    print(f"  vendor builds ({len(policy.vendor)}):")
    width = max((len(n) for n in policy.vendor), default=0)
    for name, version in policy.vendor.items():
        print(f"    {name:<{width}}  {version}")
    print(f"  denied ({len(policy.deny)}):")
    for rule in policy.deny:
        extra = ", DAS/DTK builds allowed" if rule.vendor_builds_ok else ""
        print(f"    {rule.pattern} [{rule.severity}{extra}]: {rule.reason}")
    fp8 = policy.fp8
    cards = ", ".join(f"{k}={v}" for k, v in fp8.cards.items())
    print(
        f"  fp8: weights={fp8.weights} kv-cache={fp8.kv_cache} serving={fp8.serving}"
        + (f"; per card: {cards}" if cards else "")
    )
    print(f"  drift: extra packages are {policy.drift_extra_severity}")
    print(f"  guard: on-import={policy.on_import}")
    for exc in policy.exceptions:
        print(f"  exception: {exc.rule} {exc.package} until {exc.expires}: {exc.reason}")
    return 0


def run_explain(args: argparse.Namespace) -> int:
    from dtkguard.policy.explain import explain
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known

    print("\n".join(explain(load_policy(args.policy, known_rule=is_known), args.package)))
    return 0


def run_init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from dtkguard.commands.common import open_target
    from dtkguard.env import environment as envs
    from dtkguard.errors import InputError
    from dtkguard.policy.from_env import policy_from_env
    from dtkguard.rules.catalog import is_known

    chosen = [o for o in ("python", "path", "root", "pid", "container") if getattr(args, o)]
    if args.target and chosen:
        raise InputError(f"give TARGET or --{chosen[0]}, not both", field="TARGET")
    if args.target:
        where = args.target
        env = envs.from_root(where) if Path(where).is_dir() else envs.from_python(where)
    else:
        env = open_target(args)
        where = env.target.where()
    text = policy_from_env(env, args.name, where, known_rule=is_known)
    if args.output:
        from dtkguard.util.output import write_output

        write_output(args.output, text)
        from dtkguard.util.console import quiet

        if not quiet():
            print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
