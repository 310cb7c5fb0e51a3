"""The commands a ``sh -c "..."`` (``bash -lc``, ``dash -ec``...) would run, so that they are
judged instead of the shell.

The script is split with ``shlex`` (POSIX rules, ``;`` ``&&`` ``||`` ``|`` ``&`` and newlines
between commands); each simple command loses its ``VAR=value`` assignments (they join its
environment), ``exec``, ``env``, ``nohup`` and ``command`` prefixes, and ``cd DIR`` moves the
folder later commands resolve paths from. ``$NAME``/``${NAME}`` take the value of the variable in
the environment the shell starts with (not of assignments inside the script); nothing else is
expanded, and nothing is run.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping

from dtkguard.lightclass import record

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})
#: shells inside shells, at most
MAX_DEPTH = 4
MAX_SCRIPT = 1 << 20
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&"})
_PREFIXES = frozenset({"exec", "nohup", "command", "time", "builtin"})
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


class ShellError(ValueError):
    """A shell script that cannot be split (unbalanced quotes; one line)."""


@record
class Inner:
    """One simple command of a script, with its environment and folder."""

    argv: list[str]
    environ: dict[str, str]
    cwd: str


def shell_script(argv: list[str]) -> str | None:
    """The script of ``sh [OPTIONS] -c SCRIPT`` (``-lc``, ``-ec``, ``-o pipefail -c``), None
    when ``argv`` is not a shell given a script string."""
    if not argv or os.path.basename(argv[0]) not in SHELLS:
        return None
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("-o", "+o", "-O", "+O"):
            i += 2
        elif arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return argv[i + 1] if i + 1 < len(argv) else None
        elif arg.startswith(("-", "+")):
            i += 1
        else:
            return None  # a script file: its text is not judged
    return None


_VARIABLE = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")


def _expand(script: str, environ: Mapping[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` replaced from ``environ`` (unset: empty), as the shell would,
    except inside single quotes; ``$(...)``, ``$1`` and other expansions stay as written."""
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(script):
        ch = script[i]
        if ch == "\\" and quote != "'":
            out.append(script[i : i + 2])
            i += 2
            continue
        if ch in "'\"" and quote in ("", ch):
            quote = "" if quote == ch else ch
        elif ch == "$" and quote != "'" and (m := _VARIABLE.match(script, i)):
            value = environ.get(m.group(1) or m.group(2), "")
            # the value is data, never quotes: split into words unquoted, one word in "..."
            if quote:
                out.append(value.replace("\\", "\\\\").replace('"', '\\"'))
            else:
                out.append(" ".join(shlex.quote(w) for w in value.split()))
            i = m.end()
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _simple_commands(script: str, environ: Mapping[str, str]) -> list[list[str]]:
    if len(script) > MAX_SCRIPT:
        raise ShellError("shell script larger than 1 MiB")
    text = _expand(script, environ).replace("\\\n", " ").replace("\n", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise ShellError(f"shell script: {exc}") from None
    out: list[list[str]] = [[]]
    skip = False
    for token in tokens:
        if skip:  # the file of a redirection
            skip = False
        elif token in _SEPARATORS:
            out.append([])
        elif token.strip("<>&|") == "" and token[:1] in "<>&":
            skip = True
            if out[-1] and out[-1][-1].isdigit():  # the 2 of 2>&1
                out[-1].pop()
        else:
            out[-1].append(token)
    return [c for c in out if c]


def _prefix_option(argv: list[str], i: int) -> bool:
    """``-i`` of ``env -i``, ``-p`` of ``command -p``."""
    return argv[i].startswith("-") and i > 0 and argv[i - 1] in ("env", "exec", "command")


def _strip(argv: list[str], env: dict[str, str]) -> list[str]:
    """Drop assignments (into ``env``) and wrapper prefixes (``exec``, ``env -i A=1``...)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if _ASSIGN.match(word):
            name, _, value = word.partition("=")
            env[name] = value
        elif not (word == "env" or word in _PREFIXES or _prefix_option(argv, i)):
            break
        i += 1
    return argv[i:]


def expand(argv: list[str], environ: Mapping[str, str], cwd: str, depth: int = 0) -> list[Inner]:
    """The commands ``argv`` runs: itself, or the simple commands of its shell script."""
    script = shell_script(argv) if depth < MAX_DEPTH else None
    if script is None:
        return [Inner(list(argv), dict(environ), cwd)]
    out: list[Inner] = []
    env = dict(environ)
    for words in _simple_commands(script, environ):
        own = dict(env)
        words = _strip(words, own)
        if not words:
            env = own  # `A=1; cmd`: a bare assignment sets the shell's variable
            continue
        if words[0] == "cd" and len(words) > 1:
            cwd = os.path.join(cwd, words[1])
            continue
        if words[0] == "export":
            for word in words[1:]:
                if _ASSIGN.match(word):
                    name, _, value = word.partition("=")
                    env[name] = value
            continue
        out.extend(expand(words, own, cwd, depth + 1))
    return out
