"""The JSON report's shape: TypedDicts for the code, ``report.schema.json`` for everyone else.

`json_format.to_dict` builds a `ReportDict`; `report merge` checks every schema-1 report it
reads against the schema file with `problems` (the standard library only: the keywords the file
uses, ``type``, ``const``, ``enum``, ``minimum``, ``required``, ``properties``,
``additionalProperties``, ``items`` and local ``$ref``). The tests validate the JSON of real runs
of check, audit, doctor and scan-model against the same file with ``jsonschema``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypedDict

SCHEMA_FILE = Path(__file__).with_name("report.schema.json")
#: errors `problems` gives at most (the first is the one a message names)
MAX_PROBLEMS = 5

#: a JSON object whose keys and values are its producer's own (a report's target and facts, a
#: part of the facts, an inventory entry, a finding's evidence): the schema fixes no more of it
JSONObject: TypeAlias = dict[str, Any]

# severities, verdicts and the rest of what the types here leave open: in the schema file


class FindingDict(TypedDict):
    """One finding (`dtkguard.findings.Finding.to_dict`)."""

    rule: str
    severity: str
    subject: str
    message: str
    remediation: str
    location: str | None
    evidence: JSONObject


class ToolDict(TypedDict):
    name: Literal["dtkguard"]
    version: str


class GroupDict(TypedDict):
    """Findings of one rule with one reason (`dtkguard.report.headline.Group`)."""

    rule: str
    severity: str
    reason: str
    subjects: list[str]


class HeadlineDict(TypedDict):
    happened: list[str]
    fix: str | None
    beyond_fix: list[str]
    groups: list[GroupDict]


class ReportDict(TypedDict):
    """A JSON report of schema 1 (`dtkguard.report.json_format.to_dict`)."""

    schema_version: int
    tool: ToolDict
    command: str
    created: str
    host: str
    node: str | None
    target: JSONObject
    policy: str
    verdict: str
    fail_on: str
    summary: dict[str, int]
    headline: HeadlineDict
    findings: list[FindingDict]
    facts: JSONObject
    warnings: list[str]


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema of a schema-1 report (the file beside this module)."""
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return loaded


def problems(data: object) -> list[str]:
    """Where ``data`` differs from the report schema (``findings[2].severity: ...``), at most
    `MAX_PROBLEMS`; empty for a valid report."""
    out: list[str] = []
    _check(data, schema(), "", out)
    return out[:MAX_PROBLEMS]


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _is(value: object, name: str) -> bool:
    if value is True or value is False:
        return name == "boolean"
    return isinstance(value, _TYPES[name])


def _check(value: object, node: dict[str, Any], where: str, out: list[str]) -> None:
    if len(out) >= MAX_PROBLEMS:
        return
    if "$ref" in node:
        node = _resolve(node["$ref"])
    problem = _scalar_problem(value, node)
    if problem:
        out.append(f"{where}: {problem}" if where else problem)
    elif isinstance(value, dict):
        _check_object(value, node, where, out)
    elif isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            _check(item, node["items"], f"{where}[{i}]", out)


def _scalar_problem(value: object, node: dict[str, Any]) -> str:
    """What ``type``, ``const``, ``enum`` or ``minimum`` finds wrong ("" nothing)."""
    types = node.get("type")
    if types is not None:
        names = (types,) if isinstance(types, str) else types
        if not any(_is(value, n) for n in names):
            return f"{_shown(value)} is not of type {' or '.join(names)}"
    if "const" in node and (value != node["const"] or type(value) is not type(node["const"])):
        return f"{_shown(value)} is not {node['const']!r}"
    if "enum" in node and value not in node["enum"]:
        return f"{_shown(value)} is not one of {', '.join(node['enum'])}"
    if "minimum" in node and _is(value, "number") and value < node["minimum"]:
        return f"{value} is less than {node['minimum']}"
    return ""


def _check_object(value: dict[str, Any], node: dict[str, Any], where: str, out: list[str]) -> None:
    prefix = f"{where}." if where else ""
    missing = [key for key in node.get("required", ()) if key not in value]
    if missing:
        out.append(f"{where or 'report'}: missing {', '.join(missing)}")
    props = node.get("properties", {})
    extra = node.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            _check(item, props[key], f"{prefix}{key}", out)
        elif extra is False:
            out.append(f"{where or 'report'}: unknown key {key!r}")
        elif isinstance(extra, dict):
            _check(item, extra, f"{prefix}{key}", out)


@cache
def _resolve(ref: str) -> dict[str, Any]:
    """A local ``#/$defs/NAME`` reference of the schema file (the only kind it has)."""
    node: Any = schema()
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    found: dict[str, Any] = node
    return found


def _shown(value: object) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
