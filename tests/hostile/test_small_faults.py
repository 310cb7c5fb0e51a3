"""Issue 27 item 10: an HF cache ``refs/main`` that is a FIFO does not hang `scan-model`; a
rule id with backticks and markup is escaped in the markdown fleet view."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.fleet.factory import finding, node_report, write
from tests.hostile.conftest import HANG, run
from tests.modelscan.modelkit import deepseek_model


def test_a_fifo_refs_main_does_not_hang(tmp_path: Path, cache: Path) -> None:
    hub = tmp_path / "hub"
    repo = hub / "models--org--clean"
    deepseek_model(repo / "snapshots" / ("a" * 40), layers=1, shards=1, fp8=False)
    (repo / "refs").mkdir()
    os.mkfifo(repo / "refs" / "main")
    proc = run(
        "scan-model", str(repo), "-f", "json", cache=cache, env={"HF_HUB_CACHE": str(hub)}
    )  # fmt: skip  (run's timeout: HANG seconds)
    assert HANG and proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_hostile_rule_id_is_escaped_in_the_markdown_fleet_view(
    tmp_path: Path, cache: Path
) -> None:
    rule = "x`<script>alert(1)</script>`<img src=x onerror=alert(1)>"
    paths = []
    for host in ("n1", "n2"):
        data = node_report(host, [finding(rule, "torch", "high")])
        paths.append(str(write(tmp_path / f"{host}.json", data)))
    proc = run("report", "merge", *paths, "-f", "markdown", cache=cache)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "<script" not in proc.stdout and "<img" not in proc.stdout, proc.stdout
    assert "&lt;script" in proc.stdout
    json.dumps(proc.stdout)


def test_a_lock_from_env_without_wheel_sources_is_readable(tmp_path: Path, cache: Path) -> None:
    """No wheel source matched anything: the lock still has PEP 751's ``packages`` (empty),
    so `check --lock` and `export` read it instead of rejecting dtkguard's own lock."""
    from tests.support.sitetree import add_dist

    site = tmp_path / "lib" / "python3.10" / "site-packages"
    add_dist(site, "six", "1.16.0")
    lock = tmp_path / "pylock.env.toml"
    proc = run("lock", "--from-env", "--path", str(site), "-o", str(lock), "--no-index",
               cache=cache)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    check = run("check", "--path", str(site), "--lock", str(lock), cache=cache)
    assert check.returncode in (0, 1) and "not a valid PEP 751 lock" not in check.stderr
    export = run("export", "requirements", str(lock), cache=cache)
    assert export.returncode == 0, export.stderr
