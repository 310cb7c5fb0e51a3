"""Every registered format renders the same findings; SARIF and JUnit are structurally valid."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

import pytest

from dtkguard.findings import Finding, Severity
from dtkguard.report import FORMATS, Report, render
from dtkguard.rules.catalog import RULES

FINDINGS = [
    Finding(
        "vendor-replaced",
        Severity.CRITICAL,
        "torch",
        "torch 2.7.0 replaced 2.4.1+das",
        "reinstall",
        "/site/torch-2.7.0.dist-info/METADATA",
        {"installed": "2.7.0"},
    ),
    Finding("drift-extra", Severity.MEDIUM, "rich", "rich 13.0 is not in the lock"),
    Finding("exception-unused", Severity.LOW, "denied-package:x", "unused | pipe"),
]


def report(findings=FINDINGS):
    return Report(
        list(findings),
        target={"kind": "root", "root": "/img"},
        policy="dtk-25.04.1",
        rules=list(RULES),
    )


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_renders(fmt):
    text = render(report(), fmt, color=False)
    assert "torch" in text


def test_json_has_schema_version_and_round_trips():
    data = json.loads(render(report(), "json"))
    assert data["schema_version"] == 1
    assert data["verdict"] == "fail"
    assert data["summary"]["critical"] == 1
    assert [Finding.from_dict(f) for f in data["findings"]] == report().findings


SARIF_LEVELS = {"none", "note", "warning", "error"}


def test_sarif_required_fields_and_enums():
    doc = json.loads(render(report(), "sarif"))
    assert doc["version"] == "2.1.0" and isinstance(doc["runs"], list)
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "dtkguard"
    ids = [r["id"] for r in driver["rules"]]
    assert len(ids) == len(set(ids)) and set(RULES) <= set(ids)
    for rule in driver["rules"]:
        assert rule["help"]["text"] and rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in SARIF_LEVELS
    assert len(run["results"]) == 3
    for result in run["results"]:
        assert result["message"]["text"]
        assert result["level"] in SARIF_LEVELS
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    first = run["results"][0]
    assert first["level"] == "error"
    uri = first["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"] == "site/torch-2.7.0.dist-info/METADATA" and uri["uriBaseId"] == "ROOTPATH"
    assert run["invocations"][0]["exitCode"] == 1


def test_junit_counts_failures_and_passing_rules():
    root = ET.fromstring(render(report(), "junit"))
    suite = root.find("testsuite")
    assert suite.get("failures") == "1"  # only the critical one is at or above high
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases) == 3 + len(RULES) - 3
    failing = [c for c in cases if c.find("failure") is not None]
    assert [c.get("classname") for c in failing] == ["dtkguard.vendor-replaced"]


def test_fail_on_threshold_changes_exit_code():
    r = report()
    assert r.exit_code(Severity.HIGH) == 1
    assert Report([FINDINGS[1]]).exit_code(Severity.HIGH) == 0
    assert Report([FINDINGS[1]]).exit_code(Severity.MEDIUM) == 1


def test_plain_table_is_one_line_per_finding():
    lines = render(report(), "table", color=False).splitlines()
    details = lines[lines.index("Details:") + 1 :]
    assert details[0].startswith("CRITICAL vendor-replaced torch: ")
    assert len(details) == len(report().findings) + 1
    assert lines[-1].startswith("dtkguard check: FAIL (1 critical, 1 medium, 1 low)")
    assert "\x1b[" not in "".join(lines)


def test_rich_table_when_colour():
    text = render(report(), "table", color=True)
    assert "\x1b[" in text and "vendor-replaced" in text


def test_markdown_escapes_pipes():
    assert "unused \\| pipe" in render(report(), "markdown")


LONG_FIX = (
    "dtkpip install --force-reinstall --no-deps "
    "/opt/das/wheels/torch-2.4.1+das.opt1.dtk25041-cp310-cp310-manylinux_2_28_x86_64.whl"
)


def _plain(text: str) -> list[str]:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines()


@pytest.mark.parametrize("columns", [80, 100])
def test_narrow_terminal_gets_blocks_with_whole_commands(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    finding = Finding(
        "vendor-replaced",
        Severity.CRITICAL,
        "torch",
        "torch 2.7.0 replaced the vendor build",
        LONG_FIX,
    )
    lines = _plain(render(report([finding, *FINDINGS[1:]]), "table", color=True))
    lines = lines[lines.index("Details:") + 1 :]  # the answer and the groups come first
    assert lines[0] == "CRITICAL vendor-replaced torch"
    assert lines[1] == "  torch 2.7.0 replaced the vendor build"
    assert lines[2] == f"  fix: {LONG_FIX}"  # one piece, longer than the terminal: copyable
    assert not any("│" in line or "┃" in line for line in lines)


def test_wide_terminal_keeps_the_table(monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    lines = _plain(render(report(), "table", color=True))
    assert any("severity" in line and "rule" in line and "fix" in line for line in lines)
