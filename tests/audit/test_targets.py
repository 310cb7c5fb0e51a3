"""--pid and --container: a real Python process started by the test, read through /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.audit.conftest import VENDOR_TORCH, run_cli
from tests.support import need

DOCKER_DATA = Path(__file__).resolve().parent.parent / "data" / "docker"


def test_pid_finds_the_venv_without_running_it(venv, sleeper):
    result = run_cli("audit", "--pid", str(sleeper.pid), "-f", "json")
    assert result.code == 0, result.err
    report = result.json()
    target = report["target"]
    assert target["kind"] == "pid"
    assert target["pid"] == sleeper.pid  # an integer in json
    assert target["root"] == f"/proc/{sleeper.pid}/root"
    assert target["prefix"] == str(venv.path)
    assert target["python"] == str(venv.python)
    assert target["python_version"] == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert report["host"]
    assert f"{venv.site_packages}" in report["facts"]["sites"]
    assert report["facts"]["dists"] >= 3
    assert report["facts"]["device"]["visible_devices"] == {"HIP_VISIBLE_DEVICES": "0,1"}


def test_pid_sees_a_replaced_vendor_build(venv, wheelhouse, sleeper):
    from tests.audit.conftest import install

    install(venv, wheelhouse, "--force-reinstall", str(wheelhouse / "torch-2.4.1-py3-none-any.whl"))
    result = run_cli("audit", "--pid", str(sleeper.pid), "--verify-files", "-f", "json")
    assert result.code == 1
    rules = {f["rule"] for f in result.json()["findings"]}
    assert "vendor-replaced" in rules
    ok = run_cli("check", "--pid", str(sleeper.pid), "-f", "json")
    assert ok.code == 1 and VENDOR_TORCH in ok.out


@pytest.mark.parametrize("command", ["check", "audit"])
def test_a_pid_that_exits_while_it_is_read_is_exit_3_not_findings(sleeper, mocker, command):
    """The process ends after its env was opened and before the report: its files went with it,
    so the report would be false findings (every vendor build "missing"); exit 3, one line."""
    from dtkguard.rules import engine

    real = engine.run_checks

    def exit_first(*args, **kwargs):
        sleeper.kill()
        sleeper.wait()
        return real(*args, **kwargs)

    mocker.patch.object(engine, "run_checks", exit_first)
    result = run_cli(command, "--pid", str(sleeper.pid), "-f", "json")
    assert result.code == 3, result.out
    assert (
        result.err
        == f"dtkguard: error: process {sleeper.pid} exited while it was read: no report of it\n"
    )
    assert result.out == ""


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_pid_that_does_not_exist_exits_3_with_one_line():
    pid = _dead_pid()
    result = run_cli("audit", "--pid", str(pid))
    assert result.code == 3
    assert result.err == f"dtkguard: error: no such process: {pid}\n"
    assert result.out == ""


def test_pid_not_a_number_exits_3():
    result = run_cli("audit", "--pid", "abc")
    assert result.code == 3 and result.err.count("\n") == 1


def test_pid_not_readable_exits_3_with_one_line(sleeper):
    """As an unprivileged user, another user's /proc/N/root is not readable.

    The check runs in a forked child that drops to uid 65534 (this interpreter's files are not
    readable by that user, so everything is imported before the fork)."""
    need.root("dropping to another user")
    run_cli("audit", "--pid", str(_dead_pid()))  # warm every import of the error path
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            result = run_cli("audit", "--pid", str(sleeper.pid))
            os.write(write, f"{result.code}\n{result.err}".encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read) as f:
        code, err = f.read().split("\n", 1)
    assert code == "3"
    assert err == (
        f"dtkguard: error: cannot read process {sleeper.pid}: permission denied on "
        f"/proc/{sleeper.pid}/root (run as its user or as root)\n"
    )


def fake_runtime(bindir: Path, name: str, pid: int | None, mode: str = "running") -> None:
    """A ``docker``/``podman`` that answers ``inspect -f '{{.State.Pid}}' NAME`` like the real
    CLI (output recorded in tests/data/docker)."""
    bindir.mkdir(exist_ok=True)
    stdout = (DOCKER_DATA / f"{mode}.stdout") if mode in ("running", "stopped") else None
    stderr = (DOCKER_DATA / f"{mode}.stderr") if stdout is None else None
    script = bindir / name
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "args = sys.argv[1:]\n"
        "assert args[:3] == ['inspect', '-f', '{{.State.Pid}}'], args\n"
        f"out = {stdout.read_text() if stdout else ''!r}\n"
        f"err = {stderr.read_text() if stderr else ''!r}\n"
        f"sys.stdout.write(out.replace('{{pid}}', {str(pid)!r}))\n"
        "sys.stderr.write(err.replace('{name}', args[3]))\n"
        "sys.exit(1 if err else 0)\n"
    )
    script.chmod(0o755)


def test_container_audits_its_main_process(tmp_path, venv, sleeper, monkeypatch):
    fake_runtime(tmp_path / "bin", "docker", sleeper.pid)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    result = run_cli("audit", "--container", "vllm-0", "-f", "json")
    assert result.code == 0, result.err
    target = result.json()["target"]
    assert target["kind"] == "container"
    assert target["container"] == "vllm-0"
    assert target["runtime"] == "docker"
    assert target["pid"] == sleeper.pid  # an integer in json
    assert target["prefix"] == str(venv.path)


def test_podman_is_used_when_docker_is_absent(tmp_path, sleeper, monkeypatch, venv):
    fake_runtime(tmp_path / "bin", "podman", sleeper.pid)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    result = run_cli("audit", "--container", "c1", "-f", "json")
    assert result.code == 0, result.err
    assert result.json()["target"]["runtime"] == "podman"


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("nosuch", "dtkguard: error: docker: no such container: ghost\n"),
        ("stopped", "dtkguard: error: container ghost is not running (docker reports no PID)\n"),
        (
            "nodaemon",
            "dtkguard: error: docker inspect ghost failed: Cannot connect to the Docker daemon at "
            "unix:///var/run/docker.sock. Is the docker daemon running?\n",
        ),
    ],
)
def test_container_errors_exit_3(tmp_path, monkeypatch, mode, expected):
    fake_runtime(tmp_path / "bin", "docker", None, mode)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    result = run_cli("audit", "--container", "ghost")
    assert (result.code, result.err) == (3, expected)


def test_no_runtime_exits_3(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = run_cli("audit", "--container", "x")
    assert result.code == 3
    assert result.err.startswith("dtkguard: error: --container needs docker or podman")
    assert result.err.count("\n") == 1


def test_pid_of_a_non_python_process_exits_3(tmp_path):
    proc = subprocess.Popen(["sleep", "60"], cwd=tmp_path)
    try:
        time.sleep(0.05)
        result = run_cli("audit", "--pid", str(proc.pid))
    finally:
        proc.kill()
        proc.wait()
    assert result.code == 3
    assert "does not look like a Python process" in result.err
