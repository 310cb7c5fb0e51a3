"""The recipes of README.md as the tests run them: code blocks of one recipe, and the shell."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.support.cache import REPO_ROOT

README = REPO_ROOT / "README.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)


def recipe_text(title: str) -> str:
    """The README paragraphs of the recipe whose bold title starts with ``title``, up to the
    next bold title or heading outside a code block."""
    lines = README.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(f"**{title}"))
    fenced = False
    for end in range(start + 1, len(lines)):
        if lines[end].startswith("```"):
            fenced = not fenced
        elif not fenced and lines[end].startswith(("**", "#")):
            break
    else:
        end = len(lines)
    return "".join(lines[start:end])


def code_blocks(title: str, lang: str | None = None) -> list[str]:
    """The code blocks of one recipe, in order; only those in ``lang`` when given."""
    return [
        body for kind, body in _FENCE.findall(recipe_text(title)) if lang is None or kind == lang
    ]


def run_shell(
    script: str, *, cwd: Path, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run a README shell block as written (bash, stop at the first failing command)."""
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
