"""`check` leads with the answer (issue 26): what happened, the one command that fixes it, the
findings grouped by rule and reason, then the details; in the plain and rich table, markdown,
json (``headline``, with ``summary`` still the counts) and the fleet view's markdown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dtkguard.findings import Finding, Severity
from dtkguard.report import Report, render
from dtkguard.report.headline import headline
from tests.fleet.factory import node_report, write

TORCH = "2.4.1+das.opt1.dtk25041"
PY = "/opt/conda/bin/python"
NVIDIA = [f"nvidia-{n}-cu12" for n in ("cublas", "cudnn", "cufft", "curand", "nccl", "nvtx")]
REASON = "NVIDIA CUDA 12 runtime wheel, useless on a DCU"


def clobbered() -> list[Finding]:
    """What `check` finds after `pip install vllm==0.9.2` got through (fewer nvidia wheels)."""
    out = [
        Finding(
            "vendor-replaced",
            Severity.CRITICAL,
            "torch",
            f"torch 2.7.0 (a community build) replaced the vendor build {TORCH}",
            f"dtkpip install --no-deps --force-reinstall 'torch=={TORCH}'",
            evidence={"installed": "2.7.0", "policy": TORCH},
        ),
        Finding(
            "vendor-missing",
            Severity.CRITICAL,
            "torch",
            f"the vendor build torch {TORCH} recorded by `guard install` is gone",
            f"restore the vendor builds: dtkguard restore --python {PY}",
            evidence={"expected": f"torch {TORCH}", "installed": "2.7.0"},
        ),
        Finding(
            "denied-package",
            Severity.HIGH,
            "xformers",
            "xformers 0.0.30 is denied by policy site: built for CUDA; required by vllm 0.9.2",
        ),
    ]
    out += [
        Finding(
            "denied-package",
            Severity.CRITICAL,
            name,
            f"{name} 12.6 is denied by policy site: {REASON}; required by torch 2.7.0",
            f"pip uninstall {name}",
        )
        for name in NVIDIA
    ]
    return out


def report(findings: list[Finding]) -> Report:
    return Report(findings, target={"kind": "python", "python": PY}, policy="site")


def test_the_plain_table_leads_with_the_answer() -> None:
    lines = render(report(clobbered()), "table", color=False).splitlines()
    assert lines[0] == (
        f"What happened: torch {TORCH} replaced by community 2.7.0; "
        f"{len(NVIDIA)} nvidia-* wheel(s) added; denied xformers"
    )
    assert lines[1] == f"Fix: dtkguard restore --python {PY}"
    groups = lines[
        lines.index(f"Findings by rule ({len(clobbered())}):") + 1 : lines.index("Details:")
    ]
    nvidia = [g for g in groups if "nvidia-" in g]
    assert nvidia == [
        f"  CRITICAL denied-package x{len(NVIDIA)} [{', '.join(NVIDIA[:6])}]: {REASON}"
    ]  # one heading for all of them, the reason once
    assert any(g.startswith("  CRITICAL vendor-replaced [torch]: ") for g in groups)
    details = lines[lines.index("Details:") + 1 :]
    assert len(details) == len(clobbered()) + 1  # then every finding, one line each


def test_a_fix_that_leaves_findings_says_so() -> None:
    stack = Finding("driver-too-old", Severity.HIGH, "node", "the driver is too old")
    text = render(report([*clobbered(), stack]), "table", color=False)
    assert f"Fix: dtkguard restore --python {PY} (then see driver-too-old below)" in text
    # no baseline, no restore command: no "Fix:" line claims one
    alone = render(report(clobbered()[2:]), "table", color=False)
    assert "Fix:" not in alone and alone.startswith("What happened: ")


def test_rich_table_leads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    text = re.sub(r"\x1b\[[0-9;]*m", "", render(report(clobbered()), "table", color=True))
    assert (
        text.index("What happened:")
        < text.index("Fix: dtkguard restore")
        < text.index("Findings by rule")
        < text.index("Details:")
        < text.index("severity")
    )


def test_markdown_and_json() -> None:
    md = render(report(clobbered()), "markdown")
    assert f"**Fix:** dtkguard restore --python {PY}" in md
    assert md.index("**What happened:**") < md.index("| severity | rule | count |")
    assert md.index("| severity | rule | count |") < md.index("### Details")
    assert f"| critical | `denied-package` | {len(NVIDIA)} |" in md
    data = json.loads(render(report(clobbered()), "json"))
    assert data["summary"] == {"critical": 8, "high": 1, "medium": 0, "low": 0, "info": 0}
    head = data["headline"]
    assert head["fix"] == f"dtkguard restore --python {PY}"
    assert head["happened"][0] == f"torch {TORCH} replaced by community 2.7.0"
    assert [g["rule"] for g in head["groups"]].count("denied-package") == 2  # two reasons
    clean = json.loads(render(report([]), "json"))["headline"]
    assert clean == {"happened": [], "fix": None, "beyond_fix": [], "groups": []}


def test_fleet_markdown_leads_with_what_happened(tmp_path: Path) -> None:
    from dtkguard.fleet.merge import merge
    from dtkguard.fleet.render import render_markdown

    paths = [write(tmp_path / f"n{i}.json", node_report(f"n{i}", clobbered())) for i in range(3)]
    md = render_markdown(merge(paths))
    section = md[md.index("### What happened") : md.index("### Nodes")]
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    denied = [line for line in lines if line.startswith("- denied-package (critical) ")]
    assert len(denied) == 1 and "on 3 node(s)" in denied[0] and "nvidia-cublas-cu12" in denied[0]
    assert md.index("### What happened") < md.index("### Most common findings")


def test_fleet_html_leads_with_what_happened_too(tmp_path: Path) -> None:
    """`report merge --format html` says what happened before the tables, grouped by rule as
    the Markdown view does, escaped like every other cell."""
    from tests.support.cli import dtkguard

    paths = [write(tmp_path / f"n{i}.json", node_report(f"n{i}", clobbered())) for i in range(3)]
    out = tmp_path / "fleet.html"
    proc = dtkguard("report", "merge", *map(str, paths), "--format", "html", "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    page = out.read_text()
    section = page[page.index('<h2 id="happened">') : page.index('<h2 id="common">')]
    items = [ln for ln in section.splitlines() if ln.startswith("<li>")]
    head = '<li><code>denied-package</code> (<span class="critical">critical</span>) '
    denied = [ln for ln in items if ln.startswith(head)]
    assert len(denied) == 1 and "on 3 node(s)" in denied[0] and "nvidia-cublas-cu12" in denied[0]


def test_a_vendor_build_never_recorded_is_not_called_replaced() -> None:
    """`pip install vllm==0.9.2` on an env that never held the vendor vllm: the baseline's
    findings name torch (it was there and is gone), none names vllm; the headline says what
    vllm is, not that a vendor build was replaced."""
    vllm = Finding(
        "vendor-replaced",
        Severity.CRITICAL,
        "vllm",
        "vllm 0.9.2 (a community build) replaced the vendor build 0.8.5.post1+das.opt1.dtk25041",
        evidence={"installed": "0.9.2", "policy": "0.8.5.post1+das.opt1.dtk25041"},
    )
    head = headline(report([*clobbered(), vllm])).happened
    assert head[0] == f"torch {TORCH} replaced by community 2.7.0"
    assert "vllm is community 0.9.2, not 0.8.5.post1+das.opt1.dtk25041" in head
    assert not [h for h in head if h.startswith("vllm") and "replaced" in h]


def test_override_records_share_one_short_heading() -> None:
    """Each override record lists everything it let in: its group heading carries the record's
    reason, never that list; records of one reason are one group, counted."""
    let_in = "; ".join(f"{n} 12.6 is denied by policy site: {REASON}" for n in NVIDIA)
    records = [
        Finding(
            "override-used",
            Severity.HIGH,
            "guard",
            f"root overrode the guard on 2026-12-01T10:0{i}:00Z (hotfix): {let_in}",
            evidence={"reason": "hotfix", "time": f"2026-12-01T10:0{i}:00Z"},
        )
        for i in range(3)
    ]
    lines = render(report([*clobbered(), *records]), "table", color=False).splitlines()
    groups = lines[lines.index(f"Findings by rule ({len(clobbered()) + 3}):") + 1 :]
    [override] = [g for g in groups[: groups.index("Details:")] if "override-used" in g]
    assert override == "  HIGH override-used x3 [guard]: guard override used (hotfix)"
    md = render(report([*clobbered(), *records]), "markdown")
    assert "| high | `override-used` | 3 | guard | guard override used (hotfix) |" in md
