"""What `check`, `audit` and `doctor` share: the request, opening its target, policy and lock,
and running rule families into one `Report`.

A command parses its options into a `Request` (or `dtkguard.audit.assemble.AuditRequest`) and
calls one function (`dtkguard.audit.check.check`, `dtkguard.audit.assemble.audit`,
`dtkguard.audit.doctor.doctor`); each opens its inputs with `open_request` and builds its report
with `evaluate`.
"""

from __future__ import annotations

from collections.abc import Iterable

from dtkguard.env.open import TargetSpec
from dtkguard.lightclass import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from dtkguard.env.environment import Environment
    from dtkguard.lock.read import Lock
    from dtkguard.policy.compiled import CompiledPolicy
    from dtkguard.report import Report
    from dtkguard.report.schema import JSONObject


@record
class Request:
    """Which target, under which policy, compared with which lock (the options every target
    command takes)."""

    target: TargetSpec = field(default_factory=TargetSpec)
    policy: str | None = None  # a policy file or bundled name (None: the default policy)
    lock: str | None = None  # a PEP 751 lock to report drift against
    allow_empty: bool = False  # a target with nothing to read passes
    hy_smi_output: str | None = None  # recorded hy-smi output instead of running hy-smi
    expect_devices: bool = False  # the target should reach DCUs


@record
class Opened:
    """The inputs of a request, read."""

    env: Environment
    policy: CompiledPolicy
    lock: Lock | None = None


def open_request(request: Request) -> Opened:
    """The policy and the lock first (exit 2 when they do not read or validate: bad input is
    reported before the target is touched), then the target (exit 3 when it cannot be read or,
    without ``allow_empty``, holds nothing)."""
    from dtkguard.env.open import open_target, require_dists
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known

    policy = load_policy(request.policy, known_rule=is_known)
    lock = None
    if request.lock:
        from dtkguard.lock.read import read_lock

        lock = read_lock(request.lock)
    env = open_target(request.target)
    require_dists(env, request.allow_empty or guarded_here(env))
    return Opened(env, policy, lock)


def guarded_here(env: Environment) -> bool:
    """The guard's store knows the target as a guarded env of this host: an empty one is a
    finding (`env-replaced`, `vendor-missing`), not nothing to check."""
    from dtkguard.env.store import env_store
    from dtkguard.errors import InputError

    if not env.root.is_host or not env.target.prefix:
        return False
    try:
        rec = env_store(env.target.prefix).record()
    except InputError:
        return True
    return rec is not None and rec.guarded


def stack_inputs(
    env: Environment, *, hy_smi_output: str | None, expect_devices: bool, run_hy_smi: bool
) -> dict[str, Any]:
    """``ctx.extra`` entries of the stack rules for ``env`` (see `dtkguard.rules.stack`)."""
    from dtkguard.audit.stack import stack_facts

    live = env.target.live
    facts = stack_facts(env, live=live, hy_smi_output=hy_smi_output, run_hy_smi=run_hy_smi)
    return {"stack": facts, "expect_devices": bool(expect_devices)}


def evaluate(
    opened: Opened,
    command: str,
    families: Iterable[str],
    extra: dict[str, Any],
    *,
    rules: list[str],
    facts: JSONObject,
    inventory: list[JSONObject] | None = None,
    target: JSONObject | None = None,
) -> Report:
    """The `Report` of running the rule ``families`` on the opened target (``rules``: the ids it
    lists as checked; ``target``: the printed target, default the target's own keys)."""
    from dtkguard.report import Report
    from dtkguard.rules.context import CheckContext
    from dtkguard.rules.engine import run_checks

    env, policy = opened.env, opened.policy
    timings: dict[str, float] = {}
    findings = run_checks(CheckContext(env, policy, extra=extra), tuple(families), timings=timings)
    if env.process is not None:  # a process that exited meanwhile: its files went with it
        from dtkguard.env.process_target import still_running

        still_running(env)
    return Report(
        findings,
        target=env.target.to_json() if target is None else target,
        policy=policy.name,
        command=command,
        warnings=env.warnings,
        rules=rules,
        facts=facts,
        inventory=inventory or [],
        timings=timings,
    )
