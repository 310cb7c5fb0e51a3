"""`dtkguard completion bash|zsh|fish`: a shell completion script, written from the parser itself.

Install: ``dtkguard completion bash > ~/.local/share/bash-completion/completions/dtkguard``, or
``source <(dtkguard completion zsh)`` in ``~/.zshrc`` (after ``compinit``), or ``dtkguard
completion fish > ~/.config/fish/completions/dtkguard.fish``. It completes commands, their
actions (``report merge``, ``guard install``) and options, and the values of options with a fixed
set of them (``--format``, ``--color``); paths are left to the shell.
"""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "fish")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    parser = sub.add_parser(
        name,
        help="print a shell completion script (bash, zsh, fish)",
        description="Print the completion script of SHELL on stdout. bash: "
        "`dtkguard completion bash > ~/.local/share/bash-completion/completions/dtkguard`; "
        "zsh: `source <(dtkguard completion zsh)` after compinit; fish: `dtkguard completion "
        "fish > ~/.config/fish/completions/dtkguard.fish`.",
    )
    parser.add_argument("shell", choices=SHELLS)
    parser.set_defaults(run=run)


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for a in parser._actions for o in a.option_strings if o != "-h"]


def _children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _positional_choices(parser: argparse.ArgumentParser) -> list[str]:
    return [
        str(c)
        for a in parser._actions
        if not a.option_strings and a.choices and not isinstance(a, argparse._SubParsersAction)
        for c in a.choices
    ]


def _values(key: str, parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """(case pattern, words) of the options of ``parser`` that take one of fixed values."""
    out = []
    for action in parser._actions:
        if action.option_strings and action.choices:
            for opt in action.option_strings:
                out.append((f"{key}/{opt}", " ".join(map(str, action.choices))))
    return out


def table(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """(pattern of "COMMAND/ACTION" or "COMMAND/ACTION/PREVIOUS-WORD", candidate words)."""
    rows = _values("/", parser)
    rows.append(("/", " ".join([*_children(parser), *_options(parser)])))
    for name, command in _children(parser).items():
        actions = _children(command)
        for action, child in actions.items():
            rows += _values(f"{name}/{action}", child)
            rows.append((f"{name}/{action}", " ".join(_options(child))))
        key = f"{name}/" if actions else f"{name}/*"
        rows += _values(key, command)
        words = [*actions, *_positional_choices(command), *_options(command)]
        rows.append((key, " ".join(words)))
    # the longest patterns first: "report/merge/--format" before "report/merge" before "report/"
    return sorted(rows, key=lambda r: (-r[0].count("/"), r[0].endswith("*")))


#: the words typed so far -> "COMMAND/ACTION/OPTION" (POSIX shell, for bash and zsh alike); an
#: option without fixed values falls back to "COMMAND/ACTION/"
_SH_KEY = """    local cmd="" act="" prev="" w
    for w in "$@"; do
        case $w in
            -*) ;;
            *) if [ -z "$cmd" ]; then cmd=$w; elif [ -z "$act" ]; then act=$w; fi ;;
        esac
        prev=$w
    done
    case $prev in -*) ;; *) prev="" ;; esac
    _dtkguard_case "$cmd/$act/$prev" || _dtkguard_case "$cmd/$act/"
}
"""


def _probe(pattern: str) -> str:
    return pattern if pattern.count("/") == 2 else pattern + "/"


def _sh_glob(pattern: str) -> str:
    """A case pattern: the literal parts quoted, ``*`` left a wildcard."""
    return "*".join(_sh_quote(part) if part else "" for part in pattern.split("*"))


def _sh(parser: argparse.ArgumentParser) -> str:
    """``_dtkguard_words WORD...``: the candidates after the words typed so far."""
    cases = [
        f"        {_sh_glob(_probe(pattern))}) echo {_sh_quote(words)} ;;\n"
        for pattern, words in table(parser)
    ]
    return (
        "_dtkguard_words() {\n"
        + _SH_KEY
        + "_dtkguard_case() {\n    case $1 in\n"
        + "".join(cases)
        + "        *) return 1 ;;\n    esac\n}\n"
    )


def _sh_quote(words: str) -> str:
    return "'" + words.replace("'", "'\\''") + "'"


def bash(parser: argparse.ArgumentParser) -> str:
    return (
        "# dtkguard completion for bash: dtkguard completion bash > "
        "~/.local/share/bash-completion/completions/dtkguard\n" + _sh(parser) + "_dtkguard() {\n"
        "    local cur=${COMP_WORDS[COMP_CWORD]}\n"
        '    COMPREPLY=($(compgen -W "$(_dtkguard_words "${COMP_WORDS[@]:1:COMP_CWORD-1}")" '
        '-- "$cur"))\n'
        "}\n"
        "complete -o default -F _dtkguard dtkguard\n"
    )


def zsh(parser: argparse.ArgumentParser) -> str:
    return (
        "#compdef dtkguard\n# dtkguard completion for zsh: source <(dtkguard completion zsh), "
        "after compinit\n" + _sh(parser) + "_dtkguard() {\n"
        "    local -a cands\n"
        '    cands=(${(z)"$(_dtkguard_words ${words[2,CURRENT-1]})"})\n'
        "    compadd -a cands || _files\n"
        "}\n"
        "compdef _dtkguard dtkguard\n"
    )


def fish(parser: argparse.ArgumentParser) -> str:
    lines = [
        "# dtkguard completion for fish: dtkguard completion fish > "
        "~/.config/fish/completions/dtkguard.fish",
        "function __dtkguard_case",
        "    switch $argv[1]",
    ]
    for pattern, words in table(parser):
        lines += [
            f"        case {_fish_quote(_probe(pattern))}",
            f"            string split ' ' -- {_fish_quote(words)}",
        ]
    lines += ["        case '*'", "            return 1", "    end", "end", *_FISH_WORDS]
    return "\n".join(lines) + "\n"


_FISH_WORDS = [
    "function __dtkguard_words",
    '    set -l cmd ""; set -l act ""; set -l prev ""',
    "    for w in (commandline -opc)[2..-1]",
    "        if not string match -q -- '-*' $w",
    '            if test -z "$cmd"; set cmd $w; else if test -z "$act"; set act $w; end',
    "        end",
    "        set prev $w",
    "    end",
    "    string match -q -- '-*' $prev; or set prev ''",
    '    __dtkguard_case "$cmd/$act/$prev"; or __dtkguard_case "$cmd/$act/"',
    "end",
    "complete -c dtkguard -f -a '(__dtkguard_words)'",
]


def _fish_quote(text: str) -> str:
    # fish expands * inside quotes in `case` patterns; other characters are literal
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def run(args: argparse.Namespace) -> int:
    import sys

    parser = args.full_parser(())  # `dtkguard.cli.build_parser`, of every command
    sys.stdout.write({"bash": bash, "zsh": zsh, "fish": fish}[args.shell](parser))
    return 0
