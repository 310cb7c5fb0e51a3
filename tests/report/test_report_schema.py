"""The JSON report against its own schema, ``dtkguard/report/report.schema.json``.

The JSON of real runs of check, audit, doctor and scan-model is validated with ``jsonschema``
(the reference validator); the standard-library check `report merge` uses must agree with it on
every valid report and on each kind of broken one, and merge refuses a broken schema-1 report
naming the field.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema  # the test extra: missing is a broken install, never a skip
import pytest

from dtkguard.fleet.merge import merge
from dtkguard.report import render
from dtkguard.report.schema import SCHEMA_FILE, ReportDict, problems, schema
from tests.audit.conftest import run_cli
from tests.audit.test_stack import HY, make_image
from tests.fleet.factory import node_report
from tests.modelscan.modelkit import deepseek_model
from tests.report.test_formats import report
from tests.report.test_schemas import clobbered  # noqa: F401 - the module fixture

VALIDATOR = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))


def _errors(doc: Any) -> list[str]:
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    return [f"{list(e.path)}: {e.message}" for e in errors]


def _assert_valid(doc: Any) -> None:
    assert _errors(doc) == []
    assert problems(doc) == []


def test_the_schema_file_is_a_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(schema())


def test_the_schema_names_the_typed_keys() -> None:
    assert set(schema()["properties"]) == set(ReportDict.__annotations__)
    assert set(schema()["required"]) == set(ReportDict.__annotations__)


def _run_json(*args: str) -> dict[str, Any]:
    result = run_cli(*args, "--format", "json")
    assert result.code in (0, 1), result.err
    return json.loads(result.out)


@pytest.mark.parametrize(
    "command", [("check",), ("audit",), ("audit", "--verify-files")], ids=" ".join
)
def test_check_and_audit_json_is_valid(clobbered: Path, command: tuple[str, ...]) -> None:  # noqa: F811
    doc = _run_json(*command, "--path", str(clobbered))
    assert doc["findings"], "the fixture has findings of every kind"
    _assert_valid(doc)


def test_doctor_json_is_valid(tmp_path: Path) -> None:
    root = make_image(tmp_path, dtk="24.04.3", hip=None)
    doc = _run_json(
        "doctor", "--root", str(root), "--hy-smi-output", str(HY / "k100ai-old-driver.txt")
    )
    assert doc["command"] == "doctor" and doc["findings"]
    _assert_valid(doc)


def test_scan_model_json_is_valid(tmp_path: Path) -> None:
    model = deepseek_model(tmp_path / "DeepSeek-V3", layers=2, shards=2)
    doc = _run_json("scan-model", str(model), "--policy", "dtk-25.04.1", "--card", "K100_AI")
    assert doc["command"] == "scan-model" and doc["findings"]
    _assert_valid(doc)


def test_fixed_findings_and_node_reports_are_valid() -> None:
    _assert_valid(json.loads(render(report(), "json")))
    _assert_valid(node_report("n1"))


BROKEN = {
    "missing key": lambda d: d.pop("findings"),
    "unknown key": lambda d: d.update(extra=1),
    "newer version": lambda d: d.update(schema_version=2),
    "bool as version": lambda d: d.update(schema_version=True),
    "bad verdict": lambda d: d.update(verdict="maybe"),
    "negative count": lambda d: d["summary"].update(high=-1),
    "node not a string": lambda d: d.update(node=7),
    "target without kind": lambda d: d["target"].pop("kind"),
    "finding severity": lambda d: d["findings"][0].update(severity="urgent"),
    "finding without rule": lambda d: d["findings"][0].pop("rule"),
    "finding location": lambda d: d["findings"][0].update(location=3),
    "group subjects": lambda d: d["headline"]["groups"][0].update(subjects="torch"),
    "findings not a list": lambda d: d.update(findings={}),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_both_validators_refuse_a_broken_report(name: str) -> None:
    doc = copy.deepcopy(json.loads(render(report(), "json")))
    BROKEN[name](doc)
    assert _errors(doc), name
    assert problems(doc), name


def test_merge_refuses_a_report_the_schema_refuses(tmp_path: Path) -> None:
    good = node_report("good")
    bad = copy.deepcopy(json.loads(render(report(), "json")))
    bad["host"] = "bad"
    bad["findings"][1]["severity"] = "urgent"
    (tmp_path / "good.json").write_text(json.dumps(good))
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    nodes = {n.name: n for n in merge([tmp_path]).nodes}
    assert nodes["good"].status == "ok"
    assert nodes["bad"].status == "unreadable"
    assert nodes["bad"].detail == (
        'not a dtkguard report of schema 1: findings[1].severity: "urgent" is not one of '
        "critical, high, medium, low, info"
    )
