"""Judge a plan with the same rules as `dtkguard check`: the environment after the install,
compared with the environment now. Only findings the plan introduces count."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dtkguard.decision import canonical
from dtkguard.env.environment import Environment
from dtkguard.errors import InputError
from dtkguard.findings import Finding, Severity
from dtkguard.guard.plan import Plan, Planned, after_install
from dtkguard.lightclass import field, record
from dtkguard.policy.compiled import CompiledPolicy
from dtkguard.rules.context import CheckContext
from dtkguard.rules.engine import ENVIRONMENT_CHECKS, run_checks

#: a veto needs a new finding at or above this severity (the default --fail-on of `check`)
VETO_AT = Severity.HIGH


@record
class Verdict:
    plan: Plan
    before: Environment
    after: Environment
    #: findings present after the install and not before, most severe first
    introduced: list[Finding] = field(default_factory=list)
    #: ``name version`` of planned dists whose wheels could not be read before the install
    unjudged: list[str] = field(default_factory=list)

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


def binary_findings(
    plan: Plan, policy: CompiledPolicy, locate: Callable[[Planned], list[Path] | None]
) -> tuple[list[Finding], list[str]]:
    """The shared objects of every wheel the plan installs, judged by what they link (the
    policy's exceptions applied), and the names whose wheels ``locate`` could not find."""
    from dtkguard.resolve.binaries import wheel_findings
    from dtkguard.rules.engine import apply_exceptions

    found: list[Finding] = []
    unseen: list[str] = []
    for planned in plan.install:
        wheels = locate(planned)
        if wheels is None:
            unseen.append(f"{planned.name} {planned.version}")
            continue
        for wheel in wheels:
            found += wheel_findings(policy, planned.name, wheel)
    return apply_exceptions(policy, found, housekeeping=False), unseen


def judge(
    before: Environment,
    plan: Plan,
    policy: CompiledPolicy,
    site: Path,
    locate: Callable[[Planned], list[Path] | None] | None = None,
) -> Verdict:
    """The findings the plan introduces; with ``locate``, also those of its wheels' native
    code (`binary_findings`; the names it could not judge are in ``Verdict.unjudged``)."""
    gone_names = removed_for_good(plan)
    after = after_install(before, plan.install, site, gone_names)
    # the baseline family compares the files on disk, which a plan has not changed yet: the
    # environment after it has the same findings there, none of them introduced. Its rule ids
    # are its own, so before the change it matters only to a plan that removes (vendor-missing).
    # The store family judges the guard's own state (its layers, store, journal), which no
    # plan changes: the same findings before and after, never introduced, so not run at all
    families = [f for f in ENVIRONMENT_CHECKS if f not in ("baseline", "store")]
    now = [f for f in ENVIRONMENT_CHECKS if f != "store"] if gone_names else families
    new = run_checks(CheckContext(after, policy), families, housekeeping=False)
    removal = _removal_findings(plan, policy)
    introduced: list[Finding] = []
    if new or removal:  # else nothing can be introduced: the env before is not judged at all
        old = {_key(f) for f in run_checks(CheckContext(before, policy), now, housekeeping=False)}
        seen = {k[:2] for k in old} | {(f.rule, f.subject) for f in new}
        gone = [f for f in removal if (f.rule, f.subject) not in seen]
        introduced = gone + [f for f in new if _key(f) not in old]
    unjudged: list[str] = []
    if locate is not None:
        binaries, unjudged = binary_findings(plan, policy, locate)
        introduced += binaries
    return Verdict(plan, before, after, introduced, unjudged)


def pip_locator(folder: Path) -> Callable[[Planned], list[Path] | None]:
    """Where the wheel pip's report names is: a ``file:`` URL in place; an ``http(s)`` one is
    downloaded into ``folder`` when its tags say it can hold native code; None otherwise."""
    from dtkguard.resolve.binaries import fetch_wheel, native

    def locate(planned: Planned) -> list[Path] | None:
        url = planned.url
        if not url.endswith(".whl"):
            return None
        if url.startswith(("http://", "https://")) and not native(url):
            return []  # a pure wheel is not downloaded twice; `check` reads it once installed
        try:
            return [fetch_wheel(url, folder)]
        except InputError:  # unreachable from here: pip fetches it itself, `check` judges it
            return None

    return locate


def say_unjudged(tool: str, verdict: Verdict) -> str:
    """The warning for planned dists whose native code could not be read before the install."""
    if not verdict.unjudged:
        return ""
    names = ", ".join(verdict.unjudged)
    return (
        f"{tool}: note: the native code of {names} is not at hand before the install (no local "
        "wheel): it is judged as it is installed, before the install is kept\n"
    )
