"""`dtkguard uv ARGS...` (= `dtkuv ARGS...`): uv with the policy in front of it.

dtkuv's own options come first: --python PY (target interpreter), --policy P,
--override REASON (install past the guard; recorded in the environment). Everything after
them is uv's, passed on untouched; `uv pip install|sync|uninstall` are judged first.
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
        "uv with the policy in front of it (same as dtkuv)",
        "uv with the policy in front of it (same as dtkuv): a uv pip install, sync or uninstall "
        "that would clobber or remove a vendor build stops before anything is touched, and says "
        "why and what to use instead. dtkuv's own options come first; everything after them is "
        "uv's.",
        run,
    )


def run(args: argparse.Namespace) -> int:
    import time

    from dtkguard.guard.satisfied import uv_fast

    code = uv_fast(list(args.argv), time.perf_counter())  # already satisfied: no uv run
    if code is not None:
        return code
    from dtkguard.guard.dtkuv import main

    return main(list(args.argv))
