"""Judge a plan with the same rules as `dtkguard check`: the environment after the install,
compared with the environment now. Only findings the plan introduces count."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dtkguard.env.environment import Environment
from dtkguard.findings import Finding, Severity
from dtkguard.guard.plan import Plan, Planned, after_install
from dtkguard.policy.compiled import CompiledPolicy, canonical
from dtkguard.rules.context import CheckContext
from dtkguard.rules.engine import run_checks

#: a veto needs a new finding at or above this severity (the default --fail-on of `check`)
VETO_AT = Severity.HIGH


@dataclass
class Verdict:
    plan: Plan
    before: Environment
    after: Environment
    #: findings present after the install and not before, most severe first
    introduced: list[Finding] = field(default_factory=list)

    @property
    def blocking(self) -> list[Finding]:
        return [f for f in self.introduced if f.severity >= VETO_AT]

    @property
    def blocked(self) -> bool:
        return bool(self.blocking)

    def replaced(self) -> list[tuple[str, str, Planned]]:
        """(name, installed version, what replaces it) for every planned upgrade/downgrade."""
        out = []
        for p in self.plan.install:
            dist = self.before.get(p.name)
            if dist is not None and dist.version != p.version:
                out.append((dist.name, dist.version, p))
        return out

    def added(self) -> list[Planned]:
        return [p for p in self.plan.install if self.before.get(p.name) is None]

    def removed(self) -> list[tuple[str, str]]:
        """(name, installed version) of every installed dist the plan removes for good."""
        return [
            (dist.name, dist.version)
            for dist in (self.before.get(n) for n in removed_for_good(self.plan))
            if dist is not None
        ]


def removed_for_good(plan: Plan) -> list[str]:
    """The names a plan removes and does not install again."""
    keys = {p.key for p in plan.install}
    return [n for n in plan.remove if canonical(n) not in keys]


def vendor_removals(names: list[str], policy: CompiledPolicy) -> list[str]:
    """``name version`` of every vendor build of the policy among ``names`` (to be removed)."""
    out: list[str] = []
    for name in names:
        pin = policy.vendor_build(name)
        if pin and f"{canonical(name)} {pin}" not in out:
            out.append(f"{canonical(name)} {pin}")
    return out


def _removal_findings(plan: Plan, policy: CompiledPolicy) -> list[Finding]:
    """A vendor build the plan removes leaves no DCU build in its place."""
    out = []
    for entry in vendor_removals(removed_for_good(plan), policy):
        name, pin = entry.split(" ", 1)
        out.append(
            Finding(
                "vendor-missing",
                Severity.CRITICAL,
                name,
                f"{name} {pin} (the vendor build) would be removed, leaving no DCU build in its "
                "place",
                f"keep it; to put it back: dtkpip install --no-deps --force-reinstall "
                f"'{name}=={pin}'",
                None,
                {"policy": pin, "policy_name": policy.name},
            )
        )
    return out


def _key(f: Finding) -> tuple[str, str, str | None]:
    """What a finding is about; not its wording, which may mention other packages (a denied
    package "required by" one more dist is the same finding)."""
    return (f.rule, f.subject, f.location)


def judge(before: Environment, plan: Plan, policy: CompiledPolicy, site: Path) -> Verdict:
    after = after_install(before, plan.install, site, removed_for_good(plan))
    old = {_key(f) for f in run_checks(CheckContext(before, policy), housekeeping=False)}
    new = run_checks(CheckContext(after, policy), housekeeping=False)
    seen = {k[:2] for k in old} | {(f.rule, f.subject) for f in new}
    gone = [f for f in _removal_findings(plan, policy) if (f.rule, f.subject) not in seen]
    introduced = gone + [f for f in new if _key(f) not in old]
    return Verdict(plan, before, after, introduced)
