"""Overrides: who installed past the guard, when, why, and what it let through."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from dtkguard.util.json_types import JSON

ENV_VAR = "DTKGUARD_OVERRIDE"
#: the one-time token dtkpip hands its pip child: the hook does not record the override again
#: when the token file exists (it deletes it) and the record carries the same token. A token
#: set by hand, or used once already, makes the hook record the override itself.
TOKEN_VAR = "DTKGUARD_OVERRIDE_TOKEN"


def token_file(path: Path, token: str) -> Path:
    """The file that makes ``token`` valid, beside the overrides record ``path``."""
    return path.parent / f"override-{token}.token"


def record_with_token(
    path: Path, reason: str, argv: list[str], allowed: list[str], tool: str
) -> str:
    """Record the override, then create its one-time token for the pip hook; returns it."""
    import secrets

    token = secrets.token_hex(16)
    record(path, reason, argv, allowed, tool, token=token)
    token_file(path, token).write_text(token + "\n", encoding="utf-8")
    return token


def record(
    path: Path,
    reason: str,
    argv: list[str],
    allowed: list[str],
    tool: str,
    token: str | None = None,
) -> dict[str, JSON]:
    """Append one override to ``path`` (JSON lines; created with its folder)."""
    import getpass

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    entry = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "user": user,
        "reason": reason,
        "argv": argv,
        "tool": tool,
        "allowed": allowed,
    }
    if token:
        entry["token"] = token
    from dtkguard.env.chain import append

    return append(path, entry)  # digest-chained: a removed or edited record is a finding


#: a record is one short JSON line; a longer line is not one of ours
MAX_LINE_BYTES = 64 << 10
#: the whole log is read line by line (memory bounded by one line); past this it stops
MAX_READ_BYTES = 256 << 20


def read(
    path: str | os.PathLike[str], root: object | None = None
) -> Iterator[tuple[int, dict[str, JSON] | str | None]]:
    """(line number, record, or None when the line is not a JSON object of at most
    `MAX_LINE_BYTES`), streamed; a log that cannot be read, or is read only in part (past
    `MAX_READ_BYTES`), ends with (0, why): the `override-log-unreadable` finding. ``root``:
    the `dtkguard.env.root.Root` it is opened confined to."""
    from dtkguard.util.safe_read import human_bytes, open_regular, reason
    from dtkguard.util.text import json_loads

    try:
        fh = open_regular(path, buffering=-1, root=root)
    except FileNotFoundError:
        return
    except OSError as exc:
        yield 0, f"cannot read the override log: {reason(exc)}"
        return
    total = 0
    with fh:
        for no, line in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), 1):
            total += len(line)
            if total > MAX_READ_BYTES:
                yield (
                    0,
                    f"the override log is larger than {human_bytes(MAX_READ_BYTES)}: "
                    "read only in part",
                )
                return
            if not line.strip():
                continue
            data = None
            if len(line) <= MAX_LINE_BYTES:
                try:
                    data = json_loads(line)
                except ValueError:
                    data = None
            else:  # the rest of an overlong line is skipped, not parsed as records
                while line and not line.endswith(b"\n"):
                    line = fh.readline(MAX_LINE_BYTES)
                    total += len(line)
            yield no, data if isinstance(data, dict) else None
