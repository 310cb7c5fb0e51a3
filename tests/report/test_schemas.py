"""Report formats validated against their official schemas: SARIF 2.1.0 (OASIS), the JUnit XSD
CI systems read (Jenkins xUnit), CycloneDX 1.6 (cyclonedx-python-lib's strict validator).

The reports come from real runs of dtkguard over an environment with findings of every kind
the environment checks produce, and from the format tests' fixed findings.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema  # the test extra: missing is a broken install, never a skip
import pytest
import xmlschema

from dtkguard.report import render
from tests.audit.conftest import run_cli
from tests.report.test_formats import report
from tests.support.sitetree import COMMUNITY_TORCH_VERSION_PY, add_dist, vendor_site

SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "schemas"


@pytest.fixture(scope="module")
def clobbered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site with a community torch, a denied nvidia wheel and a DTK mix: many findings."""
    site = tmp_path_factory.mktemp("site")
    vendor_site(site)
    (site / "torch" / "version.py").write_text(COMMUNITY_TORCH_VERSION_PY)
    add_dist(site, "nvidia-nccl-cu12", "2.20.5", requires=())
    add_dist(site, "ray", "2.60.0", requires=("nvidia-nccl-cu12", "nvidia-nccl-cu12; extra == 'x'"))
    add_dist(site, "lmslim", "0.2.1+das.dtk24043")
    return site


def _sarif_validator():
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    return jsonschema.Draft4Validator(schema)


def _assert_sarif(text: str) -> dict:
    doc = json.loads(text)
    errors = sorted(_sarif_validator().iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    return doc


def test_sarif_of_fixed_findings_is_valid() -> None:
    _assert_sarif(render(report(), "sarif"))


def test_sarif_of_a_real_check_is_valid(clobbered: Path) -> None:
    result = run_cli("check", "--path", str(clobbered), "--format", "sarif")
    assert result.code == 1, result.err
    doc = _assert_sarif(result.out)
    results = doc["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"torch-build", "denied-package", "dtk-mixed"}
    for r in results:  # the message says what is wrong; the fix is apart from it
        assert "Fix:" not in r["message"]["text"]
    denied = next(r for r in results if r["ruleId"] == "denied-package")
    assert denied["properties"]["remediation"].startswith("pip uninstall nvidia-nccl-cu12")


def test_junit_is_valid_and_timed(clobbered: Path, tmp_path: Path) -> None:
    schema = xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd"))
    out = tmp_path / "junit.xml"
    result = run_cli("check", "--path", str(clobbered), "--format", "junit", "-o", str(out))
    assert result.code == 1, result.err
    schema.validate(str(out))
    from xml.etree import ElementTree as ET

    root = ET.parse(out).getroot()
    suite = root.find("testsuite")
    assert float(suite.get("time")) > 0 and root.get("time") == suite.get("time")
    cases = suite.findall("testcase")
    assert cases and all(float(c.get("time")) >= 0 for c in cases)
    assert sum(float(c.get("time")) for c in cases) <= float(suite.get("time"))
    schema.validate(render(report(), "junit"))


def test_cyclonedx_is_valid(clobbered: Path) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation import json as validation

    result = run_cli("audit", "--path", str(clobbered), "--format", "cyclonedx")
    assert result.code == 1, result.err
    error = validation.JsonStrictValidator(SchemaVersion.V1_6).validate_str(result.out)
    assert error is None, error


def test_required_by_names_each_parent_once(clobbered: Path) -> None:
    result = run_cli("check", "--path", str(clobbered), "--format", "json")
    denied = next(f for f in result.json()["findings"] if f["rule"] == "denied-package")
    assert denied["evidence"]["required_by"] == ["ray 2.60.0"]
    assert denied["message"].count("ray 2.60.0") == 1


def test_merge_names_other_tools_json(tmp_path: Path) -> None:
    from dtkguard.fleet.merge import merge

    sarif = tmp_path / "node1.json"
    sarif.write_text(render(report(), "sarif"))
    bom = tmp_path / "node2.json"
    bom.write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6"}))
    nodes = {n.name: n for n in merge([sarif, bom]).nodes}
    assert nodes["node1"].status == "unreadable"
    assert nodes["node1"].detail == "not a dtkguard report (a SARIF log)"
    assert nodes["node2"].detail == "not a dtkguard report (a CycloneDX BOM)"


def test_target_is_named_as_given(clobbered: Path) -> None:
    result = run_cli("audit", "--path", str(clobbered), "--format", "table")
    assert result.out.splitlines()[-1].endswith(f"target={clobbered}")


def test_pid_is_an_integer_in_json() -> None:
    import os

    result = run_cli("check", "--pid", str(os.getpid()), "--format", "json")
    assert result.code in (0, 1), result.err
    assert result.json()["target"]["pid"] == os.getpid()


def test_file_modified_points_at_the_file(tmp_path: Path) -> None:
    site = tmp_path / "site"
    vendor_site(site)
    (site / "torch" / "version.py").write_text("cuda = '12.4'\n")
    result = run_cli("audit", "--path", str(site), "--verify-files", "--format", "json")
    finding = next(f for f in result.json()["findings"] if f["rule"] == "file-modified")
    assert finding["location"].endswith("/torch/version.py")
    assert finding["evidence"]["record"].endswith(".dist-info/RECORD")
