"""Every reader fills one `TargetIdentity`; unknown is None, never dtkguard's own Python."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dtkguard.env import environment as envs
from dtkguard.env.identity import TargetIdentity, first_site_python, site_pythons
from dtkguard.env.process_target import from_pid
from tests.support.sitetree import add_dist

HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"
#: a Python that is not the one running the tests
OTHER = "3.8" if HERE != "3.8" else "3.9"


def test_a_folder_without_a_python_in_its_name_has_no_python(tmp_path):
    add_dist(tmp_path / "plain", "torch", "2.4.1")
    target = envs.from_paths([tmp_path / "plain"]).target
    assert target.kind == "path" and target.path == str((tmp_path / "plain").resolve())
    assert target.python_version is None  # not dtkguard's own
    assert (target.python, target.implementation, target.platform, target.machine) == (
        None,
        None,
        None,
        None,
    )
    assert target.markers() == {}


def test_path_and_root_take_the_python_of_their_first_site(tmp_path):
    site = tmp_path / "img" / "usr" / "lib" / f"python{OTHER}" / "site-packages"
    add_dist(site, "torch", "2.4.1")
    add_dist(tmp_path / "img" / "opt/conda/lib/python3.12/site-packages", "numpy", "2.0")
    assert envs.from_paths([site]).target.python_version == OTHER
    root = envs.from_root(tmp_path / "img").target
    assert (root.kind, root.root, root.python_version) == ("root", str(tmp_path / "img"), OTHER)
    assert root.python is None and root.platform is None  # an image's platform is not ours
    assert not root.live and envs.from_paths([site]).target.live  # an image runs nothing


def test_an_interpreter_says_its_own_python(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    exe = str(venv / "bin" / "python")
    code = "import os,sys;print(sys.implementation.name, sys.platform, os.uname().machine)"
    said = subprocess.run([exe, "-c", code], capture_output=True, text=True, check=True)
    target = envs.from_python(exe).target
    assert (target.kind, target.python, target.prefix) == ("python", exe, str(venv))
    assert target.python_version == HERE
    assert [target.implementation, target.platform, target.machine] == said.stdout.split()
    running = envs.from_python().target
    assert (running.python, running.prefix, running.python_version) == (
        sys.executable,
        sys.prefix,
        HERE,
    )


@pytest.fixture
def sleeping(tmp_path):
    """A python process of a fresh venv (started as ``venv/bin/python``)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    proc = subprocess.Popen(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import time; print('up', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        cwd="/",
    )
    assert proc.stdout.readline() == b"up\n"
    yield venv, proc.pid
    proc.kill()
    proc.wait()


def test_a_process_says_what_proc_shows_and_no_more(sleeping):
    venv, pid = sleeping
    target = from_pid(pid).target
    assert (target.kind, target.pid, target.root) == ("pid", pid, f"/proc/{pid}/root")
    assert (target.python, target.prefix) == (str(venv / "bin" / "python"), str(venv))
    assert target.python_version == HERE
    assert target.platform == "linux"  # it has a /proc
    assert target.implementation is None and target.machine is None  # nothing of it runs


def test_the_identity_is_frozen_and_knows_its_kinds():
    target = TargetIdentity("root", root="/img")
    with pytest.raises(dataclasses.FrozenInstanceError):
        target.python_version = "3.10"  # type: ignore[misc]
    with pytest.raises(ValueError, match="not a kind of target: image"):
        TargetIdentity("image")


@pytest.mark.parametrize(
    ("target", "printed", "completed"),
    [
        (
            TargetIdentity("path", path="/a:/b", python_version="3.10"),
            [("kind", "path"), ("path", "/a:/b")],
            [("kind", "path"), ("path", "/a:/b"), ("root", "/"), ("python_version", "3.10")],
        ),
        (
            TargetIdentity("path", path="/a"),
            [("kind", "path"), ("path", "/a")],
            [("kind", "path"), ("path", "/a"), ("root", "/")],
        ),
        (
            TargetIdentity("python", python="/v/bin/python", prefix="/v", python_version="3.11"),
            [("kind", "python"), ("python", "/v/bin/python"), ("prefix", "/v")],
            [
                ("kind", "python"),
                ("python", "/v/bin/python"),
                ("prefix", "/v"),
                ("root", "/"),
                ("python_version", "3.11"),
            ],
        ),
        (
            TargetIdentity("root", root="/img"),
            [("kind", "root"), ("root", "/img")],
            [("kind", "root"), ("root", "/img")],
        ),
        (
            TargetIdentity("pid", root="/proc/7/root", pid=7),
            [
                ("kind", "pid"),
                ("pid", 7),
                ("root", "/proc/7/root"),
                ("python", ""),
                ("prefix", ""),
                ("python_version", ""),
            ],
            None,
        ),
        (
            TargetIdentity(
                "container", root="/proc/7/root", pid=7, container="c", runtime="podman"
            ),
            [
                ("kind", "container"),
                ("pid", 7),
                ("root", "/proc/7/root"),
                ("python", ""),
                ("prefix", ""),
                ("python_version", ""),
                ("container", "c"),
                ("runtime", "podman"),
            ],
            None,
        ),
    ],
)
def test_reports_print_the_keys_of_each_kind_in_order(target, printed, completed):
    assert list(target.to_json().items()) == printed
    assert list(target.to_json(complete=True).items()) == (completed or printed)


def test_where_names_the_target_as_messages_did():
    assert TargetIdentity("container", root="/proc/7/root", pid=7, container="c").where() == "c"
    assert TargetIdentity("pid", root="/proc/7/root", pid=7).where() == "7"
    assert TargetIdentity("python", python="/v/bin/python").where() == "/v/bin/python"
    assert TargetIdentity("path", path="/a").where() == "/a"
    assert TargetIdentity("root", root="/img").where() == "/img"


def test_site_pythons_in_order_once():
    sites = [
        Path("/i/usr/lib/python3.9/site-packages"),
        "/i/usr/lib/python3/dist-packages",
        "/i/opt/conda/lib/python3.12/site-packages",
        "/i/usr/local/lib/python3.9/dist-packages",
        "/i/usr/lib64/python3.6/site-packages",
        "/i/lib/python3.10/site-packages/x.egg",
    ]
    assert site_pythons(sites) == ["3.9", "3.12", "3.6"]
    assert first_site_python(sites[1:]) == "3.12"
    assert first_site_python([os.sep]) is None
