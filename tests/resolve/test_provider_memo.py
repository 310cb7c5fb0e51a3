"""What the provider keeps within one resolution gives the answers it gave before: find_matches
once per (identifier, requirements, incompatible versions), the policy asked only where it
can object."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement

from dtkguard.resolve import provider as provider_module
from dtkguard.resolve.http import Fetcher
from dtkguard.resolve.provider import PolicyProvider
from dtkguard.resolve.resolver import Unsatisfiable, build_sources, resolve
from dtkguard.resolve.target import target_from
from tests.support.policies import load_policy
from tests.support.wheels import build_wheel

POLICY = load_policy("dtk-25.04.1", cache=False)


def _sources(folder):
    return build_sources(POLICY, Fetcher(), find_links=[str(folder)])


def test_the_same_question_gets_the_same_answer_read_once(tmp_path):
    for v in ("1.0", "2.0"):
        build_wheel(tmp_path, "lib", v)
    target = target_from(POLICY, None, None)
    provider = PolicyProvider(_sources(tmp_path), POLICY, target)
    try:
        req = provider.make_req(Requirement("lib>=1"), None)
        first = provider.find_matches("lib", {"lib": iter([req])}, {"lib": iter([])})
        again = provider.find_matches("lib", {"lib": iter([req])}, {"lib": iter([])})
        assert again is first
        assert [str(c.version) for c in first()] == ["2.0", "1.0"]
        assert [str(c.version) for c in again()] == ["2.0", "1.0"]
        newest = next(iter(first()))
        bad = provider.find_matches("lib", {"lib": iter([req])}, {"lib": iter([newest])})
        assert bad is not first
        assert [str(c.version) for c in bad()] == ["1.0"]
    finally:
        provider.close()


def test_the_policy_judges_only_labelled_builds_of_projects_it_does_not_name(tmp_path, monkeypatch):
    """A project the policy names nowhere is taken without asking the policy file by file;
    a build of it labelled for another DTK release is still judged and refused."""
    build_wheel(tmp_path, "plain", "1.0")
    build_wheel(tmp_path, "plain", "2.0")
    build_wheel(tmp_path, "labelled", "1.0+das.opt1.dtk2404")
    asked: list[tuple[str, str]] = []
    real = provider_module._allowed

    def counting(policy, name, version):
        asked.append((name, str(version)))
        return real(policy, name, version)

    monkeypatch.setattr(provider_module, "_allowed", counting)
    target = target_from(POLICY, None, None)
    res = resolve([Requirement("plain")], _sources(tmp_path), POLICY, target)
    assert [(p.name, p.version) for p in res.packages] == [("plain", "2.0")]
    assert asked == []
    with pytest.raises(Unsatisfiable):
        resolve([Requirement("labelled")], _sources(tmp_path), POLICY, target)
    assert set(asked) == {("labelled", "1.0+das.opt1.dtk2404")}
