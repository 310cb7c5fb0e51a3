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
