"""`dtkguard report node` on this host's real /proc, with real processes in other roots (chroots,
as a container's processes are): a DAS-like container, a busybox-like one without Python, and
containers that exit between being found and being audited."""

from __future__ import annotations

import json

import pytest

from dtkguard.fleet.html import render_html
from dtkguard.fleet.merge import merge
from dtkguard.fleet.render import render_markdown
from tests.fleet.nodes import chrooted, doom_wrapper, sleep_root, stop
from tests.fleet.test_k8s import _image
from tests.support import need
from tests.support.cli import dtkguard


@pytest.fixture
def roots(tmp_path):
    need.root("chroot")
    return {
        "das": _image(tmp_path / "das", "2.4.1+das.opt1.dtk25041"),
        # community torch, and /bin/sleep: a second process of the same root
        "community": _image(sleep_root(tmp_path / "community"), "2.4.1"),
        "busybox": sleep_root(tmp_path / "busybox"),
    }


def _node(tmp_path, *extra: str, env: dict | None = None) -> tuple[int, dict, str]:
    """``report node`` of this host, as the Job runs it (``--out -``)."""
    run = dtkguard("report", "node", "--out", "-", "--node", "real", *extra, env=env, timeout=300)
    report = json.loads(run.stdout) if run.stdout.strip() else {}
    assert run.returncode == (1 if report.get("verdict") == "fail" else 0), run.stderr
    (tmp_path / "real.json").write_text(run.stdout)
    return run.returncode, report, run.stderr


def _mine(report: dict, *children) -> dict[int, dict]:
    """The report's containers of ``children`` (other sessions may run containers too)."""
    pids = {c.pid for c in children}
    return {c["pid"]: c for c in report["target"]["containers"] if c["pid"] in pids}


def test_das_container_and_busybox_sidecar(tmp_path, roots):
    """The sidecar without Python is listed as such and does not fail the node; the DAS-like
    container is audited through its Python process."""
    das = chrooted(roots["das"])
    sidecar = chrooted(roots["busybox"], "/bin/sleep")
    try:
        _, report, err = _node(tmp_path)
        mine = _mine(report, das, sidecar)
        assert mine[das.pid]["status"] == "audited" and mine[das.pid]["verdict"] == "pass", err
        assert mine[sidecar.pid]["status"] == "no-python"
        assert mine[sidecar.pid]["reason"] == "no Python environment: nothing to audit"
        skipped = [f for f in report["findings"] if f["evidence"].get("pid") == sidecar.pid]
        assert [(f["rule"], f["severity"]) for f in skipped] == [("container-skipped", "info")]
        assert report["facts"]["no_python"] >= 1 and report["facts"]["audited"] >= 1
        ours_fail = [
            f for f in report["findings"] if f["evidence"].get("pid") in (das.pid, sidecar.pid)
        ]
        assert all(f["severity"] == "info" for f in ours_fail)
        # the merged view says which containers were not audited, and why
        text = render_markdown(merge([tmp_path / "real.json"]))
        assert "### Containers not audited" in text
        assert "| no-python | no Python environment: nothing to audit |" in text
        html = render_html(merge([tmp_path / "real.json"]))
        assert '<h2 id="containers">Containers not audited</h2>' in html
    finally:
        stop(das, sidecar)


def test_a_container_that_exits_mid_audit(tmp_path, roots):
    """Found, then gone before its audit: listed as exited, not a failure. One whose Python
    process exits while another process of its root runs is audited through that one."""
    gone = chrooted(roots["das"])
    python = chrooted(roots["community"])
    sibling = chrooted(roots["community"], "/bin/sleep")
    wrapper = doom_wrapper(tmp_path / "dtkguard-doomed")
    try:
        env = {"DOOMED": f"{gone.pid} {python.pid}"}
        _, report, err = _node(tmp_path, "--dtkguard", str(wrapper), env=env)
        mine = {c["root"]: c for c in report["target"]["containers"]}
        exited = mine[str(roots["das"])]
        assert exited["status"] == "exited" and exited["reason"] == "exited during the audit", err
        stand_in = mine[str(roots["community"])]
        assert stand_in["status"] == "audited" and stand_in["verdict"] == "fail"
        torch = [f for f in report["findings"] if f["rule"] == "vendor-replaced"]
        assert any(f["evidence"]["pid"] == stand_in["pid"] for f in torch)
        assert stand_in["pid"] == sibling.pid  # the process that was audited in its place
        ours = [
            f for f in report["findings"] if f["evidence"].get("pid") in (gone.pid, sibling.pid)
        ]
        assert "container-unaudited" not in {f["rule"] for f in ours}
    finally:
        stop(gone, python, sibling)
