"""dtkguard, pip 26.3 and uv agree on the same snapshot index (real pip and uv, same wheels
served on 127.0.0.1), for requests with and without backtracking, extras and pre-releases."""

from __future__ import annotations

import json
import sys

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from dtkguard.resolve.http import Fetcher
from dtkguard.resolve.resolver import build_sources, resolve
from dtkguard.resolve.target import TargetEnv
from tests.support.index import serve_index
from tests.support.venvs import make_venv, run_uv

REQUESTS = [
    ("pypi-2020-11-17-cheroot", ["pip", "pyparsing"]),
    ("pypi-2020-02-15-pandas", ["pandas", "pandas[test]"]),
    ("pypi-2020-02-19-virtualenv-six", ["six<1.12", "virtualenv"]),
]


@pytest.fixture(scope="module")
def pip263(tmp_path_factory):
    return make_venv(tmp_path_factory.mktemp("agree") / "pip", pip_version="26.3")


def _pip(venv, url, reqs, tmp_path) -> dict[str, Version]:
    report = tmp_path / "report.json"
    venv.pip("install", "--dry-run", "--ignore-installed", "--only-binary", ":all:",
             "--python-version", "3.10", "--no-cache-dir", "--index-url", url,
             "--report", report, *reqs)  # fmt: skip
    return {
        str(canonicalize_name(i["metadata"]["name"])): Version(i["metadata"]["version"])
        for i in json.loads(report.read_text())["install"]
    }


def _uv(url, reqs) -> dict[str, Version]:
    proc = run_uv("pip", "compile", "--python-version", "3.10", "--python", sys.executable,
                  "--no-cache", "--index-url", url, "--no-header", "--no-annotate", "-",
                  input="\n".join(reqs) + "\n")  # fmt: skip
    out = {}
    for line in proc.stdout.splitlines():
        name, sep, version = line.strip().partition("==")
        if sep:
            out[str(canonicalize_name(name.split("[")[0]))] = Version(version)
    return out


@pytest.mark.parametrize(
    ("index", "reqs"), REQUESTS, ids=lambda x: "+".join(x) if isinstance(x, list) else x
)
def test_dtkguard_pip_and_uv_pick_the_same_versions(snapshot, pip263, tmp_path, index, reqs):
    wheels = snapshot(index)
    with serve_index(wheels) as server:
        sources = build_sources(None, Fetcher(), index_url=server.url)
        res = resolve([Requirement(r) for r in reqs], sources, None, TargetEnv("3.10"))
        ours = {p.name: Version(p.version) for p in res.packages}
        assert ours == _pip(pip263, server.url, reqs, tmp_path)
        assert ours == _uv(server.url, reqs)
