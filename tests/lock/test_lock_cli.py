"""`dtkguard lock` end to end: real index, real pip and uv installing the lock into fresh venvs."""

from __future__ import annotations

import shutil

import pytest

from dtkguard.lock.read import files, read_lock
from tests.support.cli import dtkguard_in
from tests.support.venvs import make_venv

from .conftest import HERE, run_cli

VENDOR = {
    "torch": "2.4.1+das.opt1.dtk25041",
    "torchaudio": "2.4.1+das.opt1.dtk25041",
    "torchvision": "0.19.1+das.opt1.dtk25041",
    "triton": "3.0.0+das.opt1.dtk25041",
    "vllm": "0.8.5.post1+das.opt1.dtk25041",
}


def _lock(tmp_path, das_wheelhouses, index, name="pylock.das.toml", *extra):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    if not (work / "vendor").exists():
        shutil.copytree(das_wheelhouses[1], work / "vendor")
    proc = run_cli(
        "lock",
        "vllm",
        "--vendor-find-links",
        "vendor",
        "--index-url",
        index.url,
        "-o",
        name,
        *extra,
        cwd=work,
    )
    return work / name, proc


@pytest.fixture()
def locked(tmp_path, das_wheelhouses, das_index):
    """The lock for the policy's target (Python 3.10, manylinux_2_35 x86_64)."""
    path, proc = _lock(tmp_path, das_wheelhouses, das_index)
    assert proc.returncode == 0, proc.stderr
    return path, proc


@pytest.fixture()
def locked_here(tmp_path, das_wheelhouses, portable_index):
    """The lock for the Python that runs the tests, so that pip and uv can install it here."""
    path, proc = _lock(tmp_path, das_wheelhouses, portable_index, "pylock.das.toml", *HERE)
    assert proc.returncode == 0, proc.stderr
    return path, proc


def test_lock_is_valid_complete_and_byte_identical_on_rerun(
    locked, tmp_path, das_wheelhouses, das_index
):
    path, proc = locked
    first = path.read_bytes()
    lock = read_lock(path)
    versions = lock.versions()
    assert {k: versions[k] for k in VENDOR} == VENDOR
    assert not [n for n in versions if n.startswith(("nvidia-", "cupy-", "xformers"))]
    assert lock.dtkguard.policy == "dtk-25.04.1"
    assert lock.dtkguard.dtk == "25.04.1"
    assert len(lock.dtkguard.policy_sha256 or "") == 64
    assert str(lock.pylock.requires_python) == "==3.10.*"
    torch = lock.by_name()["torch"]
    assert next(files(torch)).path == "vendor/torch-2.4.1+das.opt1.dtk25041-py3-none-any.whl"
    assert torch.tool["dtkguard"] == {"source": "vendor", "vendor-build": True}
    assert all(f.hashes.get("sha256") and f.size for p in lock.pylock.packages for f in files(p))
    assert "resolver rounds" in proc.stderr and "0 wheel downloads" in proc.stderr
    assert das_index.downloads() == []
    for _ in range(3):  # prefetching threads race differently each time: bytes must not
        again, proc2 = _lock(tmp_path, das_wheelhouses, das_index)
        assert proc2.returncode == 0, proc2.stderr
        assert again.read_bytes() == first


def _installed_matches(venv, lock, ignore=("pip",)):
    want = lock.versions()
    got = {k: v for k, v in venv.installed().items() if k not in ignore}
    assert got == want


def test_pip_installs_the_lock_unmodified(locked_here, tmp_path, das_index):
    path, _ = locked_here
    venv = make_venv(tmp_path / "pipvenv", pip_version="26.3")
    venv.pip("install", "-r", path)
    _installed_matches(venv, read_lock(path))


def test_uv_installs_the_lock_unmodified(locked_here, tmp_path, das_index):
    path, _ = locked_here
    venv = make_venv(tmp_path / "uvvenv", with_pip=False)
    venv.uv_pip("sync", "--preview-features", "pylock", path)
    _installed_matches(venv, read_lock(path), ignore=())


def test_unsatisfiable_request_exits_1_explained_and_writes_nothing(
    tmp_path, das_wheelhouses, das_index
):
    work = tmp_path / "w"
    work.mkdir()
    proc = run_cli(
        "lock",
        "vllm==0.9.2",
        "--vendor-find-links",
        das_wheelhouses[1],
        "--index-url",
        das_index.url,
        "-o",
        "pylock.x.toml",
        cwd=work,
    )
    assert proc.returncode == 1
    assert (
        "vllm 0.9.2 requires torch==2.7.0; policy dtk-25.04.1 allows torch only as "
        "2.4.1+das.opt1.dtk25041; vllm 0.8.5.post1+das.opt1.dtk25041 is the vendor build"
    ) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(work.iterdir()) == []


def test_malformed_requirement_line_exits_2_with_file_and_line(tmp_path, das_index):
    (tmp_path / "base.txt").write_text("numpy>=1\n")
    (tmp_path / "reqs.txt").write_text("# image\n-r base.txt\nvllm\ntorch >= = 2\n")
    proc = run_cli(
        "lock", "-r", "reqs.txt", "--index-url", das_index.url, "-o", "pylock.x.toml", cwd=tmp_path
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("dtkguard: error: reqs.txt:4:1: requirement: invalid requirement")
    assert not (tmp_path / "pylock.x.toml").exists()


def test_malformed_included_file_names_that_file(tmp_path, das_index):
    (tmp_path / "base.txt").write_text("numpy>=1\n\nbad line here!\n")
    (tmp_path / "reqs.txt").write_text("-r base.txt\n")
    proc = run_cli(
        "lock", "-r", "reqs.txt", "--index-url", das_index.url, "-o", "pylock.x.toml", cwd=tmp_path
    )
    assert proc.returncode == 2
    assert "base.txt:3:1: requirement:" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_unreachable_index_exits_2_with_one_line(tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run_cli(
        "lock",
        "filelock",
        "--index-url",
        f"http://127.0.0.1:{port}/simple/",
        "-o",
        "pylock.x.toml",
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "dtkguard: error: index: cannot reach http://127.0.0.1:"
    )
    assert not (tmp_path / "pylock.x.toml").exists()


def test_bad_output_name_and_bad_python_version_exit_2(tmp_path, das_index):
    proc = run_cli("lock", "six", "--index-url", das_index.url, "-o", "lock.toml", cwd=tmp_path)
    assert proc.returncode == 2 and "pylock.NAME.toml" in proc.stderr
    proc = run_cli("lock", "six", "--python-version", "3", "-o", "pylock.a.toml", cwd=tmp_path)
    assert proc.returncode == 2 and "--python-version" in proc.stderr


def test_default_index_comes_from_pip_configuration(tmp_path, das_index):
    """No --index-url: the index is what `pip config get global.index-url` says."""
    import os
    import subprocess
    import sys

    from tests.support.venvs import hermetic_env

    from .conftest import REPO

    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nindex-url = {das_index.url}\n")
    env = hermetic_env(PYTHONPATH=str(REPO), PIP_CONFIG_FILE=str(conf))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dtkguard",
            "lock",
            "filelock",
            "--policy",
            "dtk-25.04.1",
            "-o",
            "pylock.fl.toml",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    lock = read_lock(tmp_path / "pylock.fl.toml")
    assert lock.by_name()["filelock"].index == das_index.url
    assert "PIP_INDEX_URL" not in env and not os.environ.get("DTKGUARD_INDEX_URL")


def test_export_constraints_and_hashed_requirements(locked, tmp_path):
    path, _ = locked
    proc = run_cli("export", "constraints", path)
    assert proc.returncode == 0, proc.stderr
    assert "torch==2.4.1+das.opt1.dtk25041" in proc.stdout.splitlines()
    proc = run_cli("export", "requirements", path, "-o", tmp_path / "req.txt")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "req.txt").read_text()
    assert "--index-url http://127.0.0.1:" in text
    assert "vllm==0.8.5.post1+das.opt1.dtk25041 \\\n    --hash=sha256:" in text


def test_time_limit_ends_with_exit_1_and_says_so(tmp_path, das_wheelhouses, das_index):
    proc = run_cli("lock", "vllm", "--vendor-find-links", das_wheelhouses[1], "--index-url",
                   das_index.url, "--resolve-timeout", "1e-9", "-o", "pylock.x.toml",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1
    assert "no answer after 1 resolver rounds" in proc.stderr
    assert "raise --resolve-timeout" in proc.stderr
    assert not (tmp_path / "pylock.x.toml").exists()
    bad = run_cli("lock", "vllm", "--no-index", "--resolve-timeout", "0", "-o", "pylock.x.toml",
                  cwd=tmp_path)  # fmt: skip
    assert bad.returncode == 2
    assert "--resolve-timeout" in bad.stderr


def test_the_public_index_from_pips_configuration_is_named(tmp_path, das_wheelhouses, das_index):

    from tests.support.venvs import hermetic_env

    from .conftest import REPO

    cfg = tmp_path / "pip.conf"
    cfg.write_text(f"[global]\nindex-url = {das_index.url}\n")
    env = hermetic_env(PYTHONPATH=str(REPO), PIP_CONFIG_FILE=str(cfg),
                       DTKGUARD_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    proc = dtkguard_in(env, "lock", "vllm", "--vendor-find-links", das_wheelhouses[1],
                       "-o", "pylock.x.toml", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"dtkguard: public index (from pip's configuration): {das_index.url}" in proc.stderr
    assert das_index.requests
