"""CycloneDX 1.6 JSON: an SBOM of the distributions an audit saw.

Each distribution is a ``library`` component with a pypi purl (name normalised, ``+`` of a local
label encoded as ``%2B``: ``pkg:pypi/torch@2.4.1%2Bdas.opt1.dtk25041``); the files of its RECORD
are nested ``file`` components with hex SHA-256 hashes (RECORD's urlsafe base64, converted).
Scanned models (`dtkguard.modelscan.bom`) are ``machine-learning-model`` components whose
quantisation is given as properties. Findings are listed as ``properties`` of the component they
are about.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any
from urllib.parse import quote

from dtkguard import __version__
from dtkguard.findings import Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.report.model import Report


def purl(name: str, version: str) -> str:
    """``pkg:pypi/flash-attn@2.6.1%2Bdas.opt1.dtk25041``."""
    norm = re.sub(r"[-_.]+", "-", name).lower()
    return f"pkg:pypi/{quote(norm, safe='')}@{quote(version, safe='.-_~')}"


def _component(item: dict[str, Any], findings: list[Any]) -> dict[str, Any]:
    ref = purl(item["name"], item["version"])
    comp: dict[str, Any] = {
        "type": "library",
        "bom-ref": ref
        + (f"?location={quote(item['location'], safe='')}" if item.get("dup") else ""),
        "name": item["name"],
        "version": item["version"],
        "purl": ref,
    }
    if item.get("metadata_sha256"):
        comp["hashes"] = [{"alg": "SHA-256", "content": item["metadata_sha256"]}]
    props = [{"name": "dtkguard:location", "value": item["location"]}]
    if item.get("installer"):
        props.append({"name": "dtkguard:installer", "value": item["installer"]})
    if item.get("direct_url"):
        props.append({"name": "dtkguard:direct_url", "value": item["direct_url"]})
    for f in findings:
        props.append(
            {"name": f"dtkguard:finding:{f.rule}", "value": f"{f.severity.value}: {f.message}"}
        )
    comp["properties"] = props
    files = [
        {
            "type": "file",
            "bom-ref": f"{comp['bom-ref']}#{row['path']}",
            "name": row["path"],
            "hashes": [{"alg": "SHA-256", "content": row["sha256"]}],
        }
        for row in item.get("files", ())
    ]
    if files:
        comp["components"] = files
    return comp


def _model_component(item: dict[str, Any], findings: list[Any]) -> dict[str, Any]:
    props = [{"name": k, "value": v} for k, v in item.get("properties", {}).items()]
    props += [
        {"name": f"dtkguard:finding:{f.rule}", "value": f"{f.severity.value}: {f.message}"}
        for f in findings
    ]
    return {
        "type": "machine-learning-model",
        "bom-ref": f"model:{quote(item['key'], safe='/')}",
        "name": item["name"],
        "properties": props,
    }


def _components(report: Report) -> tuple[list[dict[str, Any]], set[str]]:
    """A component per inventory item, with its findings; and the subjects they place."""
    inventory = list(getattr(report, "inventory", None) or [])
    seen: dict[str, int] = {}
    for item in inventory:
        if item.get("type") == "machine-learning-model":
            continue
        seen[purl(item["name"], item["version"])] = (
            seen.get(purl(item["name"], item["version"]), 0) + 1
        )
    by_subject: dict[str, list[Any]] = {}
    for f in report.findings:
        by_subject.setdefault(f.subject, []).append(f)
    comps = []
    placed: set[str] = set()
    for item in inventory:
        key = item.get("key", item["name"])
        placed.add(key)
        if item.get("type") == "machine-learning-model":
            comps.append(_model_component(item, by_subject.get(key, [])))
            continue
        item = {**item, "dup": seen[purl(item["name"], item["version"])] > 1}
        comps.append(_component(item, by_subject.get(key, [])))
    return comps, placed


def render(report: Report, *, fail_on: Severity = Severity.HIGH, color: bool | None = None) -> str:
    """The BOM: the target as the metadata component, every inventory item as a component."""
    comps, placed = _components(report)
    # findings about no listed component (paths, processes, or no inventory given)
    loose = [
        {
            "name": f"dtkguard:finding:{f.rule}",
            "value": f"{f.subject}: {f.severity.value}: {f.message}",
        }
        for f in report.findings
        if f.subject not in placed
    ]
    target = report.target or {}
    name = target.get("container") or target.get("root") or target.get("python") or report.host
    doc = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "serialNumber": f"urn:uuid:{uuid.uuid4()}",
        "version": 1,
        "metadata": {
            "timestamp": report.created,
            "tools": {
                "components": [{"type": "application", "name": "dtkguard", "version": __version__}]
            },
            "component": {
                "type": "container"
                if target.get("kind") in ("container", "root")
                else "application",
                "bom-ref": "target",
                "name": str(name),
                "properties": [
                    {"name": f"dtkguard:target:{k}", "value": str(v)} for k, v in target.items()
                ]
                + [
                    {"name": "dtkguard:host", "value": report.host},
                    {"name": "dtkguard:policy", "value": report.policy},
                    {"name": "dtkguard:verdict", "value": report.verdict(fail_on)},
                ]
                + loose,
            },
        },
        "components": comps,
        "dependencies": [{"ref": "target", "dependsOn": [c["bom-ref"] for c in comps]}],
    }
    return json.dumps(doc, indent=2) + "\n"
