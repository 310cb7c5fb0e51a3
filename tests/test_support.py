"""Tests of the shared test infrastructure, against real pip, uv, venvs and HTTP."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import tarfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cache import CacheMissing, pip_wheel, wheel_dir
from tests.support.index import JSON_TYPE, IndexServer, serve_index, write_static_index
from tests.support.reports import (
    DAS_25041,
    PackageMeta,
    community_torch_241,
    load_report,
    make_wheelhouse,
    vendorise,
)
from tests.support.venvs import Venv, hermetic_env, make_venv, run_uv
from tests.support.wheels import (
    build_sdist,
    build_wheel,
    parse_metadata,
    read_wheel_metadata,
    wheel_filename,
)

LABEL_VERSION = "2.6.1+das.opt1.dtk25041"


# --------------------------------------------------------------------------- helpers / fixtures


def _get(url: str, accept: str | None = None) -> tuple[int, str, bytes]:
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


def _wheel(dir_: Path, prefix: str) -> Path:
    (found,) = [p for p in dir_.glob("*.whl") if p.name.startswith(prefix)]
    return found


@pytest.fixture(scope="session")
def venv263(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A read-only venv with pip 26.3 (for dry runs and downloads only)."""
    return make_venv(tmp_path_factory.mktemp("venv") / "pip263", pip_version="26.3")


@pytest.fixture
def small_index(tmp_path: Path) -> Iterator[IndexServer]:
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "flash-attn", LABEL_VERSION, requires_dist=["einops"], summary="FA")
    build_wheel(wheels, "einops", "0.8.1", requires_python=">=3.8")
    with serve_index(wheels) as server:
        yield server


# --------------------------------------------------------------------------- wheels


def test_wheel_name_version_and_determinism(tmp_path: Path) -> None:
    kwargs = dict(requires_dist=["torch==2.4.1+das.opt1.dtk25041"], files={"flash_attn/x.py": "1"})
    a = build_wheel(tmp_path / "a", "Flash.Attn", LABEL_VERSION, **kwargs)
    b = build_wheel(tmp_path / "b", "Flash.Attn", LABEL_VERSION, **kwargs)
    assert a.name == "flash_attn-2.6.1+das.opt1.dtk25041-py3-none-any.whl"
    assert a.read_bytes() == b.read_bytes()
    assert wheel_filename("torch", "2.4.1+das.opt1.dtk25041") == (
        "torch-2.4.1+das.opt1.dtk25041-py3-none-any.whl"
    )
    with zipfile.ZipFile(a) as zf:
        names = zf.namelist()
        assert names[-1] == "flash_attn-2.6.1+das.opt1.dtk25041.dist-info/RECORD"
        record = zf.read(names[-1]).decode().splitlines()
        for line in record:
            path, digest, size = line.rsplit(",", 2)
            if path.endswith("RECORD"):
                assert digest == size == ""
                continue
            data = zf.read(path)
            expect = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == "sha256=" + expect.decode()
            assert int(size) == len(data)
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    meta = parse_metadata(read_wheel_metadata(a))
    assert meta["Metadata-Version"] == "2.1"
    assert meta.get_all("Requires-Dist") == ["torch==2.4.1+das.opt1.dtk25041"]


def test_wheel_platform_tag_and_entry_points(tmp_path: Path) -> None:
    tag = "cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64"
    w = build_wheel(
        tmp_path, "demo", "1.0", tag=tag, entry_points={"console_scripts": {"demo": "demo:main"}}
    )
    assert w.name == f"demo-1.0-{tag}.whl"
    with zipfile.ZipFile(w) as zf:
        wheel_txt = zf.read("demo-1.0.dist-info/WHEEL").decode()
        assert "Root-Is-Purelib: false" in wheel_txt
        assert "Tag: cp310-cp310-manylinux2014_x86_64" in wheel_txt
        assert "demo = demo:main" in zf.read("demo-1.0.dist-info/entry_points.txt").decode()


def test_sdist_layout(tmp_path: Path) -> None:
    sd = build_sdist(tmp_path, "Tiny-Proj", "0.1", requires_dist=["einops"])
    assert sd.name == "tiny_proj-0.1.tar.gz"
    assert (
        sd.read_bytes()
        == build_sdist(
            tmp_path / "again", "Tiny-Proj", "0.1", requires_dist=["einops"]
        ).read_bytes()
    )
    with tarfile.open(sd) as tf:
        names = tf.getnames()
        pyproject = tf.extractfile("tiny_proj-0.1/pyproject.toml").read().decode()  # type: ignore[union-attr]
    assert "tiny_proj-0.1/PKG-INFO" in names
    assert 'requires = ["setuptools"]' in pyproject


@pytest.mark.wheel_cache
def test_wheel_installs_with_real_pip(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "flash-attn", LABEL_VERSION, files={"flash_attn/__init__.py": "X = 1\n"})
    make_wheelhouse(wheels, [p for p in _das() if p.key == "torch"], tag="py3-none-any")
    venv = make_venv(tmp_path / "venv", pip_version="26.3")
    assert venv.pip_version() == "26.3"
    venv.pip("install", "--no-index", "--find-links", wheels, "--no-deps", "flash-attn", "torch")
    probe = venv.run(
        "-c",
        "import importlib.metadata as m, torch.version as v, flash_attn;"
        "print(m.version('flash-attn'), m.version('torch'), v.cuda, v.hip, flash_attn.X)",
    )
    fa, torch, cuda, hip, x = probe.stdout.split()
    assert (fa, torch, cuda, x) == (LABEL_VERSION, DAS_25041["torch"], "None", "1")
    assert hip.startswith("6.2.")
    installed = venv.installed()
    assert installed["flash-attn"] == LABEL_VERSION
    assert installed["torch"] == "2.4.1+das.opt1.dtk25041"


@pytest.mark.wheel_cache
@pytest.mark.parametrize("pip_version", ["22.2.2", "26.3"])
def test_sdist_builds_in_isolation_offline(tmp_path: Path, pip_version: str) -> None:
    sdists = tmp_path / "sdists"
    build_sdist(sdists, "tiny-proj", "0.1")
    venv = make_venv(tmp_path / "venv", pip_version=pip_version)
    venv.pip(
        "install", "--no-index", "--find-links", wheel_dir(), "--find-links", sdists, "tiny-proj"
    )
    assert venv.installed()["tiny-proj"] == "0.1"
    assert venv.run("-c", "import tiny_proj; print(tiny_proj.__version__)").stdout.strip() == "0.1"


# --------------------------------------------------------------------------- reports / wheelhouses


def _das() -> list[PackageMeta]:
    from tests.support.reports import das_25041_packages

    return das_25041_packages()


def test_load_report_structure(pip_reports: dict[str, list[PackageMeta]]) -> None:
    assert set(pip_reports) == {"hfstack", "lmdeploy", "vllm073", "vllm085", "vllm092"}
    vllm = next(p for p in pip_reports["vllm085"] if p.key == "vllm")
    assert vllm.version == "0.8.5.post1" and vllm.requested
    assert "torch==2.6.0" in vllm.requires_dist
    assert vllm.filename.endswith(".whl") and len(vllm.sha256) == 64
    assert vllm.tag == "cp38-abi3-manylinux1_x86_64"
    assert len(pip_reports["vllm085"]) == 154


def test_vendor_vllm_pins_vendor_torch_and_drops_cuda(vendor_wheelhouse: Path) -> None:
    whl = _wheel(vendor_wheelhouse, "vllm-")
    assert whl.name == "vllm-0.8.5.post1+das.opt1.dtk25041-py3-none-any.whl"
    reqs = parse_metadata(read_wheel_metadata(whl)).get_all("Requires-Dist")
    assert "torch==2.4.1+das.opt1.dtk25041" in reqs
    assert "torchvision==0.19.1+das.opt1.dtk25041" in reqs
    assert not [r for r in reqs if r.startswith(("nvidia", "xformers", "cupy"))]


def test_vendor_wheelhouse_has_the_das_builds(vendor_wheelhouse: Path) -> None:
    names = sorted(p.name for p in vendor_wheelhouse.glob("*.whl"))
    assert len(names) == 23
    for prefix in ("torch-", "torchvision-", "torchaudio-", "triton-", "flash_attn-", "lmslim-"):
        assert any(n.startswith(prefix) for n in names), prefix
    torch = _wheel(vendor_wheelhouse, "torch-")
    meta = parse_metadata(read_wheel_metadata(torch))
    assert meta.get_all("Requires-Dist") and not [
        r for r in meta.get_all("Requires-Dist") if "nvidia" in r
    ]
    assert any(
        r.startswith("triton==3.0.0+das.opt1.dtk25041") for r in meta.get_all("Requires-Dist")
    )
    with zipfile.ZipFile(torch) as zf:
        version_py = zf.read("torch/version.py").decode()
    assert "__version__ = '2.4.1+das.opt1.dtk25041'" in version_py
    assert "cuda: Optional[str] = None" in version_py and "hip: Optional[str] = '6.2." in version_py


def test_community_torch_241(tmp_path: Path) -> None:
    paths = community_torch_241(tmp_path)
    torch = _wheel(tmp_path, "torch-")
    assert torch.name == "torch-2.4.1-py3-none-any.whl"
    reqs = parse_metadata(read_wheel_metadata(torch)).get_all("Requires-Dist")
    assert sum(r.startswith("nvidia-") for r in reqs) == 11
    assert any(r.startswith("triton==3.0.0;") for r in reqs)
    with zipfile.ZipFile(torch) as zf:
        version_py = zf.read("torch/version.py").decode()
    assert (
        "cuda: Optional[str] = '12.4'" in version_py and "hip: Optional[str] = None" in version_py
    )
    assert any(p.name.startswith("nvidia_cublas_cu12-12.1.3.1-") for p in paths)


def test_make_wheelhouse_vendor_flag(tmp_path: Path) -> None:
    pkgs = load_report("vllm085")
    out = make_wheelhouse(tmp_path, pkgs, vendor=True, vendor_names=["vllm", "torch"])
    assert [p.name for p in out] == [
        "torch-2.6.0+das.opt1.dtk25041-py3-none-any.whl",
        "vllm-0.8.5.post1+das.opt1.dtk25041-py3-none-any.whl",
    ]
    v = vendorise(next(p for p in pkgs if p.key == "vllm"), label="das.opt2.dtk2504")
    assert v.version == "0.8.5.post1+das.opt2.dtk2504"
    assert "torch==2.4.1+das.opt1.dtk25041" in v.requires_dist


# --------------------------------------------------------------------------- index


def test_index_html_json_and_metadata(small_index: IndexServer) -> None:
    status, ctype, body = _get(small_index.url + "flash-attn/", "text/html")
    assert (status, ctype) == (200, "text/html")
    html = body.decode()
    assert 'data-core-metadata="sha256=' in html and 'data-dist-info-metadata="sha256=' in html
    assert "flash_attn-2.6.1+das.opt1.dtk25041-py3-none-any.whl#sha256=" in html

    status, ctype, body = _get(small_index.url + "flash-attn/", f"{JSON_TYPE}, text/html;q=0.01")
    assert (status, ctype) == (200, JSON_TYPE)
    doc = json.loads(body)
    assert doc["meta"]["api-version"] == "1.1" and doc["versions"] == [LABEL_VERSION]
    (f,) = doc["files"]
    meta_hash = f["core-metadata"]["sha256"]

    status, _, meta = _get(small_index.base_url + "/files/" + f["filename"] + ".metadata")
    assert status == 200 and hashlib.sha256(meta).hexdigest() == meta_hash
    assert b"Version: 2.6.1+das.opt1.dtk25041" in meta

    status, _, _ = _get(small_index.url + "Flash_Attn/")  # redirected to the normalised page
    assert status == 200
    assert (
        "/simple/Flash_Attn/" in small_index.requests
        and "/simple/flash-attn/" in small_index.requests
    )
    assert _get(small_index.url, "application/xml")[0] == 406
    status, ctype, body = _get(small_index.url + "?format=" + JSON_TYPE)
    assert (status, ctype) == (200, JSON_TYPE)
    assert [p["name"] for p in json.loads(body)["projects"]] == ["einops", "flash-attn"]
    assert _get(small_index.url + "nope/")[0] == 404
    assert small_index.downloads() == []
    assert small_index.metadata_fetches() == [f["filename"]]


@pytest.mark.wheel_cache
def test_pip_resolves_vllm_from_index_with_metadata_only(
    venv263: Venv, public_index: IndexServer
) -> None:
    proc = venv263.pip(
        "install",
        "--dry-run",
        "--ignore-installed",
        "--quiet",
        "--report",
        "-",
        "--index-url",
        public_index.url,
        "vllm==0.8.5.post1",
    )
    plan = {
        i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(proc.stdout)["install"]
    }
    assert plan["vllm"] == "0.8.5.post1" and plan["torch"] == "2.6.0"
    assert any(n.startswith("nvidia-") for n in plan)
    assert public_index.downloads() == []  # PEP 658: metadata files only
    assert any(f.startswith("vllm-") for f in public_index.metadata_fetches())


@pytest.mark.wheel_cache
def test_vendor_find_links_plus_public_index(
    venv263: Venv, public_index: IndexServer, vendor_wheelhouse: Path
) -> None:
    proc = venv263.pip(
        "install",
        "--dry-run",
        "--ignore-installed",
        "--quiet",
        "--report",
        "-",
        "--index-url",
        public_index.url,
        "--find-links",
        vendor_wheelhouse,
        "vllm==0.8.5.post1+das.opt1.dtk25041",
    )
    plan = {
        i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(proc.stdout)["install"]
    }
    assert plan["torch"] == "2.4.1+das.opt1.dtk25041"
    assert plan["triton"] == "3.0.0+das.opt1.dtk25041"
    assert not [n for n in plan if n.startswith("nvidia-") or n == "xformers"]
    # Real-world leak kept on purpose: community ray[cgraph] still pulls cupy-cuda12x.
    assert "cupy-cuda12x" in plan


@pytest.mark.wheel_cache
def test_index_without_metadata_makes_pip_download(venv263: Venv, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "flash-attn", LABEL_VERSION, requires_dist=["einops"])
    build_wheel(wheels, "einops", "0.8.1")
    with serve_index(wheels, metadata=False) as index:
        venv263.pip(
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            "-",
            "--index-url",
            index.url,
            "flash-attn",
        )
        assert "data-core-metadata" not in _get(index.url + "flash-attn/")[2].decode()
        assert sorted(index.downloads()) == [
            wheel_filename("einops", "0.8.1"),
            wheel_filename("flash-attn", LABEL_VERSION),
        ]
        assert index.metadata_fetches() == []


@pytest.mark.wheel_cache
def test_old_pip_downloads_from_index(tmp_path: Path, public_index: IndexServer) -> None:
    venv = make_venv(tmp_path / "venv", pip_version="22.2.2")
    venv.pip(
        "download",
        "--no-deps",
        "--index-url",
        public_index.url,
        "--dest",
        tmp_path / "d",
        "torch==2.4.1",
    )
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["torch-2.4.1-py3-none-any.whl"]
    assert public_index.downloads() == ["torch-2.4.1-py3-none-any.whl"]


def test_uv_prefers_vendor_index_first(
    uv: str, vendor_index: IndexServer, public_index: IndexServer, tmp_path: Path
) -> None:
    proc = run_uv(
        "pip",
        "compile",
        "-",
        "--no-cache",
        "--python",
        sys.executable,
        "--index-url",
        public_index.url,
        "--extra-index-url",
        vendor_index.url,
        "--no-header",
        "--no-annotate",
        input="torchvision\n",
        cwd=tmp_path,
    )
    lines = proc.stdout.split()
    # uv's first-index strategy: extra indexes come first, so torch is the vendor build.
    assert "torch==2.4.1+das.opt1.dtk25041" in lines
    assert "torchvision==0.19.1+das.opt1.dtk25041" in lines
    assert not [x for x in lines if x.startswith("nvidia-")]


def test_uv_resolves_from_index(uv: str, public_index: IndexServer, tmp_path: Path) -> None:
    proc = run_uv(
        "pip",
        "compile",
        "-",
        "--no-cache",
        "--python",
        sys.executable,
        "--index-url",
        public_index.url,
        "--no-header",
        "--no-annotate",
        input="torch==2.4.1\n",
        cwd=tmp_path,
    )
    lines = proc.stdout.split()
    assert "torch==2.4.1" in lines and "triton==3.0.0" in lines
    assert "nvidia-cublas-cu12==12.1.3.1" in lines
    assert any(r.content_type == JSON_TYPE for r in public_index.log)  # uv asked for PEP 691
    assert public_index.downloads() == []


def test_static_file_index(tmp_path: Path, uv: str) -> None:
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "flash-attn", LABEL_VERSION, requires_dist=["einops"])
    build_wheel(wheels, "einops", "0.8.1")
    simple = write_static_index(wheels, tmp_path / "site")
    assert (simple / "flash-attn" / "index.html").is_file()
    assert (simple.parent / "files" / f"{wheel_filename('einops', '0.8.1')}.metadata").is_file()
    proc = run_uv(
        "pip",
        "compile",
        "-",
        "--no-cache",
        "--python",
        sys.executable,
        "--index-url",
        simple.as_uri(),
        "--no-header",
        "--no-annotate",
        input="flash-attn\n",
        cwd=tmp_path,
    )
    assert f"flash-attn=={LABEL_VERSION}" in proc.stdout.split()


@pytest.mark.wheel_cache
def test_pip_reads_static_file_index(venv263: Venv, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "flash-attn", LABEL_VERSION)
    simple = write_static_index(wheels, tmp_path / "site")
    venv263.pip(
        "download",
        "--no-deps",
        "--index-url",
        simple.as_uri(),
        "--dest",
        tmp_path / "d",
        "flash-attn",
    )
    assert [p.name for p in (tmp_path / "d").iterdir()] == [
        wheel_filename("flash-attn", LABEL_VERSION)
    ]


# --------------------------------------------------------------------------- venvs / env / cache


def test_hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_FIND_LINKS", "/somewhere")
    monkeypatch.setenv("PIP_CONSTRAINT", "/somewhere/c.txt")
    monkeypatch.setenv("UV_INDEX_URL", "http://example.invalid/simple/")
    monkeypatch.setenv("VIRTUAL_ENV", "/some/venv")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = hermetic_env(EXTRA="1")
    assert "PIP_FIND_LINKS" not in env and "PIP_CONSTRAINT" not in env
    assert "UV_INDEX_URL" not in env and "VIRTUAL_ENV" not in env
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["PIP_CONFIG_FILE"] == "/dev/null" and env["UV_NO_CONFIG"] == "1"
    assert env["UV_PYTHON_DOWNLOADS"] == "never"
    assert env["PIP_NO_INPUT"] == env["PIP_DISABLE_PIP_VERSION_CHECK"] == env["EXTRA"] == "1"


@pytest.mark.wheel_cache
def test_hermetic_pip_sees_no_host_config(venv263: Venv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_FIND_LINKS", "/somewhere")
    proc = venv263.pip("config", "list")
    assert "find-links" not in proc.stdout and "constraint" not in proc.stdout
    assert ":env:.config-file='/dev/null'" in proc.stdout


@pytest.mark.wheel_cache
def test_snapshot_unchanged_by_failed_install_changed_by_install(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "einops", "0.8.1")
    venv = make_venv(tmp_path / "venv", pip_version="26.3")
    before = venv.snapshot()
    assert any(k.endswith("pip/__init__.py") for k in before)
    proc = venv.pip("install", "--no-index", "--find-links", wheels, "does-not-exist", check=False)
    assert proc.returncode != 0
    assert venv.snapshot() == before
    venv.pip("install", "--no-index", "--find-links", wheels, "einops")
    after = venv.snapshot()
    assert set(after) - set(before) and venv.installed()["einops"] == "0.8.1"


def test_uv_installs_into_venv(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "flash_attn", LABEL_VERSION)
    venv = make_venv(tmp_path / "venv", with_pip=False)
    venv.uv_pip("install", "--no-cache", "--no-index", "--find-links", wheels, "flash-attn")
    assert venv.installed() == {"flash-attn": LABEL_VERSION}


@pytest.mark.wheel_cache
def test_uv_builds_sdist_in_isolation_offline(tmp_path: Path) -> None:
    sdists = tmp_path / "sdists"
    build_sdist(sdists, "tiny-proj", "0.2")
    venv = make_venv(tmp_path / "venv", with_pip=False)
    venv.uv_pip(
        "install",
        "--no-cache",
        "--no-index",
        "--find-links",
        wheel_dir(),
        "--find-links",
        sdists,
        "tiny-proj",
    )
    assert venv.installed() == {"tiny-proj": "0.2"}


def test_cache_missing_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DTKGUARD_TEST_WHEELS", str(tmp_path / "empty"))
    with pytest.raises(CacheMissing, match=r"python tests/prepare\.py"):
        wheel_dir()
    with pytest.raises(CacheMissing, match=r"python tests/prepare\.py"):
        pip_wheel("26.3")


def test_need_skips_naming_the_thing_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.need import missing

    monkeypatch.delenv("DTKGUARD_TEST_STRICT", raising=False)
    with pytest.raises(pytest.skip.Exception, match="strace is not installed"):
        missing("strace is not installed")
    monkeypatch.setenv("DTKGUARD_TEST_STRICT", "1")
    with pytest.raises(pytest.fail.Exception, match="strace is not installed"):
        missing("strace is not installed")


def test_run_in_process_returns_argparse_exits_as_codes() -> None:
    from tests.support.cli import run_in_process

    assert run_in_process("--version").code == 0
    bad = run_in_process("check", "--format", "pdf")
    assert bad.code == 2 and "invalid choice" in bad.err
