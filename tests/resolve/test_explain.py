"""Conflict explanations: the derivation chain, policy words only where the policy is a reason,
and no "no version resolves" for a package that resolves on its own."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement

from dtkguard.resolve.http import Fetcher
from dtkguard.resolve.resolver import Unsatisfiable, build_sources, resolve
from dtkguard.resolve.target import TargetEnv
from tests.support.policies import load_policy
from tests.support.wheels import build_wheel

POLICY = load_policy("dtk-25.04.1", cache=False)


def _fail(tmp_path, reqs, policy=None, vendor=()):
    sources = build_sources(
        policy, Fetcher(), vendor_find_links=list(vendor), find_links=[str(tmp_path / "w")]
    )
    with pytest.raises(Unsatisfiable) as err:
        resolve([Requirement(r) for r in reqs], sources, policy, TargetEnv())
    return err.value.lines


def test_chain_through_two_packages_ends_in_policy_words(tmp_path):
    w = tmp_path / "w"
    build_wheel(w, "app", "1.0", requires_dist=["lib>=2"])
    build_wheel(w, "lib", "2.0", requires_dist=["torch==2.7.0"])
    build_wheel(w, "lib", "2.1", requires_dist=["torch==2.7.0"])
    build_wheel(w, "torch", "2.7.0")
    build_wheel(tmp_path / "v", "torch", "2.4.1+das.opt1.dtk25041")
    lines = _fail(tmp_path, ["app"], POLICY, [tmp_path / "v"])
    assert lines[0] == (
        "because app 1.0 depends on lib>=2, lib 2.0 through 2.1 (2 versions) require "
        "torch==2.7.0; policy dtk-25.04.1 allows torch only as 2.4.1+das.opt1.dtk25041"
    )
    assert lines[-1] == "no version of app resolves under the policy"


def test_a_package_that_resolves_alone_is_not_said_to_never_resolve(tmp_path):
    w = tmp_path / "w"
    build_wheel(w, "a", "1.0", requires_dist=["c<2"])
    build_wheel(w, "b", "1.0", requires_dist=["c>=2"])
    build_wheel(w, "c", "1.0")
    build_wheel(w, "c", "2.0")
    lines = _fail(tmp_path, ["a", "b"], POLICY)  # the policy plays no part here
    assert not [line for line in lines if "policy" in line]
    assert "a 1.0 requires c<2" in lines
    assert "b 1.0 requires c>=2" in lines
    assert (
        "a resolves on its own, but none of the versions of a nearest to the request "
        "resolves together with the rest of the request"
    ) in lines
    assert not [line for line in lines if line.startswith("no version of a")]


def test_a_vendor_build_in_a_public_folder_says_which_option_to_use(tmp_path):
    build_wheel(tmp_path / "w", "torch", "2.4.1+das.opt1.dtk25041")
    (tmp_path / "v").mkdir()
    lines = _fail(tmp_path, ["torch"], POLICY, [tmp_path / "v"])
    assert lines[0].endswith(
        f"; {tmp_path / 'w'} has it but is a public source: pass it with --vendor-find-links"
    )


def test_a_version_with_broken_metadata_is_skipped_and_named(tmp_path):
    w = tmp_path / "w"
    build_wheel(w, "app", "2.0", requires_dist=["setuptools (>=18.5decorator)"])
    build_wheel(w, "app", "1.0")
    sources = build_sources(None, Fetcher(), find_links=[str(w)])
    res = resolve([Requirement("app")], sources, None, TargetEnv())
    assert [(p.name, p.version) for p in res.packages] == [("app", "1.0")]
    assert len(res.warnings) == 1
    assert res.warnings[0].startswith("skipped app-2.0-py3-none-any.whl: bad metadata")
    lines = _fail(tmp_path, ["app>=2"])
    assert lines[0].startswith("the request requires app>=2; unusable metadata in app-2.0-")


def test_the_pinned_request_is_not_resolved_again_to_explain_it(tmp_path, monkeypatch):
    """The trial of the version the request pins is the failed resolution itself: the
    explanation takes its answer and tries only the other versions."""
    from dtkguard.resolve import resolver

    w = tmp_path / "w"
    build_wheel(w, "app", "1.0", requires_dist=["lib>=2"])
    build_wheel(w, "app", "0.9", requires_dist=["lib"])
    build_wheel(w, "lib", "1.0")
    tried: list[list[str]] = []
    real = resolver.resolve

    def counting(reqs, *args, **kwargs):
        if kwargs.get("trial_of") is not None:
            tried.append([str(r) for r in reqs])
        return real(reqs, *args, **kwargs)

    monkeypatch.setattr(resolver, "resolve", counting)
    lines = _fail(tmp_path, ["app==1.0"])
    assert "the request requires app==1.0" not in lines
    assert lines[-1] == "versions of app that resolve for the target: 0.9"
    assert tried == [["app==0.9"]]
