"""Node reports for the fleet tests, written by the real report code (schema 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dtkguard.findings import Finding, Severity
from dtkguard.report import Report
from dtkguard.report.json_format import to_dict


def finding(rule: str, subject: str, severity: str = "critical", **evidence: Any) -> Finding:
    return Finding(
        rule, Severity(severity), subject, f"{subject}: {rule}", "fix it", None, evidence
    )


def node_report(
    host: str,
    findings: list[Finding] = (),
    *,
    created: str = "2026-11-30T01:00:00+00:00",
    target: dict[str, Any] | None = None,
    lock: str | None = None,
) -> dict[str, Any]:
    report = Report(
        list(findings),
        target=target or {"kind": "python", "python": "/usr/bin/python3"},
        policy="dtk-25.04.1",
        command="audit",
        facts={"dists": 150},
        created=created,
        host=host,
    )
    data = to_dict(report)
    if lock:
        data["target"]["lock"] = lock
    return data


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def write_lock(path: Path, packages: dict[str, str]) -> Path:
    """A minimal valid PEP 751 lock pinning ``packages`` (name -> version)."""
    digest = "0" * 64
    parts = ['lock-version = "1.0"', 'created-by = "dtkguard-tests"', ""]
    for name, version in packages.items():
        wheel = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
        parts += [
            "[[packages]]",
            f'name = "{name}"',
            f'version = "{version}"',
            f'wheels = [{{ name = "{wheel}", path = "wheels/{wheel}", '
            f'hashes = {{ sha256 = "{digest}" }} }}]',
            "",
        ]
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
