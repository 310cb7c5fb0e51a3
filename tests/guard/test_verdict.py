"""The verdict counts only what a plan introduces, whatever the wording of old findings."""

from __future__ import annotations

from dtkguard.env.environment import from_paths
from dtkguard.guard.plan import Plan, Planned
from dtkguard.guard.verdict import judge
from tests.support.policies import load_policy
from tests.support.sitetree import add_dist, vendor_site


def _plan(*items: tuple[str, str, list[str]]) -> Plan:
    install = [Planned(n, v, {"name": n, "version": v, "requires_dist": r}) for n, v, r in items]
    return Plan(0, "", "", install)


def test_a_preexisting_finding_whose_wording_changes_is_not_new(tmp_path, monkeypatch):
    monkeypatch.setenv("DTKGUARD_CACHE_DIR", str(tmp_path / "cache"))
    policy = load_policy("dtk-25.04.1")
    site = vendor_site(tmp_path / "site")
    add_dist(site, "nvidia-nccl-cu12", "2.20.5")  # already there: not this install's doing
    env = from_paths([site])
    # a new package that also requires it: the denied-package message now names it too
    verdict = judge(env, _plan(("rccl-shim", "1.0", ["nvidia-nccl-cu12"])), policy, site)
    assert not verdict.blocked, verdict.introduced
    # a new denied package, or a community torch, is new
    verdict = judge(env, _plan(("nvidia-cublas-cu12", "12.1.3.1", [])), policy, site)
    assert [(f.rule, f.subject) for f in verdict.blocking] == [
        ("denied-package", "nvidia-cublas-cu12")
    ]
    verdict = judge(env, _plan(("torch", "2.7.0", [])), policy, site)
    assert ("vendor-replaced", "torch") in {(f.rule, f.subject) for f in verdict.blocking}
