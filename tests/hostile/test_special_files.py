"""FIFOs and device links as policy, lock, report, --nodes file and inside a report folder:
refused at once, never a hang, never gigabytes read (st_size is 0 for a device)."""

from __future__ import annotations

import json

import pytest

from tests.fleet.factory import node_report, write
from tests.hostile.conftest import SPECIALS, make_special, one_error_line, run


@pytest.mark.parametrize("kind", SPECIALS)
def test_policy(tmp_path, cache, site, kind):
    policy = make_special(tmp_path / "policy.toml", kind)
    proc = run("check", "--path", str(site), "--policy", str(policy), cache=cache)
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert "cannot read policy: not a regular file" in line


@pytest.mark.parametrize("kind", SPECIALS)
def test_lock(tmp_path, cache, site, kind):
    lock = make_special(tmp_path / "pylock.toml", kind)
    proc = run("check", "--path", str(site), "--lock", str(lock), cache=cache)
    assert proc.returncode == 2
    assert one_error_line(proc).startswith(f"{lock}: cannot read lock: not a regular file")
    proc = run("export", "requirements", str(lock), cache=cache)
    assert proc.returncode == 2 and "not a regular file" in one_error_line(proc)


@pytest.mark.parametrize("kind", SPECIALS)
def test_reports_named_and_in_a_folder(tmp_path, cache, kind):
    folder = tmp_path / "reports"
    write(folder / "a.json", node_report("a"))
    make_special(folder / "b.json", kind)
    named = make_special(tmp_path / f"c-{kind}.json", kind)
    proc = run("report", "merge", str(folder), str(named), "-f", "json", cache=cache)
    assert proc.returncode == 1, proc.stderr  # unreadable reports fail the fleet
    assert "Traceback" not in proc.stderr
    nodes = {n["name"]: n for n in json.loads(proc.stdout)["nodes"]}
    assert nodes["a"]["status"] == "ok"
    for name in ("b", f"c-{kind}"):
        assert nodes[name]["status"] == "unreadable"
        assert "not a regular file" in nodes[name]["detail"]


@pytest.mark.parametrize("kind", SPECIALS)
def test_nodes_file(tmp_path, cache, kind):
    report = write(tmp_path / "a.json", node_report("a"))
    nodes = make_special(tmp_path / "nodes.txt", kind)
    proc = run("report", "merge", str(report), "--nodes", str(nodes), cache=cache)
    assert proc.returncode == 2
    assert one_error_line(proc) == f"{nodes}: --nodes: not a regular file ({_kind(kind)})"


def _kind(kind: str) -> str:
    return "a FIFO" if kind == "fifo" else "a character device"


@pytest.mark.parametrize("kind", SPECIALS)
def test_metadata_and_record_inside_a_target(tmp_path, cache, site, kind):
    info = next(site.glob("triton-*.dist-info"))
    (info / "RECORD").unlink()
    make_special(info / "RECORD", kind)
    (info / "METADATA").rename(info / "METADATA.real")
    make_special(info / "METADATA", kind)
    proc = run("audit", "--path", str(site), "--verify-files", "-f", "json", cache=cache)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert any("triton" in w and "cannot read metadata" in w for w in report["warnings"])


@pytest.mark.parametrize("kind", SPECIALS)
def test_model_files(tmp_path, cache, kind):
    models = tmp_path / "model"
    models.mkdir()
    for name in ("model.safetensors", "weights.gguf", "pytorch_model.bin", "config.json"):
        make_special(models / name, kind if name != "config.json" else "fifo")
    for target in (models, *sorted(models.iterdir())):
        proc = run("scan-model", str(target), "-f", "json", cache=cache)
        # not a hang, not a traceback, and never a pass: nothing could be read
        assert proc.returncode in (2, 3), proc.stderr
        assert "Traceback" not in proc.stderr
