"""`check`: does the target still hold the vendor builds its policy names, and nothing it denies?
The environment's and the stack's rules (no hy-smi: check is the fast build gate), ``drift`` with a
lock."""

from __future__ import annotations

import os

from dtkguard.audit.request import Request, evaluate, open_request, stack_inputs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.env.store import Record
    from dtkguard.report import Report


def check(request: Request) -> Report:
    """The `Report` of checking ``request``'s target."""
    from dtkguard.rules.catalog import checked_by
    from dtkguard.rules.engine import ENVIRONMENT_CHECKS

    opened = open_request(request)
    env = opened.env
    families = ENVIRONMENT_CHECKS + ("stack",) + (("drift",) if opened.lock else ())
    stack = stack_inputs(
        env,
        hy_smi_output=request.hy_smi_output,
        expect_devices=request.expect_devices,
        run_hy_smi=False,
    )
    facts = {"dists": len(env.dists), "sites": [env.root.inner(s) for s in env.sites]}
    return evaluate(
        opened,
        "check",
        families,
        {"lock": opened.lock, **stack},
        rules=checked_by(families),
        facts=facts,
    )


def check_all_guarded(request: Request) -> list[Report]:
    """One `Report` per env the guard's store knows as guarded, by prefix (``request``'s
    target is replaced by each env's interpreter). An env whose interpreter is gone is reported
    `env-replaced` without being read."""
    from dtkguard.env.open import TargetSpec
    from dtkguard.env.store import known_envs
    from dtkguard.record import replace

    reports = []
    for _, rec in known_envs():
        if not rec.guarded:
            continue
        python = rec.identity.python
        if not os.path.exists(python):
            reports.append(_gone(rec, request))
            continue
        spec = TargetSpec(python=python)
        reports.append(check(replace(request, target=spec, allow_empty=True)))
    return reports


def _gone(rec: Record, request: Request) -> Report:
    """The report of a guarded env whose interpreter no longer exists."""
    from dtkguard.env.baseline import restore_command
    from dtkguard.policy.load import load_policy
    from dtkguard.report import Report
    from dtkguard.rules.catalog import is_known
    from dtkguard.rules.guard_store import ENV_REPLACED

    ident = rec.identity
    finding = ENV_REPLACED.finding(
        "guard",
        f"the environment {ident.prefix} guarded on {rec.created} is gone: no {ident.python}",
        f"rebuild it from the store: {restore_command(ident.python)}",
        ident.prefix,
        {"recorded": rec.created},
    )
    policy = load_policy(request.policy, known_rule=is_known)
    target = {"kind": "python", "python": ident.python, "prefix": ident.prefix}
    return Report([finding], target=target, policy=policy.name, rules=[ENV_REPLACED.id])
