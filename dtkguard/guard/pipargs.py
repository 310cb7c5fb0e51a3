"""Split a pip command line: dtkpip's own options, pip's global options, the subcommand, its
options and its requirement arguments. pip's arguments are passed on untouched."""

from __future__ import annotations

from dtkguard.errors import InputError
from dtkguard.lightclass import field, record

#: pip options (global and install/uninstall) that take a value as the next argument
VALUE_OPTIONS = frozenset(
    (
        "-r",
        "--requirement",
        "-c",
        "--constraint",
        "-e",
        "--editable",
        "-t",
        "--target",
        "--platform",
        "--python-version",
        "--implementation",
        "--abi",
        "--root",
        "--prefix",
        "--src",
        "--upgrade-strategy",
        "--install-option",
        "--global-option",
        "-C",
        "--config-settings",
        "--no-binary",
        "--only-binary",
        "--progress-bar",
        "--root-user-action",
        "--report",
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "--trusted-host",
        "--log",
        "--log-file",
        "--local-log",
        "--proxy",
        "--retries",
        "--timeout",
        "--exists-action",
        "--cert",
        "--client-cert",
        "--cache-dir",
        "--python",
        "--keyring-provider",
        "--use-feature",
        "--use-deprecated",
        "--resume-retries",
        "--build-constraint",
        "--group",
        "--uploaded-prior-to",
    )
)
#: options whose value is itself something to install
REQUIREMENT_OPTIONS = frozenset({"-r", "--requirement", "-e", "--editable"})


@record
class DtkpipArgs:
    """``dtkpip [--python PY] [--policy P] [--override REASON] PIP_ARGS...``"""

    python: str | None = None
    policy: str | None = None
    override: str | None = None
    #: the `uv` shim of `guard install --uv`: its environment's interpreter (dtkuv only)
    shim_of: str | None = None
    pip_args: list[str] = field(default_factory=list)


def split_dtkpip(argv: list[str], own: tuple[str, ...] = ()) -> DtkpipArgs:
    """dtkpip's own options (and ``own`` ones) must come before pip's arguments."""
    out = DtkpipArgs()
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name not in ("--python", "--policy", "--override", *own):
            break
        if not eq:
            if i + 1 >= len(argv):
                raise InputError(f"{name} needs a value", field=name)
            value = argv[i + 1]
            i += 1
        if name == "--override" and not value.strip():
            raise InputError("--override needs a reason", field="--override")
        if getattr(out, name[2:].replace("-", "_")) is not None:
            raise InputError(f"{name} given twice", field=name)
        setattr(out, name[2:].replace("-", "_"), value)
        i += 1
    out.pip_args = argv[i:]
    return out


@record
class PipCommand:
    """pip's arguments, split around the subcommand."""

    global_args: list[str]
    command: str | None
    args: list[str]
    #: the options of this tool that take a value (pip's; uv's for dtkuv)
    value_options: frozenset[str] = VALUE_OPTIONS

    def option_values(self, *names: str) -> list[str]:
        """Every value given to any of ``names`` (``-x V``, ``--xx V`` or ``--xx=V``)."""
        return [v for n, v in _options(self.args, self.value_options) if n in names]

    def has(self, *names: str) -> bool:
        return any(a in names or a.split("=", 1)[0] in names for a in self.args + self.global_args)

    def positionals(self) -> list[str]:
        """Requirement specifiers, paths and URLs given directly."""
        out = []
        skip = False
        for arg in self.args:
            if skip:
                skip = False
                continue
            if arg.startswith("-"):
                skip = arg in self.value_options
                continue
            out.append(arg)
        return out


def _options(args: list[str], value_options: frozenset[str]) -> list[tuple[str, str]]:
    out = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--") and "=" in arg:
            name, _, value = arg.partition("=")
            out.append((name, value))
        elif arg in value_options and i + 1 < len(args):
            out.append((arg, args[i + 1]))
            i += 1
        elif not arg.startswith("--") and len(arg) > 2 and arg[:2] in value_options:
            out.append((arg[:2], arg[2:]))  # -rreqs.txt
        i += 1
    return out


def split_pip(args: list[str], value_options: frozenset[str] = VALUE_OPTIONS) -> PipCommand:
    """Find pip's subcommand: the first argument that is neither an option nor its value."""
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):
            return PipCommand(args[:i], arg, args[i + 1 :], value_options)
        if arg in value_options:
            i += 1
        i += 1
    return PipCommand(args, None, [], value_options)


def requirement_name(spec: str) -> str:
    """The canonical project name of a requirement (``torch>=0``, ``Torch[x] ; marker``, ``torch
    @ url`` are all ``torch``); a line that is no requirement keeps its leading word."""
    import re

    from dtkguard.decision import canonical

    text = spec.split(" #", 1)[0].strip()
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", text):
        return canonical(text)  # a bare name: no need to load the requirement parser
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return canonical(Requirement(text).name)
    except InvalidRequirement:
        return canonical(re.split(r"[\s<>=!~;\[@(,]", text, maxsplit=1)[0])


def uninstall_names(cmd: PipCommand) -> list[str]:
    """The projects ``pip uninstall`` is asked to remove: arguments and ``-r`` files."""
    from pathlib import Path

    names = [requirement_name(a) for a in cmd.positionals()]
    for req_file in cmd.option_values("-r", "--requirement"):
        try:
            lines = Path(req_file).read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        names += [
            requirement_name(ln)
            for ln in lines
            if ln.strip() and not ln.lstrip().startswith(("#", "-"))
        ]
    return [n for n in names if n]
