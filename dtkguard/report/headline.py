"""The answer first: what happened to the target, the one command that fixes it, and the
findings grouped by rule and reason (the 14 nvidia-* wheels under one heading).

Every human format (table, markdown, the fleet view's markdown) prints this before the details;
the json report carries it as ``headline`` (its ``summary`` has held the counts since schema 1).
"""

from __future__ import annotations

from dtkguard.findings import Finding, Severity
from dtkguard.record import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.report.model import Report
    from dtkguard.report.schema import GroupDict, HeadlineDict

#: subjects named in a group's heading before "and N more"
SHOWN = 6
#: rules a `dtkguard restore` takes care of (the vendor builds, what nobody approved)
RESTORED = frozenset(
    {
        "vendor-replaced",
        "vendor-mismatch",
        "vendor-missing",
        "vendor-not-baseline",
        "vendor-files-changed",
        "vendor-deps-broken",
        "denied-package",
        "torch-build",
        "torch-abi",
        "dtk-mixed",
        "override-used",
    }
)


@record
class Group:
    """Findings of one rule with one reason."""

    rule: str
    severity: Severity
    reason: str
    subjects: list[str] = field(default_factory=list)
    #: how many findings (several override records share the subject ``guard``)
    count: int = 0

    def heading(self) -> str:
        shown = ", ".join(self.subjects[:SHOWN])
        more = f" and {len(self.subjects) - SHOWN} more" if len(self.subjects) > SHOWN else ""
        many = max(self.count, len(self.subjects))
        count = f" x{many}" if many > 1 else ""
        return f"{self.rule}{count} [{shown}{more}]: {self.reason}"

    def to_dict(self) -> GroupDict:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "reason": self.reason,
            "subjects": self.subjects,
        }


@record
class Headline:
    """What happened (phrases), the command that fixes it ("" none), and the groups."""

    happened: list[str]
    fix: str
    groups: list[Group]
    #: the fix leaves these rules' findings (a restore does not reach them)
    beyond_fix: list[str] = field(default_factory=list)

    def to_dict(self) -> HeadlineDict:
        return {
            "happened": self.happened,
            "fix": self.fix or None,
            "beyond_fix": self.beyond_fix,
            "groups": [g.to_dict() for g in self.groups],
        }


def _reason(f: Finding) -> str:
    """The part of a finding's message that its group shares."""
    from dtkguard.rules.catalog import info

    if f.rule == "denied-package" and ": " in f.message:
        reason = f.message.split(": ", 1)[1]
        return reason.split("; required by ", 1)[0]
    if f.rule == "override-used":  # the record's reason, never the list of all it let in
        why = f.evidence.get("reason")
        return info(f.rule).title.lower() + (f" ({why})" if why else "")
    return info(f.rule).title.lower() if f.rule in _BY_TITLE else f.message


#: rules whose messages differ per subject: grouped under their catalog title
_BY_TITLE = frozenset(
    {
        "vendor-replaced",
        "vendor-mismatch",
        "vendor-missing",
        "vendor-not-baseline",
        "vendor-files-changed",
        "drift-missing",
        "drift-version",
        "drift-extra",
        "file-modified",
        "file-missing",
        "record-unverifiable",
        "torch-abi",
        "dtk-mixed",
        "exception-unused",
        "exception-expired",
    }
)


def groups(findings: list[Finding]) -> list[Group]:
    """Findings grouped by (rule, reason), most severe first, in report order."""
    out: dict[tuple[str, str], Group] = {}
    for f in findings:
        key = (f.rule, _reason(f))
        group = out.setdefault(key, Group(f.rule, f.severity, key[1]))
        group.severity = max(group.severity, f.severity, key=lambda s: s.rank)
        group.count += 1
        if f.subject not in group.subjects:
            group.subjects.append(f.subject)
    return sorted(out.values(), key=lambda g: -g.severity.rank)


#: baseline rules whose finding says the vendor build was there at `guard install`
_WAS_THERE = frozenset({"vendor-missing", "vendor-not-baseline", "vendor-files-changed"})


def _happened(findings: list[Finding]) -> list[str]:
    """``torch 2.4.1+das… replaced by community 2.7.0``, ``14 nvidia-* wheels added``, ..."""
    out: list[str] = []
    replaced = {f.subject for f in findings if f.rule == "vendor-replaced"}
    recorded = {f.subject for f in findings if f.rule in _WAS_THERE}
    for f in findings:
        ev = f.evidence
        if f.rule == "vendor-replaced" and ev.get("policy") and ev.get("installed"):
            kind = "a community CUDA build" if "+cu" in str(ev["installed"]) else "community"
            if f.subject in recorded:  # the baseline had the vendor build: it was replaced
                out.append(f"{f.subject} {ev['policy']} replaced by {kind} {ev['installed']}")
            else:  # it may never have been there (nothing recorded says it was)
                out.append(f"{f.subject} is {kind} {ev['installed']}, not {ev['policy']}")
        elif f.rule == "vendor-replaced":
            out.append(f"{f.subject} replaced by a community build")
        elif f.rule == "vendor-mismatch":
            out.append(f"{f.subject}: another vendor build {ev.get('installed')}")
        elif f.rule == "vendor-missing" and f.subject not in replaced:
            out.append(f"{ev.get('expected') or f.subject} gone")
        elif f.rule == "vendor-not-baseline" and f.subject not in replaced:
            out.append(f"{f.subject} is not the baseline's build")
        elif f.rule == "vendor-files-changed":
            out.append(f"files of {f.subject} changed")
    denied = [f.subject for f in findings if f.rule == "denied-package"]
    nvidia = [s for s in denied if s.startswith("nvidia-")]
    if nvidia:
        out.append(f"{len(nvidia)} nvidia-* wheel(s) added")
    others = [s for s in denied if not s.startswith("nvidia-")]
    if others:
        out.append("denied " + ", ".join(others[:SHOWN]) + (" ..." if len(others) > SHOWN else ""))
    return list(dict.fromkeys(out))


def _fix(findings: list[Finding]) -> str:
    """The restore command a baseline finding names, when there is one."""
    for f in findings:
        at = f.remediation.find("dtkguard restore")
        if at >= 0:
            return f.remediation[at:].split(" -- ", 1)[0].rstrip(".;) ")
    return ""


def headline(report: Report, fail_on: Severity = Severity.HIGH) -> Headline:
    """The answer of ``report``: findings at or above ``fail_on`` lead it."""
    findings = list(report.findings)
    serious = [f for f in findings if f.severity >= fail_on] or findings
    fix = _fix(serious)
    beyond = sorted({f.rule for f in serious if f.rule not in RESTORED}) if fix else []
    return Headline(_happened(serious), fix, groups(findings), beyond)


def lines(report: Report, fail_on: Severity = Severity.HIGH) -> list[str]:
    """The headline as plain lines (table and markdown add their own markup)."""
    if not report.findings:
        return []
    h = headline(report, fail_on)
    out = []
    if h.happened:
        out.append("What happened: " + "; ".join(h.happened))
    if h.fix:
        rest = f" (then see {', '.join(h.beyond_fix)} below)" if h.beyond_fix else ""
        out.append(f"Fix: {h.fix}{rest}")
    return out
