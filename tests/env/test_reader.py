"""The environment reader: site folders, interpreters, image roots, hostile input."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from dtkguard.env import environment as envs
from dtkguard.env.root import ConfinementError, Root
from dtkguard.errors import TargetError
from tests.support.sitetree import add_dist, vendor_site


def test_site_folder(tmp_path):
    site = vendor_site(tmp_path / "site")
    env = envs.from_paths([site])
    names = {d.key: d.version for d in env}
    assert names["torch"] == "2.4.1+das.opt1.dtk25041"
    assert names["grouped-gemm"] == "0.5.0+das.dtk2504"
    torch = env.get("TORCH")
    assert torch.installer == "pip" and not torch.requested and torch.record is not None
    assert env.get("vllm").requires_dist == [
        "torch==2.4.1+das.opt1.dtk25041",
        "triton==3.0.0+das.opt1.dtk25041",
    ]


def test_first_on_path_wins(tmp_path):
    add_dist(tmp_path / "a", "torch", "2.4.1+das.opt1.dtk25041")
    add_dist(tmp_path / "b", "torch", "2.7.0")
    env = envs.from_paths([tmp_path / "a", tmp_path / "b"])
    assert [d.version for d in env] == ["2.4.1+das.opt1.dtk25041"]


def test_broken_entries_are_warnings_not_crashes(tmp_path):
    site = tmp_path / "site"
    add_dist(site, "good", "1.0")
    (site / "broken-1.0.dist-info").mkdir()
    (site / "broken-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\n\n")
    (site / "norecord-1.0.dist-info").mkdir()
    (site / "norecord-1.0.dist-info" / "METADATA").write_text("Name: norecord\nVersion: 1.0\n")
    (site / "garbage-1.0.dist-info").mkdir()
    (site / "garbage-1.0.dist-info" / "METADATA").write_bytes(os.urandom(4096))
    (site / "nometa-1.0.dist-info").mkdir()
    fifo = site / "fifo-1.0.dist-info"
    fifo.mkdir()
    os.mkfifo(fifo / "METADATA")
    env = envs.from_paths([site])
    assert {d.key for d in env} >= {"good", "norecord"}
    assert env.get("norecord").record is None
    text = "\n".join(env.warnings)
    assert "broken-1.0.dist-info: broken metadata" in text
    assert "nometa-1.0.dist-info: cannot read metadata" in text
    assert "fifo-1.0.dist-info: cannot read metadata" in text


def test_huge_metadata_is_read_capped(tmp_path):
    site = tmp_path / "site"
    big = site / "big-1.0.dist-info"
    big.mkdir(parents=True)
    with open(big / "METADATA", "wb") as fh:
        fh.write(b"Name: big\nVersion: 1.0\n\n")
        fh.write(b"x" * (50 << 20))
    tracemalloc.start()
    env = envs.from_paths([site])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert env.get("big").version == "1.0"
    assert peak < 8 << 20


def test_other_interpreter_is_only_asked_for_sys_path(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    add_dist(site, "torch", "2.4.1+das.opt1.dtk25041")
    env = envs.from_python(str(venv / "bin" / "python"))
    assert env.get("torch").version == "2.4.1+das.opt1.dtk25041"
    assert env.target.prefix == str(venv)


def test_missing_interpreter_is_a_target_error(tmp_path):
    with pytest.raises(TargetError, match="no such interpreter"):
        envs.from_python(str(tmp_path / "nope"))


def test_the_query_survives_start_up_noise_and_odd_paths(tmp_path):
    """A .pth's import lines never run (no noise, no path they would add); a .pth path line
    that is not UTF-8 comes back as the file system's bytes; an interpreter that does not
    answer is a TargetError, not a wrong environment."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    odd = os.fsencode(str(tmp_path)) + b"/caf\xe9-dir"
    os.mkdir(odd)
    ran = os.fsencode(str(tmp_path)) + b"/ran-dir"
    os.mkdir(ran)
    (site / "noise.pth").write_bytes(
        b"import os, sys; print('<dtkguard> noise'); sys.stdout.flush(); "
        + f"sys.path.append(os.fsdecode({ran!r}))\n".encode()
        + odd
        + b"\n"
    )
    (site / "zz-exit.pth").write_text("import atexit; atexit.register(print, 'bye')\n")
    paths, prefix = envs.python_sys_path(str(venv / "bin" / "python"))
    assert prefix == str(venv)
    assert os.fsdecode(odd) in paths and str(site) in paths
    assert os.fsdecode(ran) not in paths
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\necho '{}'\n")
    silent.chmod(0o755)
    with pytest.raises(TargetError, match=r"did not report its sys\.path"):
        envs.python_sys_path(str(silent))


def image_root(tmp_path: Path) -> tuple[Path, Path]:
    """An image root with the usual interpreters and a sentinel distribution outside it."""
    outside = tmp_path / "outside"
    add_dist(outside / "site-packages", "sentinel", "6.6.6")
    root = tmp_path / "root"
    vendor_site(root / "usr/local/lib/python3.10/dist-packages")
    add_dist(root / "usr/lib/python3/dist-packages", "pyyaml", "6.0", installer=None)
    add_dist(root / "opt/venv/lib/python3.10/site-packages", "torch", "2.7.0")
    (root / "opt/venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    add_dist(root / "opt/conda/lib/python3.11/site-packages", "numpy", "1.26.4")
    # hostile links: absolute to the host's /etc and to the outside folder, relative escapes
    (root / "usr/lib/python3.11").mkdir(parents=True)
    (root / "usr/lib/python3.11/site-packages").symlink_to(outside / "site-packages")
    (root / "usr/lib/python3.12").symlink_to("../../../outside")
    (root / "usr/lib64").symlink_to("/etc")
    (root / "opt/loop").symlink_to("loop")
    (root / "home").mkdir()
    (root / "home/evil").symlink_to("..")
    return root, outside


def test_image_root_finds_every_interpreter(tmp_path):
    root, _ = image_root(tmp_path)
    env = envs.from_root(root)
    assert {d.group for d in env} == {"/usr/local", "/usr", "/opt/venv", "/opt/conda"}
    assert env.get("pyyaml").installer is None
    assert env.get("torch", "/opt/venv").version == "2.7.0"
    assert env.get("torch", "/usr/local").version == "2.4.1+das.opt1.dtk25041"
    assert env.get("vllm").location.startswith("/usr/local/lib/python3.10/dist-packages/")


def test_image_root_reads_nothing_outside(tmp_path, mocker):
    root, _ = image_root(tmp_path)
    from tests.audit.test_hostile_root import where

    touched: list[str] = []
    real_open, real_listdir = os.open, os.listdir

    def spy_open(path, *a, **k):
        touched.append(where(path, k.get("dir_fd")))
        return real_open(path, *a, **k)

    mocker.patch.object(os, "open", spy_open)
    mocker.patch.object(os, "listdir", lambda p=".": touched.append(where(p)) or real_listdir(p))
    env = envs.from_root(root)
    mocker.stopall()
    assert env.get("sentinel") is None
    assert touched, "the spy saw no file access"
    real_root = os.path.realpath(root)
    for path in touched:
        assert (
            os.path.realpath(path).startswith(real_root + os.sep)
            or os.path.realpath(path) == real_root
        ), path


def test_root_resolution_stays_inside(tmp_path):
    root = Root(tmp_path)
    (tmp_path / "etc").mkdir()
    (tmp_path / "a").symlink_to("/etc")
    (tmp_path / "b").symlink_to("../../../../etc")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    assert root.resolve("/a/passwd") == tmp_path / "etc/passwd"
    assert root.resolve("b/passwd") == tmp_path / "etc/passwd"
    assert root.resolve("/../../x") == tmp_path / "x"
    with pytest.raises(ConfinementError):
        root.resolve("/loop1/x")
    assert root.inner(tmp_path / "etc/passwd") == "/etc/passwd"


def test_not_a_directory(tmp_path):
    with pytest.raises(TargetError):
        envs.from_root(tmp_path / "missing")
    with pytest.raises(TargetError):
        envs.from_paths([tmp_path / "missing"])
