"""`dtkguard pip ARGS...` (= `dtkpip ARGS...`): pip with the policy in front of it.

dtkpip's own options come first: --python PY (target interpreter), --policy P,
--override REASON (install past the guard; recorded in the environment). Everything after
them is pip's, passed on untouched.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    from dtkguard.commands.common import add_passthrough

    add_passthrough(
        sub,
        name,
        "pip with the policy in front of it (same as dtkpip)",
        "pip with the policy in front of it (same as dtkpip): an install that would clobber a "
        "vendor build stops before anything is touched, and says why and what to use instead. "
        "dtkpip's own options come first; everything after them is pip's.",
        run,
    )


def run(args: argparse.Namespace) -> int:
    from dtkguard.guard.satisfied import pip_fast

    code = pip_fast(list(args.argv))  # already satisfied: no pip run at all
    if code is not None:
        return code
    from dtkguard.guard.dtkpip import main

    return main(list(args.argv))
