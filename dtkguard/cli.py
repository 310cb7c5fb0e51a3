"""The command line: parse arguments, call the library, pick the exit code.

Each subcommand lives in ``dtkguard.commands.<name>`` with ``register(subparsers)`` and
``run(args) -> int``; the table below is the only place that lists them.
"""

from __future__ import annotations

import os
import sys

from dtkguard import __version__
from dtkguard.errors import DtkguardError, refuse_empty
from dtkguard.quick_args import command_module
from dtkguard.quick_args import parse as quick_parse
from dtkguard.util.console import COLOR_CHOICES, configure
from dtkguard.util.exit import command_starts

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import NoReturn

#: subcommand -> module in dtkguard.commands
COMMANDS: dict[str, str] = {
    "check": "check",
    "export": "export",
    "lock": "lock",
    "policy": "policy",
    "audit": "audit",
    "scan-model": "scan_model",
    "exec": "exec_",
    "report": "report",
    "pip": "pip",
    "uv": "uv",
    "guard": "guard",
    "doctor": "doctor",
    "restore": "restore",
    "undo": "undo",
    "history": "history",
    "completion": "completion",
}

#: the commands whose every argument is their tool's (pip's, uv's): no options of dtkguard's
PASSTHROUGH = ("pip", "uv")


def _parser_class() -> type[argparse.ArgumentParser]:
    """argparse's parser that exits 2 with one line instead of the usage block on bad
    arguments, made on first use: dtkpip's and dtkuv's command lines import no argparse
    (`_passthrough`)."""
    global _parser
    if _parser is None:
        import argparse

        class _Parser(argparse.ArgumentParser):
            def error(self, message: str) -> NoReturn:
                self.exit(2, f"{self.prog}: error: {message}\n")

            def _get_formatter(self) -> argparse.HelpFormatter:
                """argparse's, with the width `shutil.get_terminal_size` gives, without
                importing shutil (and zlib, bz2, lzma) on every command line: add_argument
                makes a formatter."""
                if sys.version_info >= (3, 14) or "shutil" in sys.modules:
                    return super()._get_formatter()
                width = _columns() - 2
                return self.formatter_class(prog=self.prog, width=width)  # type: ignore[call-arg]

        _parser = _Parser
    return _parser


_parser: type[argparse.ArgumentParser] | None = None


def _columns() -> int:
    """The terminal's width as `shutil.get_terminal_size` reads it: ``$COLUMNS``, else stdout's
    terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser; when ``argv`` names a command, only that command's module is imported."""
    parser_class = _parser_class()
    parser = parser_class(
        prog="dtkguard",
        description="Keep Hygon DCU (DTK/DAS) Python environments intact: guard pip and uv, "
        "lock images under a policy, audit environments and fleets for drift, tampering, CUDA "
        "builds and FP8 models.",
    )
    parser.add_argument("--version", action="version", version=f"dtkguard {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    add_output_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_class)
    sub.required = True
    first = next((a for a in argv if not a.startswith("-") and a not in COLOR_CHOICES), None)
    names = [first] if first in COMMANDS else list(COMMANDS)
    for name in names:
        command_module(COMMANDS[name]).register(sub, name)
    for name, command in sub.choices.items():
        if name not in PASSTHROUGH:
            _on_every_parser(command, add_output_options)
    if "completion" in sub.choices:  # it writes the script from the parser of every command
        sub.choices["completion"].set_defaults(full_parser=build_parser)
    return parser


def _passthrough(argv: list[str]) -> argparse.Namespace | None:
    """``dtkguard pip|uv ARGS...``: the namespace `build_parser` parses from it (every argument
    after the command is pip's or uv's), without building the parser (argparse translates the
    help of every option it adds: a few ms of every dtkpip and dtkuv run). None for any other
    command line."""
    if not argv or argv[0] not in PASSTHROUGH:
        return None
    from types import SimpleNamespace

    run = command_module(COMMANDS[argv[0]]).run
    return SimpleNamespace(debug=False, command=argv[0], argv=argv[1:], run=run)  # type: ignore[return-value]


#: argument values that are not names of anything (passed on to pip or uv as they are)
_PASSED_ON = ("argv", "command", "run")


def _given(args: argparse.Namespace) -> dict[str, object]:
    """{option as typed (``--root``, ``TARGET``): value} of every parsed argument."""
    out = {}
    for dest, value in vars(args).items():
        if dest not in _PASSED_ON:
            name = dest.upper() if dest == "target" else "--" + dest.replace("_", "-")
            out[name] = value
    return out


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``-q/--quiet``, ``-v/--verbose`` and ``--color`` (before or after the command); an option
    the command already has (lock's ``-q``) stays the command's."""
    import argparse

    own = parser._option_string_actions
    group = parser.add_argument_group("output")
    keep = argparse.SUPPRESS  # a subcommand's default must not undo the main parser's value
    if "-q" not in own and "--quiet" not in own:
        group.add_argument(
            "-q", "--quiet", action="count", default=keep, help="less output: no notes, no progress"
        )
    if "-v" not in own and "--verbose" not in own:
        group.add_argument(
            "-v",
            "--verbose",
            action="count",
            default=keep,
            help="say what dtkguard does (-vv: more)",
        )
    if "--color" not in own:
        group.add_argument(
            "--color",
            choices=COLOR_CHOICES,
            default=keep,
            help="colour: auto (a terminal, unless NO_COLOR; FORCE_COLOR forces it), always, never",
        )


def _on_every_parser(
    parser: argparse.ArgumentParser, add: Callable[[argparse.ArgumentParser], None]
) -> None:
    """``add(parser)`` on ``parser`` and on each of its sub-actions' parsers."""
    import argparse

    add(parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _on_every_parser(child, add)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or bool(os.environ.get("DTKGUARD_DEBUG"))
    try:
        args = _passthrough(argv) or quick_parse(argv) or build_parser(argv).parse_args(argv)
        refuse_empty(_given(args))
        configure(
            getattr(args, "color", None),
            int(getattr(args, "verbose", 0) or 0),
            int(getattr(args, "quiet", 0) or 0),
        )
        command_starts()
        return int(args.run(args))
    except DtkguardError as exc:
        if debug:
            raise
        print(f"dtkguard: error: {exc.line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a full or read-only disk, a folder gone: one line, never a traceback
        if debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"dtkguard: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1


def console_main() -> NoReturn:
    """The ``dtkguard`` script (``scripts/dtkguard``): `main`, then
    `dtkguard.util.exit.exit_now` (no teardown)."""
    from dtkguard.util.exit import console_start, exit_now

    console_start()
    exit_now(main())


def dtkpip_main(argv: Sequence[str] | None = None) -> int:
    """`dtkpip ARGS...` is `dtkguard pip ARGS...`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return main(["pip", *argv])


def dtkuv_main(argv: Sequence[str] | None = None) -> int:
    """`dtkuv ARGS...` is `dtkguard uv ARGS...`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return main(["uv", *argv])


def dtkpip_script() -> NoReturn:
    """The ``dtkpip`` script (``scripts/dtkpip``): `dtkpip_main`'s code is the exit status."""
    from dtkguard.util.exit import console_start

    console_start()
    sys.exit(dtkpip_main())


def dtkuv_script() -> NoReturn:
    """The ``dtkuv`` script (``scripts/dtkuv``): `dtkuv_main`'s code is the exit status."""
    from dtkguard.util.exit import console_start

    console_start()
    sys.exit(dtkuv_main())
