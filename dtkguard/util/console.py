"""The options every command shares for its terminal output: colour and verbosity.

``--color auto|always|never``, ``-q/--quiet`` and ``-v/--verbose`` (`dtkguard.cli`) are kept in
the environment (``DTKGUARD_COLOR``, ``DTKGUARD_VERBOSITY``), so that what dtkguard runs (the
audits of ``report node``, dtkpip's pip) follows them too. Colour: ``--color`` first, then
``NO_COLOR`` (any non-empty value: never), then ``FORCE_COLOR`` (non-empty and not ``0``:
always), else only on a terminal. Standard library only.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from typing import Any

COLOR_ENV = "DTKGUARD_COLOR"
VERBOSITY_ENV = "DTKGUARD_VERBOSITY"
COLOR_CHOICES = ("auto", "always", "never")


def configure(color: str | None = None, verbose: int = 0, quiet: int = 0) -> None:
    """Record the command line's choices for this process and the ones it starts."""
    if color and color != "auto":
        os.environ[COLOR_ENV] = color
    if verbose or quiet:
        os.environ[VERBOSITY_ENV] = str(verbosity() + verbose - quiet)


def verbosity() -> int:
    """0 normal, below 0 quiet (``-q``), above 0 verbose (``-v``, ``-vv``)."""
    try:
        return int(os.environ.get(VERBOSITY_ENV, "0"))
    except ValueError:
        return 0


def quiet() -> bool:
    return verbosity() < 0


def color_wanted(stream: Any = None) -> bool:
    """Whether to colour what goes to ``stream`` (default stdout)."""
    choice = os.environ.get(COLOR_ENV, "auto")
    if choice in ("always", "never"):
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    stream = stream or sys.stdout
    return hasattr(stream, "isatty") and stream.isatty()


def progress_wanted(stream: Any) -> bool:
    """A live progress display: on a terminal, not quiet, not ``DTKGUARD_NO_PROGRESS``."""
    tty = hasattr(stream, "isatty") and stream.isatty()
    return tty and not quiet() and not os.environ.get("DTKGUARD_NO_PROGRESS")


def note(message: str) -> None:
    """An informational line on stderr (``dtkguard: ...``), left out under ``-q``."""
    if not quiet():
        print(f"dtkguard: {message}", file=sys.stderr)


def info(message: str) -> None:
    """A line on stderr only under ``-v``: what dtkguard is doing."""
    if verbosity() > 0:
        print(f"dtkguard: {message}", file=sys.stderr)
