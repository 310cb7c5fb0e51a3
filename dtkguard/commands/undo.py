"""`dtkguard undo [N]`: revert the last (or the N-th) journalled transaction.

Packages it added are uninstalled, packages it removed or replaced come back from the files
the journal kept, with pip; the undo is a transaction itself (see `dtkguard history`) and is
rolled back if a step fails. Exit 0 done, 1 it could not be undone (and why), 2 bad input, 3
the target cannot be read.
"""

from __future__ import annotations

import argparse

from dtkguard.commands.common import add_yes_option, target_python


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    parser = sub.add_parser(
        name,
        help="revert the last (or N-th) change dtkpip, restore or undo made",
        description="Revert the last (or the N-th) journalled change of dtkpip, dtkuv, restore or "
        "undo: "
        "what it added is uninstalled, what it removed or replaced comes back from the files "
        "the journal kept. The undo is a transaction itself, rolled back if a step fails. Exit "
        "0 done, 1 it could not be undone (and why), 2 bad input, 3 unreadable target.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("number", nargs="?", type=int, metavar="N", help="the rev to undo")
    parser.add_argument("--python", metavar="PY", help="the interpreter (default: the active env)")
    parser.add_argument(
        "--override",
        metavar="REASON",
        help="let the guard allow what the undo puts back (recorded in the journal)",
    )
    add_yes_option(parser)
    parser.set_defaults(run=run, target=None)


def run(args: argparse.Namespace) -> int:
    import sys

    from dtkguard.recover.undo import undo

    python = target_python(args)
    argv = ["dtkguard", *sys.argv[1:]]
    return undo(python, args.number, argv, reason=args.override or "", yes=args.yes)
