"""`dtkguard check`'s command line read without argparse (`dtkguard.quick_args`): the same
namespace as argparse's wherever it answers, argparse's own errors and help wherever it does not,
and the same options as the parser."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dtkguard import quick_args as quick
from dtkguard.cli import build_parser
from tests.support.cli import REPO
from tests.support.venvs import hermetic_env

#: command lines the quick reader answers: each must be argparse's namespace exactly
ANSWERED = [
    ["check"],
    ["check", "--python", "py"],
    ["check", "--python=py", "--format=json", "-o", "-"],
    ["check", "--path", "a", "--path", "b", "--allow-empty"],
    ["check", "--path=a", "--path", "b=c"],
    ["check", "--root", "/r", "--policy", "p.toml", "--lock", "l.toml"],
    ["check", "--pid", "1", "-f", "sarif", "--fail-on", "low", "--output", "x"],
    ["check", "--container", "c", "--expect-devices", "--hy-smi-output", "h.txt"],
    ["check", "--all-guarded", "-q", "-q", "--color", "never"],
    ["check", "-v", "--verbose", "--color=always", "--format", "table"],
    ["check", "--python", "a", "--python", "b"],  # the last one, as argparse
    ["check", "--format", "json", "--format", "junit"],
    ["check", "--python", ""],  # empty: refused later, by the command, for both
    ["check", "--fail-on", "nonsense"],  # judged by the command, not the parser
    ["check", "-o", "-", "--python", "=x"],
]

#: command lines left to argparse: help, errors, and spellings argparse reads its own way
DECLINED = [
    [],
    ["audit"],
    ["-q", "check"],
    ["check", "-h"],
    ["check", "--help"],
    ["check", "--pyth", "py"],  # an abbreviation
    ["check", "-fjson"],  # a joined short option
    ["check", "-qq"],
    ["check", "--python", "a", "--root", "b"],  # two target options
    ["check", "--python"],  # no value
    ["check", "--python", "--root"],  # an option as the value
    ["check", "--python", "-x"],
    ["check", "--format", "yaml"],  # not a choice
    ["check", "--format="],
    ["check", "--color", "sometimes"],
    ["check", "--allow-empty=yes"],
    ["check", "target"],  # check takes no positional
    ["check", "--", "--python"],
    ["check", "--debug"],
    ["check", "--unknown"],
]


@pytest.mark.parametrize("argv", ANSWERED, ids=" ".join)
def test_the_quick_reader_answers_as_argparse(argv: list[str]) -> None:
    mine = quick.parse(argv)
    assert mine is not None, argv
    assert vars(mine) == vars(build_parser(argv).parse_args(argv))


@pytest.mark.parametrize("argv", DECLINED, ids=" ".join)
def test_everything_else_is_left_to_argparse(argv: list[str]) -> None:
    assert quick.parse(argv) is None


def test_the_reader_knows_every_option_of_checks_parser() -> None:
    """An option added to check's parser and not here would only be slower (argparse reads
    it); one here and not in the parser would be read by nobody but this reader."""
    import argparse

    sub = next(
        a for a in build_parser(["check"])._actions if isinstance(a, argparse._SubParsersAction)
    )
    parser = sub.choices["check"]
    strings = {s for a in parser._actions for s in a.option_strings} - {"-h", "--help"}
    assert strings == set(quick.CHECK) | set(quick.OUTPUT)
    for action in parser._actions:
        if action.dest in quick.CHECK_DEFAULTS:
            assert action.default == quick.CHECK_DEFAULTS[action.dest], action.dest
    exclusive = {a.dest for g in parser._mutually_exclusive_groups for a in g._group_actions}
    assert exclusive == quick.EXCLUSIVE


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check", "--python", "a", "--root", "b"], "not allowed with argument"),
        (["check", "--format", "yaml"], "invalid choice"),
        (["check", "--pyth"], "expected one argument"),
    ],
)
def test_the_command_still_says_argparses_errors(argv: list[str], message: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "dtkguard", *argv],
        env={**hermetic_env(), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
