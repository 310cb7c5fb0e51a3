"""Each environment rule on fake installs, and the policy's exceptions."""

from __future__ import annotations

import datetime as dt
import textwrap

import pytest

from dtkguard.env.environment import from_paths
from dtkguard.findings import Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.engine import run_checks
from tests.support.policies import compile_policy, load_policy
from tests.support.sitetree import COMMUNITY_TORCH_VERSION_PY, add_dist, vendor_site


@pytest.fixture
def policy(tmp_path, monkeypatch):
    monkeypatch.setenv("DTKGUARD_CACHE_DIR", str(tmp_path / "cache"))
    return load_policy("dtk-25.04.1")


def findings(site, policy, today=None):
    ctx = CheckContext(from_paths([site]), policy, today or dt.date(2026, 11, 30))
    return run_checks(ctx, plugins=False)


def by_rule(found):
    return {(f.rule, f.subject): f for f in found}


def test_clean_vendor_env_has_no_findings(tmp_path, policy):
    assert findings(vendor_site(tmp_path / "site"), policy) == []


def test_community_torch_is_vendor_replaced_and_torch_build(tmp_path, policy):
    site = tmp_path / "site"
    add_dist(
        site,
        "torch",
        "2.4.1",
        files={"torch/version.py": COMMUNITY_TORCH_VERSION_PY},
        requires=("nvidia-cublas-cu12==12.1.3.1", "triton==3.0.0"),
    )
    add_dist(site, "nvidia-cublas-cu12", "12.1.3.1")
    found = by_rule(findings(site, policy))
    replaced = found[("vendor-replaced", "torch")]
    assert replaced.severity is Severity.CRITICAL
    assert "2.4.1+das.opt1.dtk25041" in replaced.message
    assert found[("torch-build", "torch")].evidence["cuda"] == "12.4"
    denied = found[("denied-package", "nvidia-cublas-cu12")]
    assert denied.severity is Severity.CRITICAL
    assert denied.evidence["required_by"] == ["torch 2.4.1"]


def test_hip_none_is_torch_build(tmp_path, policy):
    site = tmp_path / "site"
    add_dist(
        site,
        "torch",
        "2.4.1+das.opt1.dtk25041",
        files={"torch/version.py": "__version__ = '2.4.1'\ncuda = None\nhip = None\n"},
    )
    (f,) = findings(site, policy)
    assert f.rule == "torch-build" and "hip = None" in f.message


def test_other_vendor_build_is_mismatch(tmp_path, policy):
    site = vendor_site(tmp_path / "site")
    add_dist(site, "flash_attn", "2.6.1+das.opt4.dtk2504")
    (f,) = findings(site, policy)
    assert (f.rule, f.subject, f.severity) == ("vendor-mismatch", "flash-attn", Severity.HIGH)


def test_dtk_mixed_and_torch_abi(tmp_path, policy):
    site = vendor_site(tmp_path / "site")
    add_dist(site, "lightop", "0.5.0+das.dtk2604")
    add_dist(site, "lmslim", "0.3.1+das.opt4.dtk2604.torch290")
    add_dist(site, "xformers", "0.0.28+das.opt1.dtk25041.torch241")
    found = by_rule(findings(site, policy))
    assert "DTK 26.04" in found[("dtk-mixed", "lightop")].message
    assert ("dtk-mixed", "lmslim") in found
    abi = found[("torch-abi", "lmslim")]
    assert abi.evidence == {"built_for": "2.9.0", "torch": "2.4.1+das.opt1.dtk25041"}
    # a dtk2504 build is allowed beside dtk25041 by the policy's dtk-allow; torch241 matches
    assert not any(subject in ("grouped-gemm", "xformers") for _, subject in found)


def test_vendor_builds_ok_in_deny_rules(tmp_path, policy):
    site = tmp_path / "site"
    add_dist(site, "xformers", "0.0.28.post1")
    add_dist(site, "sgl-kernel", "0.1.0+das.dtk25041")
    found = by_rule(findings(site, policy))
    assert found[("denied-package", "xformers")].severity is Severity.HIGH
    assert ("denied-package", "sgl-kernel") not in found


def test_exceptions_waive_expire_and_go_unused(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(
        textwrap.dedent("""
        [policy]
        extends = ["dtk-25.04.1"]
        [[exceptions]]
        rule = "denied-package"
        package = "nvidia-nccl-cu12"
        reason = "RCCL shim until DTK 25.04.2"
        expires = 2027-01-31
        [[exceptions]]
        rule = "denied-package"
        package = "cupy-cuda12x"
        reason = "old waiver"
        expires = 2026-01-01
        [[exceptions]]
        rule = "vendor-mismatch"
        package = "vllm"
        reason = "hotfix build"
        expires = 2027-06-30
    """)
    )
    policy = compile_policy(path)
    site = vendor_site(tmp_path / "site")
    add_dist(site, "nvidia-nccl-cu12", "2.20.5")
    add_dist(site, "cupy-cuda12x", "13.0.0")
    found = by_rule(findings(site, policy))
    assert ("denied-package", "nvidia-nccl-cu12") not in found
    assert ("denied-package", "cupy-cuda12x") in found
    assert found[("exception-expired", "denied-package:cupy-cuda12x")].severity is Severity.MEDIUM
    assert found[("exception-unused", "vendor-mismatch:vllm")].severity is Severity.LOW
    # after its expiry the first waiver stops applying
    later = by_rule(findings(site, policy, dt.date(2027, 2, 1)))
    assert ("denied-package", "nvidia-nccl-cu12") in later


def test_exception_names_are_normalised(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(
        '[policy]\nextends = ["dtk-25.04.1"]\n[[exceptions]]\nrule = "vendor-mismatch"\n'
        'package = "Flash_Attn"\nreason = "hotfix build"\nexpires = 2999-01-01\n'
    )
    site = vendor_site(tmp_path / "site")
    add_dist(site, "flash_attn", "2.6.1+das.opt4.dtk25041")
    assert findings(site, compile_policy(path)) == []


def test_every_family_module_declares_its_rules_once():
    import importlib

    from dtkguard.rules.catalog import FAMILIES, GUARD_RULES, HOUSEKEEPING, NODE_RULES, all_rules

    ids: list[str] = []
    for family, module in FAMILIES.items():
        mod = importlib.import_module(module)
        assert callable(mod.check), module
        assert mod.RULES and {r.family for r in mod.RULES} == {family}, module
        ids += [r.id for r in mod.RULES]
    ids += [r.id for r in (*GUARD_RULES, *NODE_RULES, *HOUSEKEEPING)]
    assert len(ids) == len(set(ids)) == len(all_rules())
    assert all(r.family for r in all_rules().values())
