"""Command lines argparse would parse one way, read without argparse.

argparse costs every run a few milliseconds: its import (with gettext and locale) and a help
formatter for each option it adds. A command that gates run in loops (``check``) lists its
options here; `parse` answers a command line made only of them, each spelled out in full, and
None for anything else (``--help``, an abbreviation, a joined short option, two exclusive
options, a value that looks like an option, a name it does not know). argparse then parses and
judges that command line as always, so every error and every help text stays argparse's.
``tests/cli/test_quick_args.py`` holds the two to the same namespace and to the same options.
"""

from __future__ import annotations

from dtkguard.util.console import COLOR_CHOICES

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any

#: option kinds, as argparse's actions: ``store_true``, ``store`` (one value), ``append``, ``count``
FLAG, VALUE, APPEND, COUNT = "flag", "value", "append", "count"

#: the output options every command has (`cli.add_output_options`): absent from the namespace
#: unless given (argparse's SUPPRESS default)
OUTPUT = {"-q": ("quiet", COUNT), "--quiet": ("quiet", COUNT), "-v": ("verbose", COUNT)}
OUTPUT |= {"--verbose": ("verbose", COUNT), "--color": ("color", VALUE)}

#: check's own options: option string -> (dest, kind)
CHECK = {
    "--python": ("python", VALUE),
    "--path": ("path", APPEND),
    "--root": ("root", VALUE),
    "--pid": ("pid", VALUE),
    "--container": ("container", VALUE),
    "--all-guarded": ("all_guarded", FLAG),
    "--policy": ("policy", VALUE),
    "--lock": ("lock", VALUE),
    "--allow-empty": ("allow_empty", FLAG),
    "--hy-smi-output": ("hy_smi_output", VALUE),
    "--expect-devices": ("expect_devices", FLAG),
    "--format": ("format", VALUE),
    "-f": ("format", VALUE),
    "--fail-on": ("fail_on", VALUE),
    "-o": ("output", VALUE),
    "--output": ("output", VALUE),
}

#: check's defaults, as its parser sets them
CHECK_DEFAULTS: dict[str, object] = {
    "python": None,
    "path": None,
    "root": None,
    "pid": None,
    "container": None,
    "all_guarded": False,
    "policy": None,
    "lock": None,
    "allow_empty": False,
    "hy_smi_output": None,
    "expect_devices": False,
    "format": "table",
    "fail_on": "high",
    "output": None,
}

#: the target options: argparse refuses two of them together
EXCLUSIVE = frozenset({"python", "path", "root", "pid", "container"})

#: command -> (its options, its defaults, its module in dtkguard.commands)
COMMANDS = {"check": (CHECK, CHECK_DEFAULTS, "check")}


def _choices(dest: str) -> tuple[str, ...] | None:
    """The values argparse accepts for ``dest`` (None: any)."""
    if dest == "color":
        return COLOR_CHOICES
    if dest == "format":
        from dtkguard.report import FORMATS

        return tuple(FORMATS)
    return None


def parse(argv: Sequence[str]) -> argparse.Namespace | None:
    """The namespace argparse would parse from ``argv`` (``COMMAND OPTION...``), or None when
    argparse must read it."""
    if not argv or argv[0] not in COMMANDS:
        return None
    options, defaults, module = COMMANDS[argv[0]]
    values: dict[str, object] = {"debug": False, "command": argv[0], **defaults}
    targets: set[str] = set()
    rest = iter(argv[1:])
    for token in rest:
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        dest, kind = options.get(name) or OUTPUT.get(name) or ("", "")
        if not dest or (eq and kind != VALUE and kind != APPEND):
            return None
        if kind == FLAG:
            values[dest] = True
        elif kind == COUNT:
            values[dest] = int(values.get(dest, 0)) + 1  # type: ignore[call-overload]
        else:
            value = inline if eq else next(rest, None)
            if value is None or (value.startswith("-") and value != "-"):
                return None  # argparse's "expected one argument", or an option as a value
            choices = _choices(dest)
            if choices is not None and value not in choices:
                return None
            if kind == APPEND:
                values[dest] = [*(values[dest] or ()), value]  # type: ignore[misc]
            else:
                values[dest] = value
        if dest in EXCLUSIVE:
            targets.add(dest)
    if len(targets) > 1:
        return None
    from types import SimpleNamespace

    values["run"] = command_module(module).run
    return SimpleNamespace(**values)  # type: ignore[return-value]


def command_module(module: str) -> Any:
    """``dtkguard.commands.<module>`` (`importlib.import_module` without importing the
    importlib package, a start-up cost of every command line: ``__import__`` with a
    ``fromlist`` returns the submodule itself)."""
    return __import__(f"dtkguard.commands.{module}", fromlist=["run"])
