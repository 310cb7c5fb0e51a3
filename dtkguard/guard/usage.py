"""`dtkpip --help` and `dtkuv --help`: the tool's own options first, then pip's or uv's help."""

from __future__ import annotations

import sys

from dtkguard.guard.tools import Tool

_TEXT = """\
{name}: {runs} with the dtkguard policy in front of it ({what}).

Usage: {name} [--python PY] [--policy P] [--override REASON] {usage}

{name}'s own options (before {runs}'s arguments):
  --python PY          the interpreter to act on (default: the active venv/conda env, else the
                       one interpreter `dtkguard guard install` guarded; else {name} asks)
  --policy P           a policy file or bundled name (default: the one `guard install` left in
                       the environment, else the default lookup)
  --override REASON    install past the guard; recorded in the environment, reported by
                       `dtkguard check` (also: DTKGUARD_OVERRIDE=REASON)

{name} prints the interpreter it acts on (stderr). It plans first ({plan}), judges the plan
with the rules of `dtkguard check`, then runs {runs} once or stops with an explanation (exit 1,
nothing touched). `dtkguard policy explain torch` shows the rules. Docs: docs/guard.md.

{runs}'s own help follows.
"""

_WHAT = {
    "pip": "install, uninstall",
    "uv": "uv pip install, sync, uninstall; other uv commands run unchanged",
}
_USAGE = {"pip": "PIP_ARGS...", "uv": "UV_ARGS..."}
_PLAN = {
    "pip": "pip install --dry-run --report",
    "uv": "uv pip install|sync|uninstall --dry-run",
}


def own_help(tool: Tool) -> str:
    return _TEXT.format(
        name=tool.name,
        runs=tool.runs,
        what=_WHAT[tool.runs],
        usage=_USAGE[tool.runs],
        plan=_PLAN[tool.runs],
    )


def print_own_help(tool: Tool) -> None:
    sys.stdout.write(own_help(tool) + "\n")
    sys.stdout.flush()
