"""`dtkguard restore`: put an environment back to its baseline (or a PEP 751 lock).

Prints the plan first (what goes, what comes back, from where, checked how), then does it with
the environment's own pip inside one journalled transaction (rolled back if a step fails) and
ends with a check. Vendor wheels come from the vault (`guard install --vault`), the policy's
vendor sources and --vendor-find-links/--vendor-index-url, then the lock's URLs and paths; each
is hash-checked against the baseline or the lock before it is installed.
Exit 0 the environment matches again, 1 something could not be restored (and why), 2 bad
input, 3 the target cannot be read.
"""

from __future__ import annotations

import argparse

from dtkguard.commands.common import add_policy_option, add_python_target, add_yes_option


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    parser = sub.add_parser(
        name,
        help="bring an environment back to its baseline or a lock",
        description="Put an environment back to its baseline (recorded by guard install) or to a "
        "PEP 751 "
        "lock: prints the plan first (what goes, what comes back, from where, checked how), "
        "then does it with the environment's own pip, hash-checked wheels from the vault or the "
        "vendor sources, and ends with a check. Exit 0 matched again, 1 something could not be "
        "restored, 2 bad input, 3 the target cannot be read.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_python_target(parser)
    parser.add_argument(
        "--to",
        default="baseline",
        metavar="baseline|guard-install|LOCK",
        help="the baseline (default: as `guard install` recorded it, moved forward by every "
        "approved dtkpip/dtkuv change), guard-install (as recorded, removing what came after), "
        "or a pylock.toml",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    add_yes_option(parser)
    parser.add_argument(
        "--vendor-find-links",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder or URL of vendor wheels (repeatable)",
    )
    parser.add_argument(
        "--vendor-index-url",
        action="append",
        default=[],
        metavar="URL",
        help="an index of vendor wheels (repeatable)",
    )
    add_policy_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from dtkguard.commands.common import target_python
    from dtkguard.env.interpreter import interpreter
    from dtkguard.guard.hook_policy import load_guard_policy
    from dtkguard.recover.guard_repair import recreate
    from dtkguard.recover.restore import restore
    from dtkguard.recover.wanted import GUARD_INSTALL, baseline_wanted, lock_wanted

    given = args.target or args.python
    if given and not args.dry_run:
        for line in recreate(given):  # a wiped venv the store knows: created again first
            print(f"dtkguard restore: {line}")
    python = target_python(args)
    interp = interpreter(python)
    policy = load_guard_policy(args.policy, interp)
    to = args.to
    if to in ("baseline", GUARD_INSTALL):
        wanted = baseline_wanted(interp.prefix, at_install=to == GUARD_INSTALL)
    else:
        wanted = lock_wanted(to, policy, python)
    return restore(
        python,
        wanted,
        policy,
        find_links=list(args.vendor_find_links),
        indexes=list(args.vendor_index_url),
        dry_run=args.dry_run,
        yes=args.yes,
        argv=["dtkguard", *sys.argv[1:]] if sys.argv[1:2] == ["restore"] else ["dtkguard restore"],
    )
