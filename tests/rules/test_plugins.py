"""Third-party checks registered under the ``dtkguard.checks`` entry point group."""

from __future__ import annotations

import datetime as dt
import sys

from dtkguard.env.environment import from_paths
from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.engine import plugin_checks, run_checks
from tests.support.policies import load_policy
from tests.support.sitetree import add_dist


def test_entry_point_check_runs(tmp_path, monkeypatch):
    plugin_site = tmp_path / "plugins"
    dist_info = add_dist(
        plugin_site, "acme-dtk-checks", "1.0", files={"acme_checks.py": PLUGIN_SOURCE}
    )
    (dist_info / "entry_points.txt").write_text(
        "[console_scripts]\nx = y:z\n\n[dtkguard.checks]\nno-rich = acme_checks:check\n"
    )
    monkeypatch.syspath_prepend(str(plugin_site))
    assert len(plugin_checks([str(plugin_site)])) == 1
    site = tmp_path / "site"
    add_dist(site, "rich", "13.0")
    monkeypatch.setenv("DTKGUARD_CACHE_DIR", str(tmp_path / "cache"))
    ctx = CheckContext(from_paths([site]), load_policy(), dt.date(2026, 11, 30))
    (finding,) = run_checks(ctx)
    assert finding == Finding("acme.no-rich", Severity.LOW, "rich", "rich is not allowed here")
    sys.modules.pop("acme_checks", None)


PLUGIN_SOURCE = """
from dtkguard.findings import Finding, Severity


def check(ctx):
    for dist in ctx.env:
        if dist.key == "rich":
            yield Finding("acme.no-rich", Severity.LOW, "rich", "rich is not allowed here")
"""
