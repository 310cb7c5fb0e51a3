"""drift-missing, drift-version, drift-extra: the installed set against a PEP 751 lock.

The lock comes in ``ctx.extra["lock"]`` (a `dtkguard.lock.read.Lock`); without one the family
yields nothing. Names compare canonically, versions as PEP 440 versions (local labels
included: ``2.4.1+das.opt1.dtk25041`` is not ``2.4.1``). A replaced vendor build is also
reported, as critical, by the ``vendor`` family.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from packaging.version import InvalidVersion, Version

from dtkguard.decision import canonical
from dtkguard.env.dist import Dist
from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo

DRIFT_MISSING = RuleInfo(
    "drift-missing",
    Severity.HIGH,
    "Locked package missing",
    "A package in the lock is not installed.",
    family="drift",
)

DRIFT_VERSION = RuleInfo(
    "drift-version",
    Severity.HIGH,
    "Installed version differs from the lock",
    "The installed version is not the locked one.",
    family="drift",
)

DRIFT_EXTRA = RuleInfo(
    "drift-extra",
    Severity.MEDIUM,
    "Package not in the lock",
    "A package is installed that the lock does not list.",
    family="drift",
)

#: the rules this family reports, with their default severity (collected by
#: `dtkguard.rules.catalog`)
RULES = (DRIFT_MISSING, DRIFT_VERSION, DRIFT_EXTRA)

#: installed by the environment's own bootstrap (venv and virtualenv seed pip, setuptools
#: and wheel) or dtkguard itself: never "not in the lock"
NEVER_EXTRA = frozenset({"pip", "setuptools", "wheel", "dtkguard"})


def same(a: str, b: str) -> bool:
    """PEP 440 equality (``1.0`` == ``1.0.0``, local labels significant)."""
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a.strip() == b.strip()


#: the ``X.Y`` a marker is tried with when the target's Python is unknown
_ANY_PYTHON = ("2.7", *(f"3.{minor}" for minor in range(21)))


def marker_applies(marker: str | None, known: dict[str, str]) -> bool:
    """Whether a package's marker holds for the target, evaluated with the marker values known
    of it (`TargetIdentity.markers`); an unknown Python counts as any (the package is kept when
    some version matches), an odd marker keeps the package."""
    if not marker:
        return True
    from packaging.markers import Marker

    try:
        parsed = Marker(marker)
        if "python_version" in known:
            return bool(parsed.evaluate(dict(known)))
        return any(
            parsed.evaluate({**known, "python_version": v, "python_full_version": f"{v}.0"})
            for v in _ANY_PYTHON
        )
    except Exception:  # an invalid marker, undefined names: keep the package
        return True


def _other_python(lock: Any, known: dict[str, str]) -> str:
    """One line when the lock is for another Python than the target's ("" when it is not,
    or when either is unknown): then nothing of it can be compared. Only ``X.Y`` of the
    target is known: any of its patch releases that the lock's requires-python takes counts."""
    spec, have = lock.pylock.requires_python, known.get("python_version")
    if spec is None or not str(spec) or not have:
        return ""
    wanted = str(spec)
    if any(spec.contains(f"{have}.{patch}", prereleases=True) for patch in range(64)):
        return ""
    return (
        f"the lock is for Python {wanted} (requires-python) and the target runs Python {have}: "
        "none of its packages can be compared"
    )


def pick_group(ctx: CheckContext, names: set[str]) -> list[Dist]:
    """The dists of the interpreter the lock describes: the group that holds most locked names."""
    groups = ctx.env.groups()
    if len(groups) <= 1:
        return list(ctx.env.dists)
    return max(groups.values(), key=lambda ds: sum(d.key in names for d in ds))


def check(ctx: CheckContext) -> Iterator[Finding]:
    lock: Any = ctx.extra.get("lock")
    if lock is None:
        return
    known = ctx.env.target.markers()  # the target's Python, as reports show it: not dtkguard's
    where = str(lock.path)
    other = _other_python(lock, known)
    if other:
        yield DRIFT_MISSING.finding(
            where, other, "compare the target with a lock made for its Python", where, {}
        )
        return
    pins = list(lock.pins())  # (name, version, marker): packages, then installed entries
    locked = {
        canonical(name): (name, version) for name, version, m in pins if marker_applies(m, known)
    }
    all_locked = {canonical(name) for name, _, _ in pins}
    dists = pick_group(ctx, set(locked))
    installed = {d.key: d for d in dists}
    for key, (name, version) in sorted(locked.items()):
        dist = installed.get(key)
        if dist is None:
            yield DRIFT_MISSING.finding(
                key,
                f"{name} {version or ''} is in the lock but not installed".replace("  ", " "),
                f"reinstall from the lock: pip install --no-deps '{name}=={version}'"
                if version
                else f"reinstall {name} from the lock",
                where,
                {"locked": version, "lock": where},
            )
        elif version and not same(dist.version, version):
            yield DRIFT_VERSION.finding(
                key,
                f"{dist.name} {dist.version} is installed; the lock has {version}",
                f"reinstall the locked version: pip install --no-deps --force-reinstall "
                f"'{name}=={version}'",
                f"{dist.location}/METADATA",
                {"installed": dist.version, "locked": version, "lock": where},
            )
    severity = Severity.parse(ctx.policy.drift_extra_severity)
    for key, dist in sorted(installed.items()):
        if key in all_locked or key in NEVER_EXTRA:
            continue
        yield Finding(
            "drift-extra",
            severity,
            key,
            f"{dist.name} {dist.version} is installed but not in the lock",
            f"uninstall it (pip uninstall {dist.name}) or relock with it",
            f"{dist.location}/METADATA",
            {"installed": dist.version, "lock": where, "installer": dist.installer},
        )
