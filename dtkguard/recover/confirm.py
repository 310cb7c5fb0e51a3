"""Ask before destroying: `restore` and `undo` that would remove or downgrade packages the
policy allows ask ``Proceed (y/N)?`` on a terminal; ``-y/--yes`` answers for scripts (as
``pip uninstall`` and conda do); without a terminal and without ``--yes`` they refuse (exit 2).
"""

from __future__ import annotations

import sys

from dtkguard.errors import DtkguardError, InputError


class Declined(DtkguardError):
    """The person answered no: nothing was changed. Exit 1."""

    exit_code = 1


def _words(losses: list[str]) -> str:
    shown = ", ".join(losses[:6]) + (f" and {len(losses) - 6} more" if len(losses) > 6 else "")
    return f"{len(losses)} package(s) the policy allows ({shown})"


def confirm(tool: str, losses: list[str], yes: bool) -> None:
    """Go on, or raise: `InputError` (exit 2) without a terminal, `Declined` (exit 1) on no.
    ``losses``: ``name version`` of what would be removed or downgraded and is allowed."""
    if not losses or yes:
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InputError(
            f"{tool} would remove or downgrade {_words(losses)}; not on a terminal, so "
            "nothing was changed: run it again with --yes to proceed",
            field="--yes",
        )
    sys.stdout.write("Proceed (y/N)? ")
    sys.stdout.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise Declined(f"{tool}: nothing was changed")
