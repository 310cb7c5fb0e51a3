"""override-used: someone installed past the guard; the record inside the environment says so."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from dtkguard.env.interpreter import STATE_DIR
from dtkguard.env.override_log import read
from dtkguard.env.root import ConfinementError
from dtkguard.env.store_path import OVERRIDES_FILE
from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo
from dtkguard.util.purepath import pure_path

OVERRIDE_USED = RuleInfo(
    "override-used",
    Severity.HIGH,
    "Guard override used",
    "Someone installed past the guard with an explicit override; the record "
    "says who, when and why.",
    family="override",
)

OVERRIDE_LOG_UNREADABLE = RuleInfo(
    "override-log-unreadable",
    Severity.HIGH,
    "The override log cannot be read",
    "The guard's override log could not be read whole (not a regular file, unreadable, or "
    "past its size limit): overrides in it may be unreported. Inspect it; it should only be "
    "appended to by dtkguard.",
    family="override",
)

#: the rules this family reports, with their default severity (collected by
#: `dtkguard.rules.catalog`)
RULES = (OVERRIDE_USED, OVERRIDE_LOG_UNREADABLE)

_SITE = re.compile(r"^(.*)/lib(?:64)?/python3[^/]*/(?:site|dist)-packages$")


def _records(ctx: CheckContext) -> list[str]:
    """Host paths of the override logs of the environment's interpreter prefixes: the guard
    store's (for an env of this host) and one inside the prefix (before the store, images)."""
    env = ctx.env
    prefixes: set[str] = set()
    if env.target.prefix:
        prefixes.add(env.target.prefix)
    for site in env.sites:
        match = _SITE.match(env.root.inner(site))
        if match:
            prefixes.add(match.group(1) or "/")
    out = []
    for prefix in sorted(prefixes):
        inner = f"{prefix.rstrip('/')}/{STATE_DIR}/{OVERRIDES_FILE}"
        try:
            host = pure_path(inner) if env.root.is_host else env.root.resolve_text(inner)
        except ConfinementError:
            continue
        if env.root.lexists(host) and host not in out:  # a FIFO there is a finding too
            out.append(host)
        if env.root.is_host:
            from dtkguard.env.store import env_store

            stored = env_store(prefix).text(OVERRIDES_FILE)
            if os.path.lexists(stored) and stored not in out:
                out.append(stored)
    return out


def check(ctx: CheckContext) -> Iterator[Finding]:
    for path in _records(ctx):
        where = ctx.env.root.inner(path)
        for no, entry in read(path, ctx.env.root):
            if isinstance(entry, str):
                yield OVERRIDE_LOG_UNREADABLE.finding(
                    "guard",
                    f"{where}: {entry}",
                    "inspect the override log; it should only be appended to by dtkguard",
                    where,
                    {},
                )
                continue
            if entry is None:
                yield OVERRIDE_USED.finding(
                    "guard",
                    f"unreadable override record (line {no})",
                    "inspect the override log; it should only be appended to by dtkguard",
                    f"{where}:{no}",
                    {},
                )
                continue
            allowed = entry.get("allowed") or []
            what = "; ".join(map(str, allowed)) if allowed else "nothing the guard would stop"
            yield OVERRIDE_USED.finding(
                "guard",
                f"{entry.get('user', '?')} overrode the guard on {entry.get('time', '?')} "
                f"({entry.get('reason', '')!s}): {what}",
                "check that the environment still holds the vendor builds (dtkguard check), "
                "then remove or archive the record",
                f"{where}:{no}",
                {k: entry.get(k) for k in ("time", "user", "reason", "argv", "tool", "allowed")},
            )
