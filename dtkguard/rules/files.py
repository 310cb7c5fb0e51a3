"""file-modified, file-missing, record-unverifiable: a `Verification` turned into findings.

The hashing lives in `dtkguard.audit.verify`; this family reads its result from
``ctx.extra["verification"]`` and yields nothing without one. Issues are grouped per
(distribution, category) so one tampered package gives one finding listing its files.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo

#: the rules this family reports, with their default severity (collected by
#: `dtkguard.rules.catalog`)
RULES = (
    RuleInfo(
        "file-modified",
        Severity.HIGH,
        "Installed file differs from RECORD",
        "The file's hash or size differs from what the installer recorded.",
        family="files",
    ),
    RuleInfo(
        "file-missing",
        Severity.HIGH,
        "Installed file missing",
        "A file listed in RECORD is not on disk.",
        family="files",
    ),
    RuleInfo(
        "record-unverifiable",
        Severity.LOW,
        "Installed files cannot be verified",
        "No RECORD, hashless rows or a RECORD that points outside the root.",
        family="files",
    ),
)

#: category -> (rule, severity, what it means, what to do)
CATEGORIES: dict[str, tuple[str, Severity, str, str]] = {
    "modified": (
        "file-modified",
        Severity.HIGH,
        "differ from RECORD",
        "reinstall it: pip install --no-deps --force-reinstall '{name}=={version}'",
    ),
    "shebang": (
        "file-modified",
        Severity.MEDIUM,
        "differ from RECORD only in a rewritten shebang (relocated environment)",
        "reinstall it in place to get scripts RECORD vouches for: pip install --no-deps "
        "--force-reinstall '{name}=={version}'",
    ),
    "missing": (
        "file-missing",
        Severity.HIGH,
        "are listed in RECORD but missing",
        "reinstall it: pip install --no-deps --force-reinstall '{name}=={version}'",
    ),
    "outside": (
        "record-unverifiable",
        Severity.HIGH,
        "are RECORD rows pointing outside the environment (never read)",
        "inspect the RECORD: an installer never writes such rows; reinstall from a trusted wheel",
    ),
    "unreadable": (
        "record-unverifiable",
        Severity.MEDIUM,
        "could not be read or checked",
        "run the audit as a user that can read the environment, or repair the RECORD",
    ),
    "hashless": (
        "record-unverifiable",
        Severity.LOW,
        "have no hash in RECORD",
        "reinstall with a current pip or uv to get a complete RECORD",
    ),
    "no-record": (
        "record-unverifiable",
        Severity.LOW,
        "has no RECORD (egg-info or distutils install)",
        "reinstall it as a wheel",
    ),
    "distro": (
        "record-unverifiable",
        Severity.INFO,
        "is owned by the distribution (no INSTALLER)",
        "verify it with the package manager: dpkg --verify or rpm -V",
    ),
    "editable": (
        "record-unverifiable",
        Severity.INFO,
        "is an editable install: its sources are not in RECORD",
        "install a built wheel in production images",
    ),
    "nonconforming": (
        "record-unverifiable",
        Severity.INFO,
        "has a nonconforming RECORD (hex digests; checked anyway)",
        "nothing to do; the files were verified",
    ),
}
DIST_LEVEL = ("no-record", "distro", "editable", "nonconforming")
LISTED = 20


def _shown(issue: Any) -> str:
    """A file as a message lists it; a modified shared object with what it links now."""
    needed = issue.evidence.get("needed")
    if needed is None:
        path: str = issue.path
        return path
    return f"{issue.path} (now links {', '.join(needed) or 'no library'})"


def check(ctx: CheckContext) -> Iterator[Finding]:
    result: Any = ctx.extra.get("verification")
    if result is None:
        return
    groups: dict[tuple[str, str], list[Any]] = {}
    for issue in result.issues:
        groups.setdefault((issue.dist, issue.kind), []).append(issue)
    for (name, kind), issues in sorted(groups.items()):
        rule, severity, meaning, fix = CATEGORIES[kind]
        first = issues[0]
        version = first.version
        fix = fix.format(name=name, version=version)
        if kind in DIST_LEVEL:
            message = f"{name} {version} {meaning}"
            if first.detail and kind not in ("distro", "editable"):
                message += f": {first.detail}"
            evidence: dict[str, Any] = {"category": kind, **first.evidence}
        else:
            paths = [i.path for i in issues]
            shown = ", ".join(_shown(i) for i in issues[:3])
            shown += f" and {len(paths) - 3} more" if len(paths) > 3 else ""
            message = f"{len(paths)} file(s) of {name} {version} {meaning}: {shown}"
            evidence = {
                "category": kind,
                "count": len(paths),
                "files": [{"path": i.path, "detail": i.detail, **i.evidence} for i in issues][
                    :LISTED
                ],
            }
        evidence.setdefault("record", first.record)
        location = first.record if kind in DIST_LEVEL else first.path
        yield Finding(rule, severity, name, message, fix, location, evidence)
