"""End-to-end runs of the command line, in a subprocess as users run it."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import dtkguard
from tests.support.sitetree import COMMUNITY_TORCH_VERSION_PY, add_dist, vendor_site


@pytest.fixture
def cache_env(tmp_path):
    return {"DTKGUARD_CACHE_DIR": str(tmp_path / "cache")}


def test_clean_site_passes(tmp_path, cache_env):
    site = vendor_site(tmp_path / "site")
    result = dtkguard("check", "--path", str(site), env=cache_env)
    assert result.returncode == 0, result.stderr
    assert "PASS" in result.stdout


def test_clobbered_site_fails_with_json(tmp_path, cache_env):
    site = vendor_site(tmp_path / "site")
    for dist_info in site.glob("torch-*.dist-info"):
        import shutil

        shutil.rmtree(dist_info)
    add_dist(site, "torch", "2.7.0", files={"torch/version.py": COMMUNITY_TORCH_VERSION_PY})
    out = tmp_path / "report.json"
    result = dtkguard(
        "check", "--path", str(site), "--format", "json", "-o", str(out), env=cache_env
    )
    assert result.returncode == 1
    data = json.loads(out.read_text())
    assert {f["rule"] for f in data["findings"]} >= {"vendor-replaced", "torch-build"}
    result = dtkguard("check", "--path", str(site), "--fail-on", "critical", env=cache_env)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("What happened: torch ")  # the answer first (issue 26)
    details = lines[lines.index("Details:") + 1 :]
    assert len(details) == 3  # then two findings and the summary, one line each


def test_bad_policy_is_exit_2_one_line(tmp_path, cache_env):
    bad = tmp_path / "bad.toml"
    bad.write_text('[vendor]\ntorch = "2.4.1"\n')
    result = dtkguard("check", "--path", str(tmp_path), "--policy", str(bad), env=cache_env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"{bad}:2:1: vendor.torch: '2.4.1' has no local label" in result.stderr


@pytest.mark.parametrize("command", ["check", "audit", "doctor"])
def test_bad_input_is_reported_before_the_target_is_opened(tmp_path, cache_env, command):
    """One order for every target command: the policy and the lock (exit 2), then the target."""
    bad = tmp_path / "bad.toml"
    bad.write_text('[vendor]\ntorch = "2.4.1"\n')
    missing = str(tmp_path / "missing")
    result = dtkguard(command, "--path", missing, "--policy", str(bad), env=cache_env)
    assert (result.returncode, result.stderr.count("\n")) == (2, 1), result.stderr
    assert f"{bad}:2:1: vendor.torch:" in result.stderr
    result = dtkguard(command, "--path", missing, env=cache_env)
    assert result.returncode == 3 and missing in result.stderr
    if command != "doctor":  # doctor takes no lock
        lock = tmp_path / "pylock.bad.toml"
        lock.write_text("lock-version = \n")
        result = dtkguard(command, "--path", missing, "--lock", str(lock), env=cache_env)
        assert (result.returncode, result.stderr.count("\n")) == (2, 1), result.stderr
        assert str(lock) in result.stderr


def test_bad_arguments_are_exit_2(tmp_path, cache_env):
    result = dtkguard("check", "--fail-on", "severe", env=cache_env)
    assert result.returncode == 2 and "--fail-on: unknown severity" in result.stderr
    result = dtkguard("check", "--format", "pdf", env=cache_env)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_unreadable_target_is_exit_3(tmp_path, cache_env):
    result = dtkguard("check", "--python", str(tmp_path / "nope"), env=cache_env)
    assert result.returncode == 3
    assert result.stderr.strip() == f"dtkguard: error: no such interpreter: {tmp_path / 'nope'}"


def test_policy_commands(tmp_path, cache_env):
    result = dtkguard("policy", "check", env=cache_env)
    assert result.returncode == 0 and "ok: dtk-25.04.1" in result.stdout
    result = dtkguard("policy", "show", "--format", "json", env=cache_env)
    assert json.loads(result.stdout)["vendor"]["torch"] == "2.4.1+das.opt1.dtk25041"
    result = dtkguard("policy", "explain", "torch", env=cache_env)
    assert "pinned to 2.4.1+das.opt1.dtk25041" in result.stdout
    assert "vendor-replaced (critical)" in result.stdout
    result = dtkguard("policy", "explain", "nvidia_cublas_cu12", env=cache_env)
    assert "denied (critical) by pattern 'nvidia-*-cu12'" in result.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text("[polcy]\n")
    result = dtkguard("policy", "check", "dtk-25.04.1", str(bad), env=cache_env)
    assert result.returncode == 2
    assert "ok: dtk-25.04.1" in result.stdout
    assert "unknown key 'polcy' (did you mean 'policy'?)" in result.stderr


def test_check_an_image_root(tmp_path, cache_env):
    root = tmp_path / "root"
    vendor_site(root / "usr/local/lib/python3.10/dist-packages")
    add_dist(root / "opt/venv/lib/python3.10/site-packages", "nvidia-nccl-cu12", "2.20.5")
    (root / "opt/venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    result = dtkguard("check", "--root", str(root), "--format", "json", env=cache_env)
    data = json.loads(result.stdout)
    assert result.returncode == 1
    (finding,) = data["findings"]
    assert finding["location"].startswith("/opt/venv/lib/python3.10/site-packages/")
