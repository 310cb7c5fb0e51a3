"""The command table: every command registers; a run imports only its own command module."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dtkguard.cli import COMMANDS, build_parser


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - {"pip", "uv"}))
def test_every_command_registers_and_has_help(name):
    parser = build_parser([name])
    with pytest.raises(SystemExit) as info:
        parser.parse_args([name, "--help"])
    assert info.value.code == 0


@pytest.mark.parametrize("name", ["pip", "uv"])
def test_pip_and_uv_pass_every_argument_on_untouched(name):
    args = build_parser([name]).parse_args([name, "--help", "install", "-U", "torch"])
    assert args.argv == ["--help", "install", "-U", "torch"]


def test_a_run_imports_only_its_command():
    code = (
        "import sys; from dtkguard.cli import main; main(['policy', 'explain', 'torch']);"
        "print(sorted(m for m in sys.modules if m.startswith('dtkguard.commands.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    loaded = out.strip().splitlines()[-1]
    assert loaded == "['dtkguard.commands.common', 'dtkguard.commands.policy']"


def test_top_level_help_lists_every_command():
    text = build_parser([]).format_help()
    assert all(name in text for name in COMMANDS)


def _all_parsers():
    """Every (sub)command parser with its name, nested actions included."""
    import argparse

    root = build_parser([])
    out = [("dtkguard", root)]
    todo = [("dtkguard", root)]
    while todo:
        prefix, parser = todo.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    out.append((f"{prefix} {name}", child))
                    todo.append((f"{prefix} {name}", child))
    return out


INTERNALS = ("``", "`dtkguard.", "dtkguard.rules", "dtkguard.commands", ":class:", ":func:")


@pytest.mark.parametrize("name", [n for n, _ in _all_parsers()])
def test_help_is_written_for_users(name):
    """No module internals or RST markup; every command says what it does in one line."""
    parser = dict(_all_parsers())[name]
    text = parser.format_help()
    assert not [m for m in INTERNALS if m in text], text
    assert "The command line: parse arguments" not in text
    assert parser.description, f"{name} has no description"
    assert not parser.description.lstrip().startswith("`"), parser.description


FINDING_COMMANDS = ("check", "audit", "scan-model", "exec", "report merge")


@pytest.mark.parametrize("name", FINDING_COMMANDS)
def test_fail_on_everywhere_the_same(name):
    parser = dict(_all_parsers())[f"dtkguard {name}"]
    option = next(a for a in parser._actions if "--fail-on" in a.option_strings)
    assert option.metavar == "SEV"
    assert "critical|high|medium|low|info" in option.help or name == "report merge"


@pytest.mark.parametrize(
    "argv",
    [
        ["uv"],
        ["pip"],
        ["uv", "--help"],
        ["pip", "--debug", "install", "--version"],
        ["uv", "pip", "install", "-q", "--color", "never", "-v", "torch"],
        ["pip", "--", "-q", "install", "--", "x"],
        ["uv", "-1", "", "-", "--python=", "--override", "reason"],
    ],
)
def test_pip_and_uv_shortcut_parse_as_the_parser_does(argv):
    from dtkguard.cli import _passthrough

    quick = _passthrough(argv)
    assert quick is not None
    assert vars(quick) == vars(build_parser(argv).parse_args(argv))


@pytest.mark.parametrize("argv", [[], ["check"], ["-q", "uv", "pip"], ["--debug", "pip"]])
def test_other_command_lines_take_the_parser(argv):
    from dtkguard.cli import _passthrough

    assert _passthrough(argv) is None
