"""What dtkpip and dtkuv say while pip or uv plans (20-40 s on a large request): a rich
spinner on a terminal, one plain line otherwise (logs, CI)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from dtkguard.guard.pipargs import PipCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO


def requested_count(cmd: PipCommand, files: list[str] | None = None) -> int:
    """How many requirements a command names: arguments, ``-e`` and the lines of ``-r`` files
    (``files``: requirement files given as arguments, as ``uv pip sync`` takes them)."""
    count = 0 if files is not None else len(cmd.positionals())
    count += len(cmd.option_values("-e", "--editable"))
    for path in [*cmd.option_values("-r", "--requirement", "--requirements"), *(files or [])]:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        count += sum(1 for ln in lines if ln.strip() and not ln.lstrip().startswith(("#", "-")))
    return count


@contextlib.contextmanager
def planning(tool: str, runs: str, count: int, stream: TextIO | None = None) -> Iterator[None]:
    """``planning with pip ... (N packages)`` on ``stream`` (stderr) while the block runs."""
    stream = stream or sys.stderr
    text = f"{tool}: planning with {runs} … ({count} package{'s' if count != 1 else ''})"
    from dtkguard.util.console import progress_wanted, quiet

    if not progress_wanted(stream):
        if not quiet():
            stream.write(text + "\n")
            stream.flush()
        yield
        return
    from rich.console import Console

    with Console(file=stream).status(text, spinner="dots"):
        yield
