"""What pip would install without the vendor pins, to explain a request they make impossible.

The whole resolution without the pins costs as much as pip doing the damage. What a veto must
say is only what the request does to the vendor builds and which refused packages it adds:
that follows from the requested packages (pip's plan of them alone, ``--no-deps``) and the
closure of those of their requirements the decision core refuses (another build of a vendor
package, a denied name), resolved without the pins (not requested, as in the whole plan: the
suggestions and their probes are for what was asked for). The rest of the request's closure
(the packages the environment has already, at most upgraded) is left out; the veto says so.
Where no requirement is refused that way, the whole resolution is the explanation.
"""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement

from dtkguard.decision import canonical, deny_rule
from dtkguard.guard.plan import Plan, dry_run
from dtkguard.policy.compiled import CompiledPolicy


def refused_requirements(plan: Plan, policy: CompiledPolicy) -> list[str]:
    """The requirements of the requested packages of ``plan`` (their markers evaluated)
    that the decision core refuses whatever version pip picks: a vendor package's other
    build (a specifier the vendor pin does not meet), a denied name."""
    data = policy.decision_json()
    out: list[str] = []
    for planned in plan.install:
        if not planned.requested:
            continue
        for line in planned.requires_dist:
            try:
                req = Requirement(line)
                if req.marker is not None and not req.marker.evaluate(
                    {**plan.environment, "extra": ""}
                ):
                    continue
            except (InvalidRequirement, ValueError, KeyError):
                continue
            pin = policy.vendor_build(req.name)
            other = pin is not None and not req.specifier.contains(pin, prereleases=True)
            if other or (pin is None and deny_rule(data, req.name) is not None):
                spec = f"{canonical(req.name)}{req.specifier}"
                if spec not in out:
                    out.append(spec)
    return out


def free_plan(
    python: str,
    global_args: list[str],
    install_args: list[str],
    options: list[str],
    policy: CompiledPolicy,
    env: dict[str, str],
    head: Plan | None = None,
) -> Plan:
    """pip's plan without the pins: the requested packages (``head``: known already, else
    planned ``--no-deps``) with the closure of their refused requirements when there are any
    (``Plan.partial``), else the whole plan."""
    if head is None:
        head = dry_run(python, global_args, [*install_args, "--no-deps"], None, env)
    refused = refused_requirements(head, policy) if head.ok else []
    if refused:
        rest = dry_run(python, global_args, [*options, *refused], None, env)
        if rest.ok:
            keys = {p.key for p in head.install}
            for p in rest.install:  # requirements of the request, as in the whole plan
                p.requested = False
            head.install += [p for p in rest.install if p.key not in keys]
            head.partial = True
            return head
    return dry_run(python, global_args, install_args, None, env)
