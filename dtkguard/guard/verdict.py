"""Judge a plan with the same rules as `dtkguard check`: the environment after the install,
compared with the environment now. Only findings the plan introduces count."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dtkguard.env.environment import Environment
from dtkguard.findings import Finding, Severity
from dtkguard.guard.plan import Plan, Planned, after_install
from dtkguard.policy.compiled import CompiledPolicy
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


def _key(f: Finding) -> tuple[str, str, str | None]:
    """What a finding is about; not its wording, which may mention other packages (a denied
    package "required by" one more dist is the same finding)."""
    return (f.rule, f.subject, f.location)


def judge(before: Environment, plan: Plan, policy: CompiledPolicy, site: Path) -> Verdict:
    after = after_install(before, plan.install, site)
    old = {_key(f) for f in run_checks(CheckContext(before, policy), housekeeping=False)}
    new = run_checks(CheckContext(after, policy), housekeeping=False)
    return Verdict(plan, before, after, [f for f in new if _key(f) not in old])
