"""Run checks over a context, apply the policy's exceptions, report their housekeeping.

`dtkguard.rules.catalog.FAMILIES` names every built-in check family and its module, which
declares the rules it reports (``RULES``) and checks them (``check``); third parties add
checks through the ``dtkguard.checks`` entry point group (a callable taking a `CheckContext`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator

from dtkguard.findings import Finding, sort_key
from dtkguard.rules.catalog import EXCEPTION_EXPIRED, EXCEPTION_UNUSED, FAMILIES

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as _dt

    from dtkguard.policy.compiled import CompiledPolicy
    from dtkguard.rules.context import CheckContext

#: a check (the context is imported for type checkers only: scan-model applies exceptions
#: without the environment stack it imports)
Check = Callable[["CheckContext"], Iterable[Finding]]

#: family -> "module:function" (families are registered in `dtkguard.rules.catalog.FAMILIES`)
CHECKS: dict[str, str] = {family: f"{module}:check" for family, module in FAMILIES.items()}
ENVIRONMENT_CHECKS = (
    "vendor", "deny", "dtk", "torch-build", "override", "baseline", "store", "binary"
)  # fmt: skip


def load_check(family: str) -> Check:
    module, _, func = CHECKS[family].partition(":")
    check: Check = getattr(importlib.import_module(module), func)
    return check


GROUP = "dtkguard.checks"


def plugin_checks(paths: list[str] | None = None) -> list[Check]:
    """Checks registered by other packages under the ``dtkguard.checks`` entry point group.

    A direct scan of ``entry_points.txt`` files: importing ``importlib.metadata`` and parsing
    every distribution's metadata would cost more than the whole check of a 150-dist env.
    """
    import os
    import sys

    checks: list[Check] = []
    seen: set[str] = set()
    for entry in paths if paths is not None else sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if not name.endswith(".dist-info") or name in seen:
                continue
            seen.add(name)
            try:
                with open(os.path.join(entry, name, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            if f"[{GROUP}]" in text:
                checks += [_load_entry(value) for value in _group_values(text)]
    return checks


def _group_values(text: str) -> list[str]:
    values, inside = [], False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            inside = line == f"[{GROUP}]"
        elif inside and "=" in line and not line.startswith(("#", ";")):
            values.append(line.split("=", 1)[1].strip())
    return values


def _load_entry(value: str) -> Check:
    module, _, attr = value.partition(":")
    obj = importlib.import_module(module.strip())
    for part in attr.strip().split(".") if attr.strip() else ():
        obj = getattr(obj, part)
    return obj  # type: ignore[return-value]  # what the entry point names; the caller checks it


def run_checks(
    ctx: CheckContext,
    families: Iterable[str] = ENVIRONMENT_CHECKS,
    *,
    plugins: bool = True,
    housekeeping: bool = True,
    timings: dict[str, float] | None = None,
) -> list[Finding]:
    """All findings of ``families`` (and plugins), with exceptions applied, most severe first.

    ``timings`` receives the seconds each family took (JUnit reports them per rule).
    """
    import time

    checks = [(f, load_check(f)) for f in families]
    if plugins:
        checks += [("plugins", check) for check in plugin_checks()]
    raw: list[Finding] = []
    for family, check in checks:
        start = time.perf_counter()
        raw += check(ctx)
        if timings is not None:
            timings[family] = timings.get(family, 0.0) + time.perf_counter() - start
    findings = apply_exceptions(ctx.policy, raw, today=ctx.today, housekeeping=housekeeping)
    return sorted(findings, key=sort_key)


def apply_exceptions(
    policy: CompiledPolicy,
    findings: Iterable[Finding],
    *,
    today: _dt.date | None = None,
    housekeeping: bool = True,
) -> list[Finding]:
    """Drop findings an unexpired exception covers; report expired and unused exceptions.

    Every command that reports findings passes them through here, so a waiver in the policy
    means the same to `check`, `audit`, `scan-model`, `exec` and dtkpip.
    """
    if not policy.exceptions:
        return list(findings)
    return list(_waive(policy, findings, today, housekeeping))


def _waive(
    policy: CompiledPolicy, findings: Iterable[Finding], today: _dt.date | None, housekeeping: bool
) -> Iterator[Finding]:
    import datetime as _dt

    today = today or _dt.date.today()
    used: set[int] = set()
    for finding in findings:
        waiver = next(
            (i for i, e in enumerate(policy.exceptions) if e.covers(finding.rule, finding.subject)),
            None,
        )
        if waiver is not None and policy.exceptions[waiver].active(today):
            used.add(waiver)
            continue
        yield finding
    if not housekeeping:
        return
    where = policy.files[0] if policy.files else None
    for i, exc in enumerate(policy.exceptions):
        subject = f"{exc.rule}:{exc.package}"
        if not exc.active(today):
            yield EXCEPTION_EXPIRED.finding(
                subject,
                f"exception for {exc.rule} on {exc.package} expired on {exc.expires} "
                f"({exc.reason})",
                "renew it with a new expiry date or remove it",
                where,
                {"expires": exc.expires},
            )
        elif i not in used:
            yield EXCEPTION_UNUSED.finding(
                subject,
                f"exception for {exc.rule} on {exc.package} matched nothing",
                "remove it from the policy",
                where,
                {"expires": exc.expires},
            )
