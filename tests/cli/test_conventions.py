"""The conventions a command line is expected to keep: -q/-v and --color on every command (before
or after it), FORCE_COLOR beside NO_COLOR, shell completion run in the real shells, `dtkpip
--version` naming the target's pip, one spelling of the uv lock install in README and docs."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dtkguard.cli import COMMANDS, PASSTHROUGH, build_parser
from tests.support.cli import REPO, dtkguard, run_in_process
from tests.support.need import missing
from tests.support.sitetree import add_dist, vendor_site


def _parsers():
    """(words, parser) of every command and action, e.g. (("report", "merge"), parser)."""
    import argparse

    def walk(words, parser):
        yield words, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    yield from walk((*words, name), child)

    yield from walk((), build_parser(()))


@pytest.mark.parametrize("words", [w for w, _ in _parsers() if w and w[0] not in PASSTHROUGH])
def test_every_command_takes_quiet_verbose_and_color(words):
    parser = dict(_parsers())[words]
    options = parser._option_string_actions
    for option in ("-q", "--quiet", "-v", "--verbose", "--color"):
        assert option in options, (words, option)
    assert options["--color"].choices == ("auto", "always", "never")


def test_pip_and_uv_leave_q_and_v_to_pip_and_uv():
    """dtkpip's and dtkuv's words are all pip's and uv's: their -q/-v reach the tool; dtkguard's
    own come before the command (``dtkguard -q pip ...``)."""
    assert set(PASSTHROUGH) <= set(COMMANDS)
    top = dict(_parsers())[()]
    assert {"-q", "-v", "--color"} <= set(top._option_string_actions)


@pytest.fixture
def site(tmp_path):
    site = vendor_site(tmp_path / "site")
    add_dist(site, "nvidia-cudnn-cu12", "9.1.0.70")  # a finding, so that the table has colour
    return site


@pytest.mark.parametrize(
    ("words", "env", "coloured"),
    [
        (("",), {}, False),  # not a terminal
        (("", "--color", "always"), {}, True),
        (("--color=always",), {}, True),  # before the command
        (("",), {"FORCE_COLOR": "1"}, True),
        (("",), {"FORCE_COLOR": "0"}, False),
        (("",), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),  # NO_COLOR beats FORCE_COLOR
        (("", "--color", "always"), {"NO_COLOR": "1"}, True),  # the command line beats both
        (("", "--color", "never"), {"FORCE_COLOR": "1"}, False),
    ],
)
def test_color_auto_always_never_and_force_color(site, words, env, coloured):
    run = dtkguard(*[w for w in words[:1] if w], "check", "--path", site, *words[1:],
                   env={"NO_COLOR": "", **env})  # fmt: skip
    assert run.returncode == 1, run.stderr
    assert ("\x1b[" in run.stdout) is coloured, run.stdout


def test_quiet_drops_notes_verbose_says_what_it_does(tmp_path, site):
    report = tmp_path / "n1.json"
    assert dtkguard("check", "--path", site, "--format", "json", "-o", report).returncode == 1
    out = tmp_path / "fleet.html"
    loud = dtkguard("report", "merge", report, "--format", "html", "-o", out)
    assert "wrote" in loud.stderr
    for words in (("-q", "report", "merge"), ("report", "-q", "merge"), ("report", "merge", "-q")):
        quiet = dtkguard(*words, report, "--format", "html", "-o", out)
        assert quiet.returncode == 1 and quiet.stderr == "", words
    plain = dtkguard("check", "--path", site)
    assert "dtkguard: target:" not in plain.stderr
    verbose = dtkguard("check", "-v", "--path", site)
    assert verbose.stdout == plain.stdout  # the report is the same
    assert f"dtkguard: target: 7 distributions in 1 site(s): {site}" in verbose.stderr
    assert "dtkguard: policy dtk-25.04.1 from " in verbose.stderr
    assert dtkguard("-v", "check", "--path", site).stderr == verbose.stderr


def test_quiet_and_verbose_reach_lock_and_bad_values_are_exit_2():
    assert run_in_process("check", "--color", "sometimes").code == 2
    help_text = run_in_process("lock", "--help").out
    assert "-q, --quiet" in help_text and "-v, --verbose" in help_text


def _script(shell: str) -> Path:
    run = run_in_process("completion", shell)
    assert run.code == 0 and run.out, run.err
    return run.out


def _shell(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        missing(f"{name} is not installed (apt-get install {name})")
    return path


def test_bash_completion(tmp_path):
    bash = _shell("bash")
    script = tmp_path / "dtkguard.bash"
    script.write_text(_script("bash"))

    def complete(*words: str) -> list[str]:
        code = (
            f"source {script}; COMP_WORDS=(dtkguard {' '.join(map(repr, words))}); "
            f'COMP_CWORD={len(words)}; _dtkguard; printf "%s\\n" "${{COMPREPLY[@]}}"'
        )
        run = subprocess.run([bash, "-c", code], capture_output=True, text=True, check=True)
        return run.stdout.split()

    assert complete("rep") == ["report"]
    assert complete("report", "")[:2] == ["merge", "node"]
    assert complete("report", "merge", "--format", "") == ["markdown", "html", "json"]
    assert "--fail-on" in complete("check", "--")
    assert complete("guard", "i") == ["install"]
    assert complete("check", "--color", "") == ["auto", "always", "never"]
    assert "--expect-nodes" in complete("report", "-q", "merge", "--e")


def test_zsh_completion(tmp_path):
    zsh = _shell("zsh")
    script = tmp_path / "_dtkguard"
    script.write_text(_script("zsh"))
    code = (
        f"autoload -Uz compinit && compinit -u -d {tmp_path / 'zcompdump'}; source {script}; "
        "print -r -- ${_comps[dtkguard]}; _dtkguard_words report merge --format; "
        "_dtkguard_words"
    )
    run = subprocess.run([zsh, "-f", "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    registered, formats, top = run.stdout.splitlines()
    assert registered == "_dtkguard"  # compdef took it
    assert formats.split() == ["markdown", "html", "json"]
    assert "guard" in top.split() and "completion" in top.split()


def test_fish_completion(tmp_path):
    fish = _shell("fish")
    script = tmp_path / "dtkguard.fish"
    script.write_text(_script("fish"))

    def complete(line: str) -> list[str]:
        code = f"source {script}; complete -C {line!r}"
        run = subprocess.run([fish, "--no-config", "-c", code], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return [row.split("\t")[0] for row in run.stdout.splitlines()]

    assert complete("dtkguard rep") == ["report"]
    assert complete("dtkguard report merge --format ") == ["html", "json", "markdown"]
    assert complete("dtkguard guard ")[:3] == ["install", "remove", "status"]


def test_dtkpip_version_names_dtkguard_and_the_targets_pip(tmp_path):
    """Not the pip of dtkguard's own venv: the pip of the environment dtkpip acts on."""
    from tests.support.cache import PIP_VERSIONS
    from tests.support.venvs import make_venv

    venv = make_venv(tmp_path / "target", pip_version=PIP_VERSIONS[0])
    run = dtkguard("pip", "--python", venv.python, "--version")
    from dtkguard import __version__

    lines = run.stdout.splitlines()
    assert run.returncode == 0 and lines[0] == f"dtkpip (dtkguard {__version__})", run.stderr
    assert lines[1].startswith(f"pip {PIP_VERSIONS[0]} from {venv.path}")


def test_one_spelling_of_the_uv_lock_install():
    """README and docs install a pylock file with uv one way, the way the tests run it."""
    texts = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    found = {
        re.sub(r"pylock\.[\w.-]+\.toml", "pylock.NAME.toml", m.group(0))
        for path in texts
        for m in re.finditer(
            r"uv pip (?:sync|install)[^\n`#]*?pylock\.[\w.-]+\.toml", path.read_text()
        )
    }
    assert found == {"uv pip sync --preview-features pylock pylock.NAME.toml"}


def test_readme_names_every_tool_ci_installs_for_the_tests():
    """What .ci/ installs for the tests (apt-get install ...) is in the README's list of what the
    tests need, so a plain `pytest` run can be made complete by hand."""
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("What the tests need besides Python") :]
    table = table[: table.index("\n\n", table.index("|"))]
    installed = set()
    for script in (REPO / ".ci").iterdir():
        for m in re.finditer(r"apt-get install [^\n]*", script.read_text()):
            installed |= {w for w in m.group(0).split()[2:] if not w.startswith("-")}
    assert installed >= {"chromium", "strace", "zsh", "fish", "docker.io", "slurmd"}
    assert [name for name in sorted(installed) if f"`{name}`" not in table] == []
