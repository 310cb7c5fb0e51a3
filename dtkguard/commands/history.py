"""`dtkguard history`: the journalled transactions of an environment, like `conda list --revisions`.

One block per transaction: ``DATE  (rev N)  STATE  COMMAND``, then ``name {old -> new}``,
``+name-version``, ``-name-version`` lines, and the removed files it keeps for `undo`.
"""

from __future__ import annotations

import argparse

from dtkguard.commands.common import add_python_target


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    parser = sub.add_parser(
        name,
        help="list the changes dtkpip, restore and undo made to an environment",
        description="The journalled changes of an environment, like conda list --revisions: one "
        "block per "
        "transaction (date, revision, state, command), the packages it changed, and the "
        "removed files it keeps for undo (--prune KEEP drops the older ones).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_python_target(parser)
    parser.add_argument("--json", action="store_true", help="the transactions as JSON")
    parser.add_argument(
        "--prune",
        type=int,
        metavar="KEEP",
        help="drop the kept files of all but the newest KEEP transactions",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import json

    from dtkguard.commands.common import target_python
    from dtkguard.journal.layout import layout
    from dtkguard.journal.prune import prune
    from dtkguard.journal.transaction import recover
    from dtkguard.journal.txn import transactions
    from dtkguard.recover.history import render

    lay = layout(target_python(args))
    recover(lay)
    if args.prune is not None:
        if args.prune < 0:
            from dtkguard.errors import InputError

            raise InputError("must be 0 or more", field="--prune")
        from dtkguard.recover.vault import human_size

        pruned = prune(lay.journal, args.prune)
        for txn, files, size in pruned:
            print(f"pruned: rev {txn.id} ({txn.time}): freed {files} file(s), {human_size(size)}")
        total = sum(size for _, _, size in pruned)
        print(f"pruned {len(pruned)} transaction(s): freed {human_size(total)}")
    txns = transactions(lay.journal)
    if args.json:
        print(json.dumps([t.to_json() for t in txns], indent=1, sort_keys=True))
    else:
        print(render(txns, lay.journal), end="")
    return 0
