"""`dtkguard.decision`: the one place that decides, on plain JSON facts (no I/O)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from packaging.version import Version

from dtkguard import decision as d
from tests.support.policies import load_policy

POLICY = load_policy("dtk-25.04.1").decision_json()
TORCH = "2.4.1+das.opt1.dtk25041"
SITE = "/env/lib/python3.10/site-packages"


def rules(problems: list[d.Problem]) -> list[tuple[str, str]]:
    return [(p.rule, p.severity) for p in problems]


def test_stdlib_only_and_no_dtkguard_imports() -> None:
    """The pip hook imports a copy of this file inside pip's process."""
    import sys

    tree = ast.parse(Path(d.__file__).read_text())
    names = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
    }
    assert names <= set(sys.stdlib_module_names), names


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("2.4.1+das.opt1.dtk25041", "2.4.1+DAS.opt1.dtk25041"),
        ("2.4.1+das.opt1.dtk25041", "2.4.1.0+das-opt1_dtk25041"),
        ("1.0rc1", "1.0c1"),
        ("1.0.post2", "1.0-2"),
        ("1!2.0", "1!2.0.0"),
        ("0.8.5.post1+das.opt1.dtk25041", "v0.8.5.post1+das.opt1.dtk25041"),
    ],
)
def test_same_version_is_pep440_equality(a: str, b: str) -> None:
    assert Version(a) == Version(b)
    assert d.same_version(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("2.4.1+das.opt1.dtk25041", "2.4.1"),
        ("2.4.1+das.opt1.dtk25041", "2.4.1+das.opt2.dtk25041"),
        ("2.4.1+das.opt1.dtk25041", "2.4.1+das.opt1.dtk2504"),
        ("1.0a1", "1.0b1"),
        ("1.0", "1.0.dev0"),
        ("1.0", None),
        ("not a version", "1.0"),
    ],
)
def test_different_versions(a: str, b: str | None) -> None:
    assert not d.same_version(a, b)


def test_vendor_pins() -> None:
    assert d.judge_dist(POLICY, "torch", TORCH) == []
    assert d.judge_dist(POLICY, "Torch", "2.4.1+DAS.opt1.dtk25041") == []
    assert rules(d.judge_dist(POLICY, "torch", "2.6.0+cu124")) == [("vendor-replaced", "critical")]
    assert "a CUDA build" in d.judge_dist(POLICY, "torch", "2.6.0+cu124")[0].message
    assert rules(d.judge_dist(POLICY, "torch", None)) == [("vendor-replaced", "critical")]
    assert rules(d.judge_dist(POLICY, "torch", "2.4.1+das.opt2.dtk25041")) == [
        ("vendor-mismatch", "high")
    ]
    # another vendor build of another DTK release: mismatched and mixed
    assert rules(d.judge_dist(POLICY, "torch", "2.6.0+das.opt1.dtk2604")) == [
        ("vendor-mismatch", "high"),
        ("dtk-mixed", "high"),
    ]


def test_deny_severity_and_vendor_builds_ok() -> None:
    assert rules(d.judge_dist(POLICY, "nvidia-cublas-cu12", "12.4.5.8")) == [
        ("denied-package", "critical")
    ]
    assert rules(d.judge_dist(POLICY, "bitsandbytes", "0.44.1")) == [("denied-package", "high")]
    assert d.judge_dist(POLICY, "bitsandbytes", "0.45.0+das.dtk25041") == []
    policy = {**POLICY, "deny": [{"pattern": "x-*", "reason": "r", "severity": "medium"}]}
    found = d.judge_dist(policy, "X_Thing", "1.0")
    assert rules(found) == [("denied-package", "medium")] and not d.refusals(found)


def test_dtk_release_against_policy_and_allow_list() -> None:
    assert d.judge_dist(POLICY, "grouped-gemm-x", "0.5.0+das.dtk2504") == []  # dtk-allow 25.04
    found = d.judge_dist(POLICY, "kernel", "1.0+das.dtk2604")
    assert rules(found) == [("dtk-mixed", "high")]
    assert (
        "DTK 26.04" in found[0].message and "DTK 25.04.1 (policy dtk-25.04.1)" in found[0].message
    )
    assert d.judge_dist({**POLICY, "dtk_allow": ["26.04"]}, "kernel", "1.0+das.dtk2604") == []
    # no dtk in the policy: the environment's torch is the reference
    bare = {**POLICY, "dtk": None}
    ref = d.reference_release(bare, {"torch": TORCH, "x": "1.0+das.dtk2604"})
    assert ref == ((25, 4, 1), f"torch {TORCH}")
    assert rules(d.judge_dist(bare, "kernel", "1.0+das.dtk2604", ref)) == [("dtk-mixed", "high")]
    assert d.judge_dist(bare, "kernel", "1.0+das.dtk2604") == []  # nothing to compare with


def test_exceptions_waive_until_they_expire() -> None:
    exc = {"rule": "denied-package", "package": "nvidia-*", "reason": "r", "expires": "2030-01-31"}
    policy = {**POLICY, "exceptions": [exc]}
    item = [("nvidia-cublas-cu12", "12.4.5.8")]
    assert d.decide(policy, item, "2030-01-31") == []
    assert rules(d.decide(policy, item, "2030-02-01")) == [("denied-package", "critical")]
    assert rules(d.decide(policy, [("torch", "2.6.0")], "2030-01-01")) == [
        ("vendor-replaced", "critical")
    ]


def test_files_owned_by_a_vendor_build() -> None:
    owners = {f"{SITE}/torch/version.py": "torch", f"{SITE}/torch/__init__.py": "torch"}
    files = [f"{SITE}/torch/version.py", f"{SITE}/torch/__init__.py", f"{SITE}/helper/x.py"]
    found = d.judge_files(POLICY, "innocent", files, owners, (), [SITE])
    assert rules(found) == [("file-conflict", "critical")]
    assert "and 1 more, files of the vendor build torch" in found[0].message
    # the vendor dist itself writes its own files
    assert d.judge_files(POLICY, "torch", files[:2], owners, (), [SITE]) == []


def test_guard_files_and_startup_code() -> None:
    guard = [f"{SITE}/_dtkguard_pip_hook.py", "/env/dtkguard"]
    hits = [f"{SITE}/_dtkguard_pip_hook.py", "/env/dtkguard/policy.json"]
    found = d.judge_files(POLICY, "x", hits, {}, guard, [SITE])
    assert rules(found) == [("guard-tamper", "critical")]
    for path in (
        f"{SITE}/evil.pth",
        f"{SITE}/sitecustomize.py",
        f"{SITE}/usercustomize/__init__.py",
    ):
        assert rules(d.judge_files(POLICY, "x", [path], {}, (), [SITE])) == [
            ("startup-code", "critical")
        ], path
    # not start-up code: a .pth inside a package, a module merely named like one
    for path in (f"{SITE}/pkg/data.pth", f"{SITE}/sitecustomize_helpers.py"):
        assert d.judge_files(POLICY, "x", [path], {}, (), [SITE]) == [], path
    # the bundled allow list: setuptools' own .pth, editable installs
    assert (
        d.judge_files(POLICY, "setuptools", [f"{SITE}/distutils-precedence.pth"], {}, (), [SITE])
        == []
    )
    assert rules(
        d.judge_files(
            POLICY, "not-setuptools", [f"{SITE}/distutils-precedence.pth"], {}, (), [SITE]
        )
    ) == [("startup-code", "critical")]
    assert (
        d.judge_files(POLICY, "proj", [f"{SITE}/__editable__.proj-0.1.pth"], {}, (), [SITE]) == []
    )


def test_rule_engine_and_decision_agree_on_exceptions() -> None:
    import datetime

    from dtkguard.policy.compiled import PolicyException

    exc = PolicyException("denied-package", "nvidia-*", "r", "2030-01-31")
    assert exc.active(datetime.date(2030, 1, 31)) and not exc.active(datetime.date(2030, 2, 1))
    assert exc.covers("denied-package", "NVIDIA_cublas_cu12")
    assert not exc.covers("vendor-replaced", "nvidia-cublas-cu12")
