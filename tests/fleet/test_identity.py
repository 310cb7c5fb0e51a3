"""Reports carry the scheduler's node name; `report merge` keys on it, the host name as fallback."""

from __future__ import annotations

import json

from dtkguard.env.scheduler_node import scheduler_node
from dtkguard.fleet.merge import merge
from tests.fleet.factory import node_report, write


def test_scheduler_node_order_and_blanks():
    assert scheduler_node({}) == ""
    assert scheduler_node({"SLURMD_NODENAME": "n2"}) == "n2"
    assert scheduler_node({"DTKGUARD_NODE": "k8s-a", "SLURMD_NODENAME": "n2"}) == "k8s-a"
    assert scheduler_node({"DTKGUARD_NODE": "  ", "SLURMD_NODENAME": "n2 "}) == "n2"


def test_json_report_carries_the_node(monkeypatch):
    monkeypatch.setenv("SLURMD_NODENAME", "n7")
    monkeypatch.delenv("DTKGUARD_NODE", raising=False)
    assert node_report("box")["node"] == "n7"
    monkeypatch.delenv("SLURMD_NODENAME")
    assert node_report("box")["node"] is None


def _report(tmp_path, name, host, node, created="2026-11-30T01:00:00+00:00"):
    data = node_report(host, created=created)
    data["node"] = node
    return write(tmp_path / f"{name}.json", data)


def test_nodes_sharing_a_host_are_two_nodes(tmp_path):
    _report(tmp_path, "n1", "ci-host", "n1")
    _report(tmp_path, "n2", "ci-host", "n2")
    fleet = merge([tmp_path], node_names=["n1", "n2"])
    assert fleet.verdict == "pass" and fleet.duplicates == []
    assert sorted(n.name for n in fleet.nodes) == ["n1", "n2"]


def test_same_node_twice_is_a_duplicate(tmp_path):
    _report(tmp_path, "old", "ci-host", "n1")
    _report(tmp_path, "new", "other-host", "n1", created="2026-11-30T02:00:00+00:00")
    fleet = merge([tmp_path])
    assert [n.name for n in fleet.nodes] == ["n1"] and len(fleet.duplicates) == 1


def test_without_a_node_the_host_is_the_key(tmp_path):
    _report(tmp_path, "a", "box-1", None)
    _report(tmp_path, "b", "box-1", None, created="2026-11-30T02:00:00+00:00")
    _report(tmp_path, "c", "box-2", None)
    fleet = merge([tmp_path])
    assert sorted(n.name for n in fleet.nodes) == ["box-1", "box-2"]
    assert len(fleet.duplicates) == 1
    assert json.loads((tmp_path / "a.json").read_text())["node"] is None
