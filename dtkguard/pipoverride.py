"""An override of a guarded pip run: its reason, dtkpip's one-time token, and its record.

Standard library only, no dtkguard imports: ``guard install`` copies it beside the pip hook as
``_dtkguard_pipoverride.py`` (checked by ``guard status`` as ``decision.py`` is). The hook lets
an install through when ``DTKGUARD_OVERRIDE`` gives a reason (`reason`), and records what it
let through in ``overrides.jsonl`` (`record`): in the guard's store folder when the env's
pointer names one this user may write, else beside the policy (`log_dir`), as a digest-chained
log (`chain_append`, the format of `dtkguard.env.chain`, which `dtkguard.env.override_log`
reads). When dtkpip recorded the override itself, it hands its pip child a one-time token
(`token_recorded`) and the hook does not record it again.
"""

from __future__ import annotations

import fcntl
import json
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

#: the reason of an override (the same name as ``dtkguard.env.override_log.ENV_VAR``)
ENV_VAR = "DTKGUARD_OVERRIDE"
#: dtkpip's one-time token (``dtkguard.env.override_log.TOKEN_VAR``)
TOKEN_VAR = "DTKGUARD_OVERRIDE_TOKEN"
LOG = "overrides.jsonl"


def reason(environ: Mapping[str, str]) -> str:
    """The reason the override in ``environ`` gives ("" when there is none)."""
    return environ.get(ENV_VAR, "").strip()


def log_dir(policy_path: str | None) -> str:
    """Where the override log is: the guard's store folder the env's pointer (``store.json``
    beside the policy ``policy_path``) names when this user may write it, else the folder of
    the policy."""
    here = os.path.dirname(policy_path or ".")
    try:
        with open(os.path.join(here, "store.json"), encoding="utf-8") as fh:
            store = json.load(fh).get("store")
        if isinstance(store, str) and os.path.isdir(store) and os.access(store, os.W_OK):
            return store
    except (OSError, ValueError, AttributeError):
        pass
    return here


def token_recorded(environ: Mapping[str, str], policy_path: str | None) -> bool:
    """Did dtkpip record this override itself? Its one-time token (``environ``'s `TOKEN_VAR`)
    file exists (it is consumed here) and the record in the log carries the same token."""
    token = environ.get(TOKEN_VAR, "").strip()
    if not token or not token.isalnum():
        return False
    state = log_dir(policy_path)
    try:
        os.unlink(os.path.join(state, f"override-{token}.token"))
    except OSError:
        return False  # forged, or used already: record again
    try:
        with open(os.path.join(state, LOG), encoding="utf-8") as fh:
            for line in fh:
                if token in line and json.loads(line).get("token") == token:
                    return True
    except (OSError, ValueError):
        pass
    return False


def chain_append(path: str, entry: Mapping[str, Any]) -> None:
    """Append ``entry`` to the digest-chained log ``path`` (`dtkguard.env.chain`'s format:
    ``prev`` is the sha256 of the previous line; ``<log>.head`` holds the count and the last
    line's digest)."""
    private = os.O_CREAT  # with mode 0o600: the store's files are the owner's, whatever the umask
    with os.fdopen(os.open(path + ".lock", os.O_RDWR | private, 0o600), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path, encoding="utf-8") as fh:
                lines = [ln for ln in fh.read().splitlines() if ln.strip()]
        except FileNotFoundError:
            lines = []
        import hashlib  # here, as getpass below: a run with no override loads neither

        prev = (
            hashlib.sha256(lines[-1].encode("utf-8", "surrogateescape")).hexdigest()
            if lines
            else ""
        )
        line = json.dumps({**entry, "prev": prev}, sort_keys=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | private, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
        tmp = f"{path}.head.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | private, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            last = hashlib.sha256(line.encode("utf-8", "surrogateescape")).hexdigest()
            fh.write(f"{len(lines) + 1} {last}\n")
        os.replace(tmp, path + ".head")


def entry(reason: str, allowed: list[str], argv: Iterable[str]) -> dict[str, Any]:
    """The record of an override the hook let through: when, who, why, the command line
    (``argv``) and what it allowed."""
    import getpass

    try:
        user = getpass.getuser()
    except Exception:
        user = str(os.getuid()) if hasattr(os, "getuid") else "?"
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "user": user,
        "reason": reason,
        "argv": list(argv),
        "tool": "pip-hook",
        "allowed": allowed,
    }


def record(policy_path: str | None, reason: str, allowed: list[str], argv: Iterable[str]) -> None:
    """Append the override to the override log of the guard of policy ``policy_path``."""
    chain_append(os.path.join(log_dir(policy_path), LOG), entry(reason, allowed, argv))
