"""SARIF 2.1.0: one rule per rule id (with help text), one result per finding."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from dtkguard import __version__
from dtkguard.findings import Severity
from dtkguard.rules.catalog import info

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.report.model import Report

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
    Severity.INFO: "note",
}
SECURITY_SEVERITY = {
    Severity.CRITICAL: "9.5",
    Severity.HIGH: "8.0",
    Severity.MEDIUM: "5.5",
    Severity.LOW: "3.0",
    Severity.INFO: "0.0",
}


def render(report: Report, *, fail_on: Severity = Severity.HIGH, color: bool | None = None) -> str:
    rule_ids = sorted({*report.rules, *(f.rule for f in report.findings)})
    index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    rules = [_rule(rule_id) for rule_id in rule_ids]
    results = [_result(f, index) for f in report.findings]
    root = report.target.get("root", "/")
    doc: dict[str, Any] = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "dtkguard",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"ROOTPATH": {"uri": "file://" + root.rstrip("/") + "/"}},
                "invocations": [
                    {"executionSuccessful": True, "exitCode": report.exit_code(fail_on)}
                ],
                "results": results,
            }
        ],
    }
    home = project_url()
    if home:
        doc["runs"][0]["tool"]["driver"]["informationUri"] = home
    return json.dumps(doc, indent=2) + "\n"


def _rule(rule_id: str) -> dict[str, Any]:
    """The reportingDescriptor of a rule: the catalog's title, help and default severity."""
    meta = info(rule_id)
    return {
        "id": rule_id,
        "name": "".join(p.capitalize() for p in rule_id.replace(".", "-").split("-")),
        "shortDescription": {"text": meta.title},
        "fullDescription": {"text": meta.help},
        "help": {"text": meta.help},
        "defaultConfiguration": {"level": LEVELS[meta.severity]},
        "properties": {
            "security-severity": SECURITY_SEVERITY[meta.severity],
            "tags": ["dtkguard"],
        },
    }


def _result(f: Any, index: dict[str, int]) -> dict[str, Any]:
    """The result of one finding, located relative to the target's root (``ROOTPATH``)."""
    result: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index[f.rule],
        "level": LEVELS[f.severity],
        "message": {"text": f.message},
        "partialFingerprints": {
            "dtkguard/v1": hashlib.sha256(f"{f.rule}|{f.subject}".encode()).hexdigest()[:32]
        },
        "properties": {"severity": f.severity.value, "subject": f.subject},
    }
    if f.remediation:
        result["properties"]["remediation"] = f.remediation
    if f.location:
        result["locations"] = [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": f.location.lstrip("/"), "uriBaseId": "ROOTPATH"}
                }
            }
        ]
    return result


def project_url() -> str | None:
    """dtkguard's own home page, from its installed metadata (``[project.urls]``), if it has one."""
    from importlib import metadata

    try:
        meta = metadata.metadata("dtkguard")
    except metadata.PackageNotFoundError:
        return None
    for entry in meta.get_all("Project-URL") or ():
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("homepage", "documentation", "repository", "source"):
            return str(url).strip()
    home: str | None = (meta.get_all("Home-page") or [None])[0] or None
    return home
