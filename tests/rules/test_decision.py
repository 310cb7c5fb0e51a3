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


BIN = "/env/bin"


def _facts(vendor_files=None, guard=()):
    from dtkguard import protected

    def kind_of(path: str) -> str | None:
        return protected.protected_kind(path, [SITE], BIN)

    files = vendor_files or {"torch": [f"{SITE}/torch/version.py", f"{SITE}/torch/__init__.py"]}
    return d.env_facts([SITE], files, BIN, kind_of, protected.may_write, guard)


def _judge(name: str, paths: list[str], version: str = "1.0", **kw) -> list[d.Problem]:
    return d.judge_files(POLICY, name, version, paths, kw.pop("facts", None) or _facts(), **kw)


@pytest.mark.parametrize(
    "rel",
    [
        "torch/version.py",  # overwriting
        "torch/version/__init__.py",  # a package beats the module
        "torch/version.cpython-310-x86_64-linux-gnu.so",  # an extension beats a .py
        "torch/__pycache__/version.cpython-310.opt-1.pyc",  # python -O
        "torch/new_module.py",  # anything inside the vendor package
        "torch.py",  # a module of the same import name
        "torch-2.7.0.dist-info/METADATA",  # a second dist-info of the vendor project
        "torch.egg-info",
        "Torch-2.7.0.egg-info/PKG-INFO",
    ],
)
def test_nothing_inside_a_vendor_package_or_its_metadata(rel: str) -> None:
    found = _judge("innocent", [f"{SITE}/{rel}"])
    assert rules(found) == [("file-conflict", "critical")], rel
    # the vendor build itself (its pinned version) writes its own package
    assert _judge("torch", [f"{SITE}/{rel}"], TORCH) == []


def test_neighbours_of_a_vendor_package_are_free() -> None:
    for rel in ("torch_extras/__init__.py", "torchx.py", "helper/torch/version.py", "x.pth.txt"):
        assert _judge("innocent", [f"{SITE}/{rel}"]) == [], rel


def test_protected_files() -> None:
    for path in (
        f"{SITE}/_dtkguard_pip_hook.py",
        f"{SITE}/__pycache__/_dtkguard_finder.cpython-310.opt-2.pyc",
        f"{SITE}/dtkguard-pip-hook.pth",
        f"{SITE}/pip/_internal/commands/install/__init__.py",
        f"{BIN}/pip",
        f"{BIN}/python3",
        f"{BIN}/activate",
        "/env/dtkguard/policy.json",
    ):
        found = _judge("x", [path], facts=_facts(guard=["/env/dtkguard"]))
        assert rules(found) == [("guard-tamper", "critical")], path
    # pip may write pip's files, if it is a pip the guard supports
    assert _judge("pip", [f"{SITE}/pip/__init__.py", f"{BIN}/pip"], "26.3") == []
    found = _judge("pip", [f"{SITE}/pip/__init__.py"], "27.0")
    assert rules(found) == [("guard-tamper", "critical")]
    assert "not a pip the guard supports" in found[0].message


EVIL_PTH = "import sys; sys.meta_path.clear()\n"


def test_startup_code_by_content() -> None:
    for path in (f"{SITE}/evil.pth", f"{SITE}/sitecustomize.py", f"{SITE}/usercustomize/a.py"):
        contents = {path: EVIL_PTH}
        assert rules(_judge("x", [path], contents=contents)) == [("startup-code", "critical")]
    for path in (f"{SITE}/pkg/data.pth", f"{SITE}/sitecustomize_helpers.py"):
        assert _judge("x", [path]) == [], path
    pth = f"{SITE}/distutils-precedence.pth"
    good = {pth: d.DISTUTILS_PRECEDENCE + "\n"}
    assert _judge("setuptools", [pth], "80.0", contents=good) == []
    # the name alone allows nothing: another dist, or setuptools with other content
    assert rules(_judge("not-setuptools", [pth], contents=good))[0][0] == "startup-code"
    assert rules(_judge("setuptools", [pth], contents={pth: EVIL_PTH}))[0][0] == "startup-code"
    ed = f"{SITE}/__editable__.proj-0.1.pth"
    finder = "__editable___proj_0_1_finder"
    ok = {ed: f"import {finder}; {finder}.install()\n"}
    assert _judge("proj", [ed], "0.1", contents=ok, members={finder}) == []
    assert _judge("proj", [ed], "0.1", contents={ed: "/src/proj\n"}) == []
    for name, version, text, members in (
        ("other", "0.1", ok[ed], {finder}),  # another dist's editable .pth
        ("proj", "0.1", ok[ed], set()),  # a finder the wheel does not ship
        ("proj", "0.1", EVIL_PTH, {finder}),
        ("proj", "0.2", ok[ed], {finder}),
    ):
        found = _judge(name, [ed], version, contents={ed: text}, members=members)
        assert rules(found) == [("startup-code", "critical")], (name, text)
    venv = f"{SITE}/_virtualenv.pth"
    assert rules(_judge("virtualenv", [venv], contents={venv: "import _virtualenv"}))


def test_namespace_pth_of_setuptools() -> None:
    line = (
        "import sys, types, os;has_mfs = sys.version_info > (3, 5);p = os.path.join(sys."
        "_getframe(1).f_locals['sitedir'], *('google',));importlib = has_mfs and __import__("
        "'importlib.util');has_mfs and __import__('importlib.machinery');m = has_mfs and "
        "sys.modules.setdefault('google', importlib.util.module_from_spec(importlib.machinery."
        "PathFinder.find_spec('google', [os.path.dirname(p)])));m = m or sys.modules.setdefault"
        "('google', types.ModuleType('google'));mp = (m or []) and m.__dict__.setdefault("
        "'__path__',[]);(p not in mp) and mp.append(p)\n"
    )
    pth = f"{SITE}/google_x-1.0-py3.10-nspkg.pth"
    assert _judge("google-x", [pth], contents={pth: line}, members={"google"}) == []
    assert rules(_judge("google-x", [pth], contents={pth: line}, members={"other"}))
    bad = line.replace("mp.append(p)", "mp.append(p);sys.meta_path.clear()")
    assert rules(_judge("google-x", [pth], contents={pth: bad}, members={"google"}))


def test_removals_judged_by_what_they_delete() -> None:
    facts = _facts()
    files = [f"{SITE}/torch/version.py", f"{SITE}/torch/other.so"]
    assert rules(d.judge_removals(POLICY, "innocent", files, facts)) == [
        ("file-conflict", "critical")
    ]
    assert d.judge_removals(POLICY, "torch", files, facts, replacement=TORCH) == []
    assert rules(d.judge_removals(POLICY, "torch", files, facts, replacement="2.6.0"))
    assert rules(d.judge_removals(POLICY, "x", [f"{BIN}/pip"], facts)) == [
        ("guard-tamper", "critical")
    ]
    assert d.judge_removals(POLICY, "pip", [f"{BIN}/pip"], facts, replacement="26.3") == []


def test_uninstalls_are_judged_as_installs_are() -> None:
    """`judge_uninstall`: the vendor build goes only while its own build replaces it, its files
    and the guard's by `judge_removals`, the policy's exceptions waive as `decide`'s do."""
    facts = _facts()
    files = [f"{SITE}/torch/version.py", f"{SITE}/torch/__init__.py"]
    today = "2030-01-01"
    assert rules(d.judge_uninstall(POLICY, "torch", TORCH, files, facts, today)) == [
        ("vendor-missing", "critical"),
        ("file-conflict", "critical"),
    ]
    assert d.judge_uninstall(POLICY, "Torch", TORCH, files, facts, today, TORCH) == []
    replaced = d.judge_uninstall(POLICY, "torch", TORCH, files, facts, today, "2.6.0")
    assert rules(replaced) == [("vendor-missing", "critical"), ("file-conflict", "critical")]
    free = [f"{SITE}/idna/__init__.py", f"{SITE}/idna-3.10.dist-info/RECORD"]
    assert d.judge_uninstall(POLICY, "idna", "3.10", free, facts, today) == []
    assert rules(d.judge_uninstall(POLICY, "x", "1", [f"{BIN}/pip"], facts, today)) == [
        ("guard-tamper", "critical")
    ]
    waive = [
        {"rule": rule, "package": "torch", "reason": "r", "expires": "2030-01-31"}
        for rule in ("vendor-missing", "file-conflict")
    ]
    policy = {**POLICY, "exceptions": waive}
    assert d.judge_uninstall(policy, "torch", TORCH, files, facts, today) == []
    assert len(d.judge_uninstall(policy, "torch", TORCH, files, facts, "2030-02-01")) == 2


def test_an_install_elsewhere_that_removes_a_vendor_build() -> None:
    found = d.judge_moved_away(POLICY, "Torch", TORCH, "2030-01-01")
    assert rules(found) == [("vendor-replaced", "critical")]
    assert "install its replacement elsewhere" in found[0].message
    assert d.judge_moved_away(POLICY, "idna", "3.10", "2030-01-01") == []
    exc = {"rule": "vendor-replaced", "package": "torch", "reason": "r", "expires": "2030-01-31"}
    assert d.judge_moved_away({**POLICY, "exceptions": [exc]}, "torch", TORCH, "2030-01-01") == []


def test_vendor_deps_broken() -> None:
    from packaging.requirements import Requirement

    requires = {"torch": ["sympy==1.13.1", "filelock", 'numpy; extra == "opt"', "jinja2>=3"]}
    before = {"torch": TORCH, "sympy": "1.13.1", "filelock": "3.0", "jinja2": "3.1.4"}
    assert d.judge_vendor_deps(requires, before, Requirement) == []
    after = {**before, "sympy": "1.14.0"}
    after.pop("filelock")
    found = d.judge_vendor_deps(requires, after, Requirement, before)
    assert rules(found) == [("vendor-deps-broken", "high")] * 2
    assert {p.package for p in found} == {"sympy", "filelock"}
    assert "sympy==1.13.1" in found[1].message or "sympy==1.13.1" in found[0].message
    # already broken before the change: not the change's doing
    assert d.judge_vendor_deps(requires, after, Requirement, after) == []


def test_rule_engine_and_decision_agree_on_exceptions() -> None:
    import datetime

    from dtkguard.policy.compiled import PolicyException

    exc = PolicyException("denied-package", "nvidia-*", "r", "2030-01-31")
    assert exc.active(datetime.date(2030, 1, 31)) and not exc.active(datetime.date(2030, 2, 1))
    assert exc.covers("denied-package", "NVIDIA_cublas_cu12")
    assert not exc.covers("vendor-replaced", "nvidia-cublas-cu12")
