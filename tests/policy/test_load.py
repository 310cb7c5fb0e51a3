"""Loading policies: the bundled one, extends, the cache, and every kind of bad input."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from dtkguard.decision import canonical
from dtkguard.errors import PolicyError
from dtkguard.policy.locate import bundled_names, resolve_policy_path
from tests.support.policies import compile_policy, load_policy

#: `pip list | grep dtk` in the DAS 25.04.1 image, verbatim from the vendor's documentation
SEED_LIST = Path(__file__).parents[1] / "data" / "das-25.04.1-pip-list.txt"
SEED_PACKAGES = {
    canonical(name): version
    for name, version in (line.split() for line in SEED_LIST.read_text().splitlines())
}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DTKGUARD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DTKGUARD_POLICY", raising=False)


def write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_bundled_policy_holds_the_seed_image():
    policy = load_policy("dtk-25.04.1")
    assert len(SEED_PACKAGES) == 23
    assert policy.vendor == SEED_PACKAGES
    assert policy.dtk == "25.04.1"
    for name in (
        "nvidia-cublas-cu12",
        "nvidia-cudnn-cu11",
        "nvidia-nccl-cu13",
        "nvidia-cublas",
        "nvidia-cuda-runtime",
        "cuda-toolkit",
        "cuda-bindings",
        "cuda-python",
        "cupy-cuda12x",
        "onnxruntime-gpu",
        "tensorrt",
        "tensorrt-cu12-libs",
    ):
        rule = policy.deny_rule(name)
        assert rule is not None and rule.reason, name
    for name in ("accelerate", "transformers", "nvidia-ml-py", "numpy"):
        assert policy.deny_rule(name) is None, name
    assert "dtk-25.04.1" in bundled_names()


def test_default_lookup_order(tmp_path, monkeypatch):
    assert resolve_policy_path(None).name == "dtk-25.04.1.toml"
    mine = write(tmp_path, '[policy]\nname = "mine"\n')
    monkeypatch.setenv("DTKGUARD_POLICY", str(mine))
    assert load_policy().name == "mine"


def test_names_are_normalised(tmp_path):
    path = write(
        tmp_path,
        """
        [vendor]
        Flash_Attn = "2.6.1+das.opt1.dtk25041"
    """,
    )
    assert compile_policy(path).vendor_build("flash-attn") == "2.6.1+das.opt1.dtk25041"


def test_extends_merges_parent_first(tmp_path):
    write(
        tmp_path,
        """
        [policy]
        extends = ["dtk-25.04.1"]
        [vendor]
        torch = "2.4.1+das.opt2.dtk25041"
        [[deny]]
        pattern = "bitsandbytes"
        reason = "site rule"
        [fp8.cards]
        BW1100 = "allow"
    """,
        "site.toml",
    )
    policy = load_policy(str(tmp_path / "site.toml"))
    assert policy.name == "site"
    assert policy.vendor_build("torch") == "2.4.1+das.opt2.dtk25041"
    assert policy.vendor_build("vllm") == "0.8.5.post1+das.opt1.dtk25041"
    assert policy.dtk == "25.04.1"
    assert policy.fp8.action("weights", "BW1100") == "allow"
    assert policy.fp8.action("weights", "K100_AI") == "deny"
    assert len(policy.files) == 2


def test_joined_lists_hold_each_entry_once_within_a_file_and_across_the_chain(tmp_path):
    write(tmp_path, '[policy]\nname = "base"\ndtk-allow = ["24.04", "24.04"]\n', "base.toml")
    write(
        tmp_path,
        """
        [policy]
        extends = ["base.toml"]
        dtk-allow = ["25.04", "24.04", "25.04"]
        [guard]
        startup-allow = ["a.pth", "a.pth"]
    """,
        "site.toml",
    )
    policy = load_policy(str(tmp_path / "site.toml"))
    assert policy.dtk_allow == ("24.04", "25.04")
    assert policy.startup_allow == ("a.pth",)


def test_cache_is_used_and_invalidated(tmp_path):
    path = write(tmp_path, '[policy]\nname = "one"\n')
    assert load_policy(str(path)).name == "one"
    cached = list((tmp_path / "cache" / "policies").glob("*.json"))
    assert len(cached) == 1 and json.loads(cached[0].read_text())["policy"]["name"] == "one"
    path.write_text('[policy]\nname = "two-longer"\n')
    assert load_policy(str(path)).name == "two-longer"


BAD_POLICIES = [
    # (id, text, line, field, message fragment)
    (
        "unknown-key",
        """
        [sources]
        finds-links = ["/wheels"]
     """,
        2,
        "sources.finds-links",
        "did you mean 'find-links'",
    ),
    (
        "unknown-section",
        """
        [vendors]
        torch = "2.4.1+das.opt1.dtk25041"
     """,
        1,
        "vendors",
        "did you mean 'vendor'",
    ),
    (
        "no-local-label",
        """
        [vendor]
        apex = "1.4.0+das.opt1.dtk25041"
        torch = "2.4.1"
     """,
        3,
        "vendor.torch",
        "no local label",
    ),
    (
        "bad-version",
        """
        [vendor]
        torch = "two point four"
     """,
        2,
        "vendor.torch",
        "not a PEP 440 version",
    ),
    (
        "same-name",
        """
        [vendor]
        flash_attn = "2.6.1+das.opt1.dtk25041"
        flash-attn = "2.6.1+das.opt1.dtk25041"
     """,
        3,
        "vendor.flash-attn",
        "same package",
    ),
    (
        "expiry-not-a-date",
        """
        [[exceptions]]
        rule = "denied-package"
        package = "nvidia-nccl-cu12"
        reason = "waiting for the vendor RCCL"
        expires = "next spring"
     """,
        5,
        "exceptions[0].expires",
        "not a date",
    ),
    (
        "wrong-type",
        """
        [policy]
        extends = "dtk-25.04.1"
     """,
        2,
        "policy.extends",
        "valid list",
    ),
    (
        "invalid-toml",
        """
        [vendor]
        torch = "2.4.1+das.opt1.dtk25041
     """,
        2,
        None,
        "invalid TOML",
    ),
    ("empty", "", 1, None, "empty policy file"),
    (
        "deny-without-reason",
        """
        [[deny]]
        pattern = "nvidia-*"

        [[deny]]
        pattern = "cupy-cuda*"
     """,
        1,
        "deny[0].reason",
        "required key missing",
    ),
    (
        "bad-fp8-action",
        """
        [fp8]
        weights = "block"
     """,
        2,
        "fp8.weights",
        "'deny', 'warn' or 'allow'",
    ),
    (
        "bad-unresolved-model",
        """
        [fp8]
        unresolved-model = "allow"
     """,
        2,
        "fp8.unresolved-model",
        "'deny' or 'warn'",
    ),
    (
        "bad-severity",
        """
        [[deny]]
        pattern = "x"
        reason = "y"
        severity = "severe"
     """,
        4,
        "deny[0].severity",
        "critical",
    ),
    (
        "unknown-rule-in-exception",
        """
        [[exceptions]]
        rule = "vendor-replace"
        package = "torch"
        reason = "r"
        expires = 2030-01-01
     """,
        2,
        "exceptions[0].rule",
        "unknown rule id",
    ),
    (
        "bad-dtk-release",
        """
        [policy]
        dtk = "25-04"
     """,
        2,
        "policy.dtk",
        "not a DTK release",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "field", "fragment"),
    [case[1:] for case in BAD_POLICIES],
    ids=[c[0] for c in BAD_POLICIES],
)
def test_bad_policies_name_file_line_and_field(tmp_path, text, line, field, fragment):
    path = write(tmp_path, text)
    with pytest.raises(PolicyError) as info:
        load_policy(str(path))
    err = info.value
    assert err.file == str(path.resolve())
    assert err.line_no == line, err.line()
    assert err.field == field
    assert fragment in err.message
    assert "\n" not in err.line()
    assert err.line().startswith(f"{path.resolve()}:{line}:")


def test_extends_cycle(tmp_path):
    write(tmp_path, '[policy]\nextends = ["b.toml"]\n', "a.toml")
    write(tmp_path, '[policy]\nname = "b"\nextends = ["a.toml"]\n', "b.toml")
    with pytest.raises(PolicyError, match=r"extends cycle: a.toml -> b.toml -> a.toml") as info:
        load_policy(str(tmp_path / "a.toml"))
    # reported where the cycle closes: b.toml's extends line
    assert info.value.file.endswith("b.toml")
    assert info.value.field == "policy.extends[0]" and info.value.line_no == 3


def test_missing_extends_file(tmp_path):
    write(tmp_path, '[policy]\nname = "x"\nextends = [\n  "dtk-25.04.1",\n  "gone.toml",\n]\n')
    with pytest.raises(PolicyError, match="policy file not found") as info:
        load_policy(str(tmp_path / "p.toml"))
    assert info.value.field == "policy.extends[1]"
    assert info.value.line_no == 3


def test_unknown_bundled_name_suggests():
    with pytest.raises(PolicyError, match=r"did you mean 'dtk-25\.04\.1'"):
        load_policy("dtk-25.04")


UNKNOWN_RULE = """
    [[exceptions]]
    rule = "vendor-replace"
    package = "torch"
    reason = "r"
    expires = 2030-01-01
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["policy", "check", "{policy}"],
        ["policy", "show", "{policy}"],
        ["policy", "explain", "torch", "--policy", "{policy}"],
        ["check", "--policy", "{policy}", "--path", "{site}"],
        ["scan-model", "--policy", "{policy}", "{site}"],
    ],
    ids=["policy-check", "policy-show", "policy-explain", "check", "scan-model"],
)
def test_commands_check_exception_rule_ids_against_the_catalog(tmp_path, argv):
    """The policy layer takes the rule ids from its caller: every command passes the catalog's,
    so a typo'd id is bad input naming FILE:LINE:COL and field, and a third-party id passes."""
    from tests.support.cli import run_in_process

    site = tmp_path / "site"
    site.mkdir()
    bad = write(tmp_path, UNKNOWN_RULE, "bad.toml")
    args = [a.format(policy=bad, site=site) for a in argv]
    result = run_in_process(*args)
    assert result.code == 2, result.err
    assert f"{bad.resolve()}:2:" in result.err and "exceptions[0].rule" in result.err
    assert "unknown rule id 'vendor-replace'" in result.err
    plugin = write(tmp_path, UNKNOWN_RULE.replace("vendor-replace", "acme.no-foo"), "ok.toml")
    assert run_in_process("policy", "check", str(plugin)).code == 0
