"""`dtkguard report merge`: verdicts, exit codes, and reports that are missing or broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dtkguard.findings import Severity
from dtkguard.fleet.merge import merge
from tests.fleet.factory import finding, node_report, write
from tests.support.cli import run_in_process

CLEAN = []
REPLACED = [finding("vendor-replaced", "torch", installed="2.4.1")]


def _fleet(tmp_path: Path, **reports) -> list[Path]:
    return [write(tmp_path / f"{name}.json", data) for name, data in reports.items()]


def _status(fleet) -> dict[str, str]:
    return {n.name: n.status for n in fleet.nodes}


def test_all_clean_passes(tmp_path):
    paths = _fleet(tmp_path, a=node_report("a"), b=node_report("b"))
    fleet = merge(paths)
    assert fleet.verdict == "pass" and fleet.exit_code() == 0
    assert _status(fleet) == {"a": "ok", "b": "ok"}


def test_one_failing_node_fails_the_fleet(tmp_path):
    paths = _fleet(tmp_path, a=node_report("a"), b=node_report("b", REPLACED))
    fleet = merge(paths)
    assert fleet.verdict == "fail" and fleet.exit_code() == 1
    assert _status(fleet) == {"a": "ok", "b": "fail"}
    assert fleet.nodes[0].name == "b"  # failing nodes first
    assert fleet.common[0]["rule"] == "vendor-replaced" and fleet.common[0]["nodes"] == 1


def test_missing_report_file(tmp_path):
    paths = _fleet(tmp_path, a=node_report("a"))
    fleet = merge([*paths, tmp_path / "b.json"])
    assert _status(fleet) == {"a": "ok", "b": "missing"}
    assert fleet.exit_code() == 1


def test_missing_by_node_list_and_count(tmp_path):
    paths = _fleet(tmp_path, a=node_report("a"), b=node_report("b"))
    fleet = merge(paths, node_names=["a", "b", "c"])
    assert _status(fleet)["c"] == "missing" and fleet.verdict == "fail"
    assert fleet.expected == 3
    fleet = merge(paths, expect_nodes=3)
    assert sorted(_status(fleet).values()) == ["missing", "ok", "ok"]
    assert merge(paths, expect_nodes=2).verdict == "pass"


def test_truncated_and_unreadable_reports(tmp_path):
    good = json.dumps(node_report("a", REPLACED), indent=2)
    (tmp_path / "cut.json").write_text(good[: len(good) // 2])
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "garbage.json").write_bytes(b"\x00\xff\xfe binary")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "nokeys.json").write_text('{"schema_version": 1, "host": "x"}')
    fleet = merge(sorted(tmp_path.glob("*.json")))
    by_file = {Path(n.file).name: n for n in fleet.nodes}
    assert by_file["cut.json"].status == "truncated"
    assert "line" in by_file["cut.json"].detail
    assert by_file["empty.json"].status == "truncated"
    assert by_file["garbage.json"].status == "unreadable"
    assert by_file["list.json"].status == "unreadable"
    assert "findings" in by_file["nokeys.json"].detail
    assert fleet.verdict == "fail"


def test_older_schema_written_by_hand(tmp_path):
    old = {
        "schema_version": 0,
        "hostname": "old-node",
        "results": [{"id": "vendor-replaced", "pkg": "torch", "level": "error"}],
        "ok": False,
    }
    paths = _fleet(tmp_path, old=old, a=node_report("a"))
    fleet = merge(paths)
    node = next(n for n in fleet.nodes if n.file.endswith("old.json"))
    assert node.status == "old-schema" and "schema_version 0" in node.detail
    assert fleet.verdict == "fail"
    # no schema_version at all is older too
    paths = _fleet(tmp_path, old={"hostname": "x", "findings": []})
    assert merge(paths).nodes[0].status == "old-schema"


def test_newer_schema_is_read_forward_compatibly(tmp_path):
    data = node_report("future")
    data["schema_version"] = 2
    data["new_section"] = {"anything": [1, 2, 3]}
    fleet = merge(_fleet(tmp_path, future=data))
    assert fleet.nodes[0].status == "new-schema" and fleet.verdict == "pass"
    data = node_report("future", REPLACED)
    data["schema_version"] = 2
    fleet = merge(_fleet(tmp_path, future=data))
    assert fleet.nodes[0].status == "fail" and "newer" in fleet.nodes[0].detail


def test_duplicates_keep_the_newest_of_equals(tmp_path):
    older = node_report("a", created="2026-11-29T10:00:00+00:00")
    newer = node_report("a", created="2026-11-30T10:00:00+00:00")
    paths = _fleet(tmp_path, run2=newer, run1=older, b=node_report("b"))
    fleet = merge(paths)
    assert [n.file for n in fleet.duplicates] == [str(tmp_path / "run1.json")]
    assert fleet.duplicates[0].replaced_by == str(tmp_path / "run2.json")
    assert fleet.verdict == "pass"
    assert len(fleet.nodes) == 2
    out = merge(paths).to_dict()
    assert out["duplicates"][0]["kept"].endswith("run2.json")


@pytest.mark.parametrize("later", ["2026-11-30T10:00:00+00:00", "2099-01-01T00:00:00+00:00"])
def test_a_later_passing_duplicate_never_hides_a_failure(tmp_path, later):
    failing = node_report("a", REPLACED, created="2026-11-29T10:00:00+00:00")
    passing = node_report("a", created=later)  # 2099: a report dated in the future
    paths = _fleet(tmp_path, failing=failing, passing=passing, b=node_report("b"))
    fleet = merge(paths)
    assert fleet.verdict == "fail" and fleet.exit_code() == 1
    kept = next(n for n in fleet.nodes if n.host == "a")
    assert kept.status == "fail" and kept.file == str(tmp_path / "failing.json")
    assert "2 reports for this host and target" in kept.detail
    assert [d.file for d in fleet.duplicates] == [str(tmp_path / "passing.json")]


def test_same_host_different_targets_are_two_nodes(tmp_path):
    paths = _fleet(
        tmp_path,
        n1=node_report("vm", target={"kind": "path", "path": ["/envs/n1"]}),
        n2=node_report("vm", REPLACED, target={"kind": "path", "path": ["/envs/n2"]}),
    )
    fleet = merge(paths, node_names=["n1", "n2"])
    assert _status(fleet) == {"n1": "ok", "n2": "fail"}
    assert not fleet.duplicates


def test_drift_grouped_by_lock(tmp_path):
    drift = [
        finding("drift-version", "torch", "high", installed="2.5.0", locked="2.4.1+das"),
        finding("drift-extra", "nvidia-nccl-cu12", "medium", installed="2.20.5"),
        finding("drift-missing", "flash-attn", "high", locked="2.6.1+das"),
    ]
    paths = _fleet(
        tmp_path,
        a=node_report("a", drift, lock="/locks/pylock.vllm.toml"),
        b=node_report("b", drift[:1], lock="/locks/pylock.vllm.toml"),
        c=node_report("c", lock="/locks/pylock.vllm.toml"),
        d=node_report("d", drift[1:2], lock="/locks/pylock.sglang.toml"),
    )
    fleet = merge(paths)
    groups = {lock: [n.name for n in nodes] for lock, nodes in fleet.drift_by_lock().items()}
    assert groups == {"pylock.vllm.toml": ["a", "b"], "pylock.sglang.toml": ["d"]}
    from dtkguard.fleet.render import drift_text, render_markdown

    a = next(n for n in fleet.nodes if n.name == "a")
    # in the report's order: most severe first
    assert (
        drift_text(a)
        == "-flash-attn 2.6.1+das; ~torch 2.4.1+das -> 2.5.0; +nvidia-nccl-cu12 2.20.5"
    )
    assert drift_text(a, limit=1) == "-flash-attn 2.6.1+das; and 2 more"
    text = render_markdown(fleet)
    assert "| pylock.vllm.toml | b | ~torch 2.4.1+das -> 2.5.0 |" in text
    assert fleet.common[0]["subject"] == "torch" and fleet.common[0]["nodes"] == 2


def test_fail_on_rejudges_every_node(tmp_path):
    paths = _fleet(tmp_path, a=node_report("a", [finding("drift-extra", "six", "medium")]))
    assert merge(paths).verdict == "pass"
    assert merge(paths, fail_on=Severity.MEDIUM).verdict == "fail"


def test_fleet_output_fed_back_is_named(tmp_path):
    paths = _fleet(tmp_path, a=node_report("a"))
    result = run_in_process("report", "merge", paths[0], "-f", "json", "-o", tmp_path / "f.json")
    assert result.code == 0, result.err
    fleet = merge([tmp_path / "f.json"])
    assert fleet.nodes[0].status == "unreadable" and "fleet view" in fleet.nodes[0].detail


def test_cli_exit_codes_and_formats(tmp_path):
    paths = [str(p) for p in _fleet(tmp_path, a=node_report("a"), b=node_report("b", REPLACED))]
    result = run_in_process("report", "merge", *paths)
    assert result.code == 1 and result.out.startswith("## dtkguard fleet: FAIL")
    result = run_in_process("report", "merge", paths[0], "--format", "json")
    assert result.code == 0
    data = result.json()
    assert data["verdict"] == "pass" and data["nodes"][0]["name"] == "a"
    # a directory stands for its *.json
    result = run_in_process("report", "merge", tmp_path, "-f", "json")
    assert result.code == 1 and len(result.json()["nodes"]) == 2
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("# the partition\na\nb  # second\nc\n")
    result = run_in_process("report", "merge", *paths, "--nodes", nodes, "-f", "json")
    assert result.code == 1
    assert result.json()["by_status"] == {"missing": 1, "fail": 1, "ok": 1}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "/nonexistent/nodes.txt"], "/nonexistent/nodes.txt: --nodes:"),
        (["--fail-on", "severe"], "--fail-on: unknown severity"),
        (["--expect-nodes", "-1"], "--expect-nodes: must be 0 or more"),
        (["--format", "pdf"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, argv, message):
    path = write(tmp_path / "a.json", node_report("a"))
    out = tmp_path / "out.md"
    result = run_in_process("report", "merge", path, "-o", out, *argv)
    assert result.code == 2
    err = result.err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_lock_from_facts_or_drift_evidence(tmp_path):
    """The audit records the lock as facts.lock = {path, packages} and in each drift finding."""
    extra = finding("drift-extra", "six", "medium", installed="1.16.0", lock="/l/pylock.a.toml")
    by_facts = node_report("a", [extra])
    by_facts["facts"]["lock"] = {"path": "/l/pylock.b.toml", "packages": 150}
    by_evidence = node_report("b", [extra])
    fleet = merge(_fleet(tmp_path, a=by_facts, b=by_evidence))
    locks = {n.name: n.lock for n in fleet.nodes}
    assert locks == {"a": "pylock.b.toml", "b": "pylock.a.toml"}
    assert fleet.nodes[0].drift[0].short() == "+six 1.16.0"  # the lock path is not a version


def test_target_identity_uses_the_whole_target(tmp_path):
    """The audit adds root="/" to --path targets: the path still tells two nodes apart."""
    paths = _fleet(
        tmp_path,
        n1=node_report("vm", target={"kind": "path", "path": "/envs/n1", "root": "/"}),
        n2=node_report("vm", target={"kind": "path", "path": "/envs/n2", "root": "/"}),
        n3=node_report("vm", target={"kind": "root", "root": "/images/x"}),
    )
    fleet = merge(paths, node_names=["n1", "n2", "n3"])
    assert not fleet.duplicates
    assert {n.name: n.target for n in fleet.nodes} == {
        "n1": "path=/envs/n1",
        "n2": "path=/envs/n2",
        "n3": "root=/images/x",
    }
