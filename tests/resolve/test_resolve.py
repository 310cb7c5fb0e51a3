"""The resolver over real sources: a live PEP 691 index, a file:// PEP 503 tree, find-links."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement

from dtkguard.resolve.http import Fetcher
from dtkguard.resolve.resolver import Unsatisfiable, build_sources, resolve
from dtkguard.resolve.target import TargetEnv, expand_platform, target_from
from tests.support.index import JSON_TYPE, write_static_index
from tests.support.policies import load_policy
from tests.support.wheels import build_wheel

POLICY = load_policy("dtk-25.04.1", cache=False)
CUDA_ONLY = ("nvidia-", "cupy-cuda", "xformers")


def _resolve(reqs, vendor, index_url, target=None, find_links=()):
    fetcher = Fetcher()
    sources = build_sources(
        POLICY,
        fetcher,
        vendor_find_links=[str(vendor)],
        index_url=index_url,
        find_links=list(find_links),
    )
    try:
        return resolve(
            [Requirement(r) for r in reqs],
            sources,
            POLICY,
            target or target_from(POLICY, None, None),
        ), fetcher
    finally:
        fetcher.close()


def test_vendor_vllm_closure_from_json_index_reads_only_metadata(das_wheelhouses, das_index):
    res, fetcher = _resolve(["vllm"], das_wheelhouses[1], das_index.url)
    got = {p.name: p.version for p in res.packages}
    assert got["vllm"] == "0.8.5.post1+das.opt1.dtk25041"
    assert got["torch"] == "2.4.1+das.opt1.dtk25041"
    assert got["torchvision"] == "0.19.1+das.opt1.dtk25041"
    assert got["triton"] == "3.0.0+das.opt1.dtk25041"
    assert not [n for n in got if n.startswith(CUDA_ONLY)]
    assert 130 <= len(got) <= 160
    # PEP 691 JSON was negotiated and no wheel left the index: metadata came from .metadata files
    assert das_index.downloads() == []
    assert len(das_index.metadata_fetches()) >= len(got) - 23
    assert any(r.content_type == JSON_TYPE for r in das_index.log)
    assert fetcher.stats["wheels"] == 0
    assert res.rounds >= len(got)


def test_file_index_pep503_gives_the_same_set(das_wheelhouses, das_index, tmp_path):
    simple = write_static_index(das_wheelhouses[0], tmp_path / "static")
    via_file, _ = _resolve(["vllm"], das_wheelhouses[1], simple.as_uri())
    via_http, _ = _resolve(["vllm"], das_wheelhouses[1], das_index.url)
    assert [(p.name, p.version) for p in via_file.packages] == [
        (p.name, p.version) for p in via_http.packages
    ]
    assert via_file.packages[0].link.url.startswith("file:")


def test_index_without_metadata_files_falls_back_to_the_wheel(tmp_path):
    from tests.support.index import serve_index

    build_wheel(tmp_path / "w", "alpha", "1.0", requires_dist=["beta>=1"])
    build_wheel(tmp_path / "w", "beta", "1.1")
    with serve_index(tmp_path / "w", metadata=False) as server:
        fetcher = Fetcher()
        sources = build_sources(None, fetcher, index_url=server.url)
        res = resolve([Requirement("alpha")], sources, None, TargetEnv())
        assert [(p.name, p.version) for p in res.packages] == [("alpha", "1.0"), ("beta", "1.1")]
        assert sorted(server.downloads()) == [
            "alpha-1.0-py3-none-any.whl",
            "beta-1.1-py3-none-any.whl",
        ]


def test_vllm_092_conflict_reads_in_policy_words(das_wheelhouses, das_index):
    with pytest.raises(Unsatisfiable) as err:
        _resolve(["vllm==0.9.2"], das_wheelhouses[1], das_index.url)
    lines = err.value.lines
    assert lines[0] == (
        "vllm 0.9.2 requires torch==2.7.0; policy dtk-25.04.1 allows torch only as "
        "2.4.1+das.opt1.dtk25041; vllm 0.8.5.post1+das.opt1.dtk25041 is the vendor build"
    )
    assert lines[-1] == (
        "versions of vllm that resolve under the policy: 0.8.5.post1+das.opt1.dtk25041"
    )
    assert das_index.downloads() == []


def test_community_torch_is_refused_with_the_deny_rule(das_wheelhouses, das_index):
    with pytest.raises(Unsatisfiable) as err:
        _resolve(["torch==2.6.0"], das_wheelhouses[1], das_index.url)
    text = err.value.line()
    assert "torch 2.6.0 requires nvidia-" in text
    assert "policy dtk-25.04.1 denies nvidia-" in text
    assert "torch 2.4.1+das.opt1.dtk25041 is the vendor build" in text


def test_nearest_versions_of_a_public_package(tmp_path):
    w = tmp_path / "w"
    for v in ("1.0", "1.1", "1.2", "2.0"):
        build_wheel(w, "app", v, requires_dist=["torch==2.7.0"] if v == "2.0" else ["torch>=2.0"])
    build_wheel(tmp_path / "v", "torch", "2.4.1+das.opt1.dtk25041")
    build_wheel(w, "torch", "2.7.0")
    fetcher = Fetcher()
    sources = build_sources(
        POLICY, fetcher, vendor_find_links=[str(tmp_path / "v")], find_links=[str(w)]
    )
    with pytest.raises(Unsatisfiable) as err:
        resolve([Requirement("app==2.0")], sources, POLICY, TargetEnv())
    assert err.value.lines[0] == (
        "app 2.0 requires torch==2.7.0; policy dtk-25.04.1 allows torch only as "
        "2.4.1+das.opt1.dtk25041"
    )
    assert err.value.lines[-1] == "versions of app that resolve under the policy: 1.2, 1.1, 1.0"


def test_backtracking_case_finishes(tmp_path):
    w = tmp_path / "w"
    # a is tried newest first; a 3.0 and 2.0 pin b==1.0, which y (found only later) refuses:
    # the resolver must backtrack to a 1.0
    build_wheel(w, "a", "3.0", requires_dist=["b==1.0"])
    build_wheel(w, "a", "2.0", requires_dist=["b==1.0", "c<1"])
    build_wheel(w, "a", "1.0", requires_dist=["b>=1", "c>=1"])
    build_wheel(w, "x", "1.0", requires_dist=["y"])
    build_wheel(w, "y", "1.0", requires_dist=["b>=2"])
    for v in ("1.0", "2.0"):
        build_wheel(w, "b", v)
    for v in ("0.5", "1.5"):
        build_wheel(w, "c", v)
    fetcher = Fetcher()
    sources = build_sources(None, fetcher, find_links=[str(w)])
    res = resolve([Requirement("a"), Requirement("x")], sources, None, TargetEnv())
    got = {p.name: p.version for p in res.packages}
    assert got == {"a": "1.0", "b": "2.0", "c": "1.5", "x": "1.0", "y": "1.0"}
    assert res.backtracks >= 1


def test_markers_follow_the_target_python(das_wheelhouses, tmp_path):
    """Same real metadata as universal wheels: only the target's markers differ."""
    from tests.support.das_image import PY310_BACKPORTS
    from tests.support.reports import community_torch_241_packages, load_report, make_wheelhouse

    pkgs = [*load_report("vllm085"), *community_torch_241_packages(), *PY310_BACKPORTS]
    make_wheelhouse(tmp_path / "any", pkgs)
    fetcher = Fetcher()
    sources = build_sources(
        POLICY,
        fetcher,
        vendor_find_links=[str(das_wheelhouses[1])],
        find_links=[str(tmp_path / "any")],
    )
    py310 = resolve([Requirement("vllm")], sources, POLICY, TargetEnv("3.10"))
    py311 = resolve([Requirement("vllm")], sources, POLICY, TargetEnv("3.11"))
    names310 = {p.name for p in py310.packages}
    names311 = {p.name for p in py311.packages}
    backports = {"async-timeout", "exceptiongroup", "tomli"}
    assert backports <= names310
    assert not backports & names311
    assert names310 - backports == names311


def test_platform_tags_follow_the_target(tmp_path):
    w = tmp_path / "w"
    build_wheel(w, "k", "2.0", tag="cp310-cp310-manylinux_2_34_x86_64")
    build_wheel(w, "k", "1.0", tag="cp310-cp310-manylinux2014_x86_64")
    fetcher = Fetcher()
    sources = build_sources(None, fetcher, find_links=[str(w)])
    old = resolve([Requirement("k")], sources, None, TargetEnv("3.10", ("manylinux_2_28_x86_64",)))
    new = resolve([Requirement("k")], sources, None, TargetEnv("3.10", ("manylinux_2_35_x86_64",)))
    arm = TargetEnv("3.10", ("manylinux_2_35_aarch64",))
    assert [p.version for p in old.packages] == ["1.0"]
    assert [p.version for p in new.packages] == ["2.0"]
    with pytest.raises(Unsatisfiable):
        resolve([Requirement("k")], sources, None, arm)
    assert expand_platform("manylinux_2_17_x86_64")[:2] == [
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
    ]
    assert expand_platform("manylinux_2_17_x86_64")[-1] == "linux_x86_64"


def test_vendor_package_only_from_vendor_sources(tmp_path):
    """A vendor build that only a public source carries is not taken (dependency confusion)."""
    build_wheel(tmp_path / "pub", "torch", "2.4.1+das.opt1.dtk25041")
    (tmp_path / "ven").mkdir()
    fetcher = Fetcher()
    sources = build_sources(
        POLICY,
        fetcher,
        vendor_find_links=[str(tmp_path / "ven")],
        find_links=[str(tmp_path / "pub")],
    )
    with pytest.raises(Unsatisfiable) as err:
        resolve([Requirement("torch")], sources, POLICY, TargetEnv())
    assert "no vendor source has that build" in err.value.line()
