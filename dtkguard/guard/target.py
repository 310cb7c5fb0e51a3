"""Which interpreter dtkpip/dtkuv act on: their ``--python``, pip's/uv's, the active env, or
the one guarded; the interpreter itself is `dtkguard.env.interpreter`."""

from __future__ import annotations

import os
import stat
import sys

from dtkguard.util.purepath import path_mode, pure_path

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from dtkguard.guard.pipargs import PipCommand


def interpreter_path(value: str) -> str:
    """pip's or uv's ``--python`` as an interpreter path (an env directory is its
    ``bin/python``); a version request cannot be judged, so it is refused."""
    from dtkguard.errors import InputError

    path = pure_path(value)
    mode = path_mode(path)
    if mode is not None and stat.S_ISDIR(mode):
        path = pure_path(os.path.join(path, "bin", "python"))
        mode = path_mode(path)
    if mode is None:
        raise InputError(
            f"{value}: name the interpreter to act on as a path (an interpreter or an "
            "environment directory), not a version request",
            field="--python",
        )
    return path


def _same_env(a: str, b: str) -> bool:
    """Two interpreter paths of one environment: the same ``bin/`` (a venv's python is a
    symlink to the base interpreter, so the files themselves cannot be compared)."""
    return os.path.realpath(os.path.dirname(os.path.abspath(a))) == os.path.realpath(
        os.path.dirname(os.path.abspath(b))
    )


#: pip's and uv's options that name a place or a source: given empty (an unset variable) pip
#: reads ``--target ''`` as no target (it installs into the environment itself) and uv reads
#: ``--index-url ''`` as its default index, never what was meant
PLACE_OPTIONS = (
    *("-t", "--target", "--prefix", "--root", "--src", "-r", "--requirement", "--requirements"),
    *("-c", "--constraint", "--constraints", "--overrides", "-e", "--editable", "--report"),
    *("-f", "--find-links", "-i", "--index-url", "--extra-index-url", "--index"),
    "--default-index",
)


def refuse_empty_places(cmd: PipCommand, tool: str) -> None:
    """`InputError` (exit 2) for a `PLACE_OPTIONS` option of pip's/uv's given an empty value."""
    from dtkguard.errors import refuse_empty

    refuse_empty({f"{tool[3:]} {o}": cmd.option_values(o) for o in PLACE_OPTIONS})


def choose_python(
    explicit: str | None, tool: str, fallback: str | None = None, given: str | None = None
) -> str:
    """The interpreter dtkpip/dtkuv act on: their ``--python``, else the one pip/uv was told
    (``given``: their own ``--python``), else the active venv/conda env, else ``fallback`` (the
    env of the `uv` shim that ran), else the one interpreter `guard install` guarded; never
    dtkguard's own by accident."""
    from dtkguard.errors import InputError, refuse_empty

    refuse_empty({"--python": explicit, f"{tool[3:]} --python": given})
    told = interpreter_path(given) if given else None
    if explicit and told and not _same_env(explicit, told):
        raise InputError(
            f"{tool} --python {explicit} and the --python {given} given to {tool[3:]} name "
            "different interpreters",
            field="--python",
        )
    if explicit or told:
        return explicit or str(told)
    from dtkguard.env.environment import active_python

    active = active_python() or fallback
    if active:
        return active
    from dtkguard.guard.registry import guarded, registry_file

    known = guarded()
    if len(known) == 1:
        return known[0]
    if known:
        what = f"{len(known)} guarded interpreters are known ({', '.join(known)})"
    else:
        what = f"no guarded interpreter is known ({registry_file()})"
    raise InputError(
        f"no environment is active and {what}: choose one with `{tool} --python PY ...`, or "
        "activate its venv/conda env",
        field="--python",
    )


def say_target(tool: str, python: str) -> None:
    """One line on stderr: the interpreter a tool acts on."""
    sys.stderr.write(f"{tool}: acting on {python}\n")
    sys.stderr.flush()
