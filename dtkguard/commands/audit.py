"""`dtkguard audit`: drift against the lock, tampered files, device facts, FP8 models and serving.

Runs every check family of `dtkguard.rules.engine.CHECKS` (``drift`` with ``--lock``, ``files``
with ``--verify-files``), adds FP8 findings for ``--models`` and ``--processes``, and reports the
target's identity and device facts with every format (``cyclonedx`` gives an SBOM).
"""

from __future__ import annotations

import argparse
import sys

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
        help="audit an environment: drift, tampered files, device facts, FP8",
        description="Audit a target in depth: drift against a lock, installed files against "
        "their RECORD (--verify-files), the DTK and cards, FP8 models (--models) and FP8 "
        "serving processes (--processes). Every format; cyclonedx gives an SBOM.",
    )
    add_target_options(parser)
    add_policy_option(parser)
    parser.add_argument("--lock", metavar="L", help="a PEP 751 pylock.*.toml to compare with")
    parser.add_argument(
        "--verify-files", action="store_true", help="hash installed files against their RECORD"
    )
    parser.add_argument(
        "--workers", type=int, default=None, metavar="N", help="hashing threads (default: cores)"
    )
    parser.add_argument(
        "--models",
        nargs="+",
        action="extend",
        default=[],
        metavar="DIR",
        help="model folders or files to scan for FP8/FP4",
    )
    parser.add_argument(
        "--processes", action="store_true", help="scan running serving processes for FP8 requests"
    )
    add_allow_empty_option(parser)
    add_stack_options(parser)
    add_report_options(parser)
    parser.set_defaults(run=run)


def identity(env, args: argparse.Namespace) -> dict:
    """The target's identity for every report: kind, pid/container, root, python."""
    import re

    target = dict(env.target)
    target.setdefault("root", str(env.root.path))
    if not target.get("python_version"):
        for site in env.sites:
            if m := re.search(r"/lib/python(\d\.\d+)/(?:site|dist)-packages$", str(site)):
                target["python_version"] = m.group(1)
                break
    return target


def run(args: argparse.Namespace) -> int:
    from dtkguard.audit.facts import device_facts, process_environ
    from dtkguard.errors import InputError
    from dtkguard.policy.load import load_policy
    from dtkguard.report import Report, emit
    from dtkguard.rules.catalog import RULES
    from dtkguard.rules.context import CheckContext
    from dtkguard.rules.engine import CHECKS, run_checks

    threshold = fail_on(args)
    if args.workers is not None and args.workers < 1:
        raise InputError("must be at least 1", field="--workers")
    env = open_target(args)  # first: a target that cannot be read is exit 3 whatever else
    require_dists(env, args)
    policy = load_policy(args.policy)
    lock = None
    if args.lock:
        from dtkguard.lock.read import read_lock

        lock = read_lock(args.lock)
    target = identity(env, args)
    env.target = target
    pid = target.get("pid")
    live = target.get("kind") != "root"
    extra: dict = stack_inputs(args, env, run_hy_smi=live)
    stack = extra["stack"]
    series = [c.series for c in stack.cards or [] if c.series]  # hy-smi already ran, if any
    device = device_facts(env.root, process_environ(pid) if pid else None, live, series)
    device["stack"] = stack.to_json()
    facts = {"dists": len(env.dists), "sites": [env.root.inner(s) for s in env.sites]}
    facts["device"] = extra["device"] = device
    if lock is not None:
        extra["lock"] = lock
        facts["lock"] = {"path": str(lock.path), "packages": len(lock.packages)}
    if args.verify_files:
        from dtkguard.audit.verify import verify

        result = verify(env.dists, env.root, workers=args.workers, progress_stream=sys.stderr)
        extra["verification"] = result
        facts["verification"] = result.summary()
    if args.models or args.processes:
        extra["fp8"], extra["card"] = fp8_inputs(args, policy, facts)
    timings: dict[str, float] = {}
    findings = run_checks(CheckContext(env, policy, extra=extra), tuple(CHECKS), timings=timings)
    rules = [r for r in RULES if not r.startswith("fp")]
    if not lock:
        rules = [r for r in rules if not r.startswith("drift")]
    if not args.verify_files:
        rules = [r for r in rules if not r.startswith(("file", "record"))]
    if args.models or args.processes:
        rules += [r for r in RULES if r.startswith("fp")]
    inventory = []
    if args.format == "cyclonedx":
        from dtkguard.audit.inventory import components

        inventory = components(env.dists)
    report = Report(
        findings,
        target=target,
        policy=policy.name,
        command="audit",
        warnings=env.warnings,
        rules=rules,
        facts=facts,
        inventory=inventory,
        timings=timings,
    )
    return emit(report, args.format, args.output, fail_on=threshold)


def fp8_inputs(args: argparse.Namespace, policy, facts: dict) -> tuple[list, str | None]:
    """The scans of ``--models`` and ``--processes`` and the card that sets their severity."""
    from dtkguard.errors import InputError
    from dtkguard.rules.fp8 import pick_card, problem_lines

    cards = facts["device"].get("cards") or []
    card = pick_card(cards, policy)
    items: list = []
    if args.models:
        import os

        from dtkguard.models.scan import scan, unread_paths

        for path in args.models:
            if not os.path.lexists(path):
                raise InputError("no such file or folder", file=path, field="--models")
        scans = scan(args.models)
        unread = [] if args.allow_empty else unread_paths(args.models, scans)
        if unread and not problem_lines(scans):
            from dtkguard.errors import TargetError

            raise TargetError(
                f"nothing to scan at {unread[0]} (--models): no config, index or weight header "
                "could be read (--allow-empty to pass it)"
            )
        items += scans
        facts["models"] = [
            {"path": s.path, "name": s.name, "tensors": s.tensors, "bytes_read": s.bytes_read}
            for s in scans
        ]
        facts["model_problems"] = problem_lines(scans)
    if args.processes:
        from dtkguard.models.serving import scan_processes

        procs = scan_processes()
        items += procs
        facts["processes"] = [{"pid": p.pid, "engine": p.command.engine} for p in procs]
    return items, card
