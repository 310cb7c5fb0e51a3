"""`check`: does the target still hold the vendor builds its policy names, and nothing it denies?
The environment's and the stack's rules (no hy-smi: check is the fast build gate), ``drift`` with a
lock."""

from __future__ import annotations

from dtkguard.audit.request import Request, evaluate, open_request, stack_inputs

TYPE_CHECKING = False
if TYPE_CHECKING:
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
