"""`dtkguard lock` against what real indexes serve (issue 25): yanked files (PEP 592), files
excluded by ``data-requires-python`` or wheel tags, named in the explanation; real pip and uv
run against the same 127.0.0.1 index where they should agree."""

from __future__ import annotations

import json
import sys

import pytest
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from dtkguard.lock.read import read_lock
from tests.support.index import serve_index
from tests.support.venvs import make_venv, run_uv
from tests.support.wheels import build_wheel

from .conftest import HERE, run_cli

REASON = "broken build, use 1.1.0"


@pytest.fixture(scope="module")
def pip263(tmp_path_factory):
    return make_venv(tmp_path_factory.mktemp("pip263") / "pip", pip_version="26.3")


def _pip(venv, url: str, reqs: list[str], tmp_path, python: str) -> tuple[int, dict[str, str]]:
    report = tmp_path / "report.json"
    proc = venv.pip("install", "--dry-run", "--ignore-installed", "--only-binary", ":all:",
                    "--python-version", python, "--no-cache-dir", "--index-url", url,
                    "--report", report, *reqs, check=False)  # fmt: skip
    if proc.returncode:
        return proc.returncode, {}
    install = json.loads(report.read_text())["install"]
    return 0, {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"] for i in install}


def _uv(url: str, reqs: list[str], python: str) -> tuple[int, dict[str, str]]:
    proc = run_uv("pip", "compile", "--python-version", python, "--python", sys.executable,
                  "--no-cache", "--index-url", url, "--no-header", "--no-annotate", "-",
                  input="\n".join(reqs) + "\n", check=False)  # fmt: skip
    out = {}
    for line in proc.stdout.splitlines():
        name, sep, version = line.strip().partition("==")
        if sep:
            out[canonicalize_name(name)] = version
    return proc.returncode, out


def _lock(tmp_path, url: str, *args: str):
    out = tmp_path / "pylock.t.toml"
    out.unlink(missing_ok=True)
    proc = run_cli("lock", *args, "--policy", "dtk-25.04.1", "--index-url", url, *HERE,
                   "-o", out, cwd=tmp_path)  # fmt: skip
    got = {}
    if proc.returncode == 0:
        got = read_lock(out).versions()
    return proc, got, out


@pytest.fixture()
def yanked_index(tmp_path):
    w = tmp_path / "w"
    build_wheel(w, "bee", "1.0.0")
    build_wheel(w, "bee", "1.1.0")
    build_wheel(w, "app", "1.0", requires_dist=["bee==1.0.0"])
    build_wheel(w, "only", "2.0")
    yanked = {"bee-1.0.0-py3-none-any.whl": REASON, "only-2.0-py3-none-any.whl": True}
    with serve_index(w, yanked=yanked) as server:
        yield server


def test_a_yanked_release_pinned_exactly_is_locked_warned_and_recorded(
    yanked_index, tmp_path, pip263
):
    here = HERE[1]
    for pin in ("bee==1.0.0", "bee===1.0.0"):
        proc, got, out = _lock(tmp_path, yanked_index.url, pin)
        assert proc.returncode == 0, proc.stderr
        assert got == {"bee": "1.0.0"}
        assert f"bee 1.0.0 is yanked ({REASON})" in proc.stderr
        assert read_lock(out).by_name()["bee"].tool["dtkguard"]["yanked"] == REASON
    assert _pip(pip263, yanked_index.url, ["bee==1.0.0"], tmp_path, here) == (0, got)
    assert _uv(yanked_index.url, ["bee==1.0.0"], here) == (0, got)
    # through -r, and through a dependency that pins it
    (tmp_path / "reqs.txt").write_text("bee==1.0.0\n")
    proc, got, _ = _lock(tmp_path, yanked_index.url, "-r", "reqs.txt")
    assert proc.returncode == 0 and got == {"bee": "1.0.0"}, proc.stderr
    proc, got, _ = _lock(tmp_path, yanked_index.url, "app")
    assert proc.returncode == 0 and got == {"app": "1.0", "bee": "1.0.0"}, proc.stderr


def test_a_yanked_release_is_never_taken_for_a_range(yanked_index, tmp_path, pip263):
    here = HERE[1]
    proc, got, _ = _lock(tmp_path, yanked_index.url, "bee")
    assert proc.returncode == 0 and got == {"bee": "1.1.0"}, proc.stderr
    assert "is yanked" not in proc.stderr
    assert _pip(pip263, yanked_index.url, ["bee"], tmp_path, here) == (0, got)
    assert _uv(yanked_index.url, ["bee"], here) == (0, got)
    proc, got, out = _lock(tmp_path, yanked_index.url, "bee<1.1")
    assert proc.returncode == 1
    assert f"the request requires bee<1.1; bee 1.0.0 is yanked: {REASON}" in proc.stderr
    assert not out.exists()
    assert _uv(yanked_index.url, ["bee<1.1"], here)[0] != 0
    proc, _, _ = _lock(tmp_path, yanked_index.url, "only")
    assert proc.returncode == 1 and "only 2.0 is yanked" in proc.stderr, proc.stderr


def test_files_excluded_for_the_target_are_named_with_the_target(tmp_path, pip263):
    w = tmp_path / "w"
    build_wheel(w, "new", "1.0")
    for v in ("2.0", "2.1"):
        build_wheel(w, "new", v, requires_python=">=3.99")
    build_wheel(w, "mac", "1.0", tag="cp312-cp312-macosx_11_0_arm64")
    build_wheel(w, "mac", "1.0", tag="cp312-cp312-win_amd64")
    build_wheel(w, "uses", "1.0", requires_dist=["mac"])
    here = HERE[1]
    with serve_index(w) as server:
        proc, _, out = _lock(tmp_path, server.url, "new>=2")
        assert not out.exists()
        assert proc.returncode == 1
        assert (
            f"the request requires new>=2; new 2.0 through 2.1 (2 versions) require Python "
            f">=3.99; the target is {here}" in proc.stderr
        ), proc.stderr
        assert "no source has a wheel" not in proc.stderr
        assert _pip(pip263, server.url, ["new>=2"], tmp_path, here)[0] != 0
        assert _uv(server.url, ["new>=2"], here)[0] != 0
        proc, got, _ = _lock(tmp_path, server.url, "new")
        assert proc.returncode == 0 and got == {"new": "1.0"}
        assert _pip(pip263, server.url, ["new"], tmp_path, here) == (0, got)
        assert _uv(server.url, ["new"], here) == (0, got)
        proc, _, _ = _lock(tmp_path, server.url, "uses", "--platform", "manylinux_2_35_x86_64")
        assert proc.returncode == 1
        tag = f"cp{here.replace('.', '')}"
        assert (
            "uses 1.0 requires mac; mac has wheels only for cp312 macosx/win; the target is "
            f"{tag} manylinux_2_35_x86_64" in proc.stderr
        ), proc.stderr


def test_a_patch_level_target_is_accepted_and_used_as_pip_and_uv_use_it(tmp_path, pip263):
    w = tmp_path / "w"
    build_wheel(w, "lib", "1.1")
    build_wheel(w, "lib", "1.2", requires_python=">=3.10.5")
    with serve_index(w) as server:
        for python, want in (("3.10", "1.1"), ("3.10.12", "1.2")):
            out = tmp_path / "pylock.p.toml"
            proc = run_cli("lock", "lib", "--policy", "dtk-25.04.1", "--index-url", server.url,
                           "--python-version", python, "-o", out, cwd=tmp_path)  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            lock = read_lock(out)
            assert str(lock.by_name()["lib"].version) == want
            assert _pip(pip263, server.url, ["lib"], tmp_path, python) == (0, {"lib": want})
            assert _uv(server.url, ["lib"], python) == (0, {"lib": want})
        assert lock.pylock.requires_python == SpecifierSet(">=3.10.12,==3.10.*")
    bad = run_cli("lock", "lib", "--python-version", "3.10.x", "-o", "pylock.p.toml",
                  cwd=tmp_path)  # fmt: skip
    assert bad.returncode == 2 and "--python-version" in bad.stderr


def test_every_package_of_the_conflict_chain_is_named(tmp_path):
    w = tmp_path / "w"
    build_wheel(w, "top", "1.0", requires_dist=["mid[x]>=1"])
    build_wheel(w, "mid", "1.0", requires_dist=["low>=2; extra == 'x'"], provides_extra=["x"])
    for v in ("1.0", "2.0"):
        build_wheel(w, "low", v)
    with serve_index(w) as server:
        proc, _, _ = _lock(tmp_path, server.url, "top", "low<2")
        assert proc.returncode == 1
        assert "because top 1.0 depends on mid[x]>=1, mid[x] 1.0 requires low>=2" in proc.stderr
        assert "the request requires low<2" in proc.stderr
        assert _uv(server.url, ["top", "low<2"], HERE[1])[0] != 0


def test_an_index_that_is_vendor_and_public_source_is_read_once(tmp_path):
    w = tmp_path / "w"
    build_wheel(w, "app", "1.0", requires_dist=["lib"])
    build_wheel(w, "lib", "1.0")
    with serve_index(w) as server:
        proc = run_cli("lock", "app", "--policy", "dtk-25.04.1", *HERE, "--vendor-index-url",
                       server.url, "--index-url", server.url, "-o", "pylock.v.toml",
                       cwd=tmp_path)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        pages = [p for p in server.requests if p.startswith("/simple/")]
        assert sorted(pages) == ["/simple/app/", "/simple/lib/"], server.requests
