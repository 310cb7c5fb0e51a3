"""JUnit XML: one test case per (rule, subject) finding, and one passing case per clean rule.

Times are in seconds as pytest writes them: the suite's is the command's run time, a case's is
its share of the time its check family took (a family judges all its rules in one pass).
"""

from __future__ import annotations

from xml.etree import ElementTree as ET

from dtkguard.findings import Severity
from dtkguard.report.sanitize import xml
from dtkguard.rules.catalog import info

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.report.model import Report


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def render(report: Report, *, fail_on: Severity = Severity.HIGH, color: bool | None = None) -> str:
    suite = ET.Element("testsuite", name=f"dtkguard {report.command}")
    failures = 0
    cases: list[tuple[ET.Element, str]] = []  # (case, rule)
    seen: set[tuple[str, str]] = set()
    for f in report.findings:
        if (f.rule, f.subject) in seen:
            continue
        seen.add((f.rule, f.subject))
        case = ET.SubElement(suite, "testcase", classname=f"dtkguard.{f.rule}", name=xml(f.subject))
        cases.append((case, f.rule))  # severity: the failure's type (the XSD has no case props)
        if f.severity >= fail_on:
            failures += 1
            node = ET.SubElement(case, "failure", message=xml(f.message), type=f.severity.value)
        else:
            node = ET.SubElement(case, "system-out")
        node.text = xml(f"[{f.severity.value}] {f.message}\n{f.remediation}".rstrip())
    failed_rules = {f.rule for f in report.findings}
    for rule in sorted(set(report.rules) - failed_rules):
        case = ET.SubElement(suite, "testcase", classname=f"dtkguard.{rule}", name="all")
        cases.append((case, rule))
    per_family: dict[str, int] = {}
    for _, rule in cases:
        family = info(rule).family
        per_family[family] = per_family.get(family, 0) + 1
    timings = getattr(report, "timings", {}) or {}
    for case, rule in cases:
        family = info(rule).family
        case.set("time", _seconds(timings.get(family, 0.0) / per_family[family]))
    elapsed = _seconds(getattr(report, "elapsed", 0.0))
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", "0")
    suite.set("time", elapsed)
    suite.set("hostname", xml(report.host))
    suite.set("timestamp", report.created)
    root = ET.Element(
        "testsuites", tests=str(len(cases)), failures=str(failures), errors="0", time=elapsed
    )
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
