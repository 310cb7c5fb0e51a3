"""Error types. Each maps to one exit code and is turned into one line of text in `cli`."""

from __future__ import annotations

from dtkguard.record import record


class DtkguardError(Exception):
    """Base of every error dtkguard reports to the user (never shown as a traceback)."""

    exit_code = 2

    def line(self) -> str:
        return str(self)


@record
class InputError(DtkguardError):
    """Bad input: a policy, lock, requirement or argument. Exit 2.

    Rendered as ``FILE:LINE:COL field: message`` with the parts that are known.
    """

    message: str
    file: str | None = None
    line_no: int | None = None
    col: int | None = None
    field: str | None = None

    exit_code = 2

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def line(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line_no:  # a known line always comes with a column (1: the line start)
                where += f":{self.line_no}:{max(self.col or 1, 1)}"
            where += ": "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"

    def __str__(self) -> str:
        return self.line()


class PolicyError(InputError):
    """A policy file that cannot be read or does not validate."""


class TargetError(DtkguardError):
    """The target (environment, root, process, container) could not be read. Exit 3."""

    exit_code = 3


def refuse_empty(options: dict[str, object]) -> None:
    """`InputError` for the first option given an empty value (``--root "$VAR"`` with VAR
    unset): an empty path, interpreter, PID or name never means "the default". The one check
    every command and dtkpip/dtkuv run on what they were given (None: not given)."""
    for name, value in options.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            raise InputError(
                "empty value (an unset variable?); name it or leave the option out", field=name
            )
