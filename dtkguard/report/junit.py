"""JUnit XML: one test case per (rule, subject) finding, and one passing case per clean rule."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

from dtkguard.findings import Severity
from dtkguard.report.sanitize import xml


def render(report: Any, *, fail_on: Severity = Severity.HIGH, color: bool | None = None) -> str:
    suite = ET.Element("testsuite", name=f"dtkguard {report.command}")
    failures = cases = 0
    seen: set[tuple[str, str]] = set()
    for f in report.findings:
        if (f.rule, f.subject) in seen:
            continue
        seen.add((f.rule, f.subject))
        case = ET.SubElement(suite, "testcase", classname=f"dtkguard.{f.rule}", name=xml(f.subject))
        cases += 1
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="severity", value=f.severity.value)
        if f.severity >= fail_on:
            failures += 1
            node = ET.SubElement(case, "failure", message=xml(f.message), type=f.severity.value)
        else:
            node = ET.SubElement(case, "system-out")
        node.text = xml(f"[{f.severity.value}] {f.message}\n{f.remediation}".rstrip())
    failed_rules = {f.rule for f in report.findings}
    for rule in sorted(set(report.rules) - failed_rules):
        ET.SubElement(suite, "testcase", classname=f"dtkguard.{rule}", name="all")
        cases += 1
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", "0")
    suite.set("hostname", xml(report.host))
    suite.set("timestamp", report.created)
    root = ET.Element("testsuites", tests=str(cases), failures=str(failures), errors="0")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
