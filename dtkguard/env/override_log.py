"""Overrides: who installed past the guard, when, why, and what it let through."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from dtkguard.util.safe_read import read_capped

#: the override log is one short JSON line per override
MAX_LOG_BYTES = 16 << 20

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
) -> dict:
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


def read(path: Path) -> Iterator[tuple[int, dict | None]]:
    """(line number, record or None when the line is not a JSON object)."""
    try:
        text = read_capped(path, MAX_LOG_BYTES, what="override log").decode("utf-8", "replace")
    except OSError:
        return
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        yield no, data if isinstance(data, dict) else None
