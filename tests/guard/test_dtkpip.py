"""dtkpip end to end: the plan is judged with the check rules and explained; safe installs run
pip once with pip's exit code; overrides are recorded and reported by `dtkguard check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dtkguard.journal.txn import transactions
from tests.guard.conftest import TORCH, Guarded, changed
from tests.support.venvs import hermetic_env

pytestmark = pytest.mark.wheel_cache


def test_vllm_092_is_explained(guarded: Guarded, tmp_path: Path) -> None:
    before = guarded.venv.snapshot()
    log = tmp_path / "pip.log"
    proc = guarded.dtkpip("install", "--log", str(log), *guarded.index_args, "vllm==0.9.2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # two pip runs: the one run (failing on the pins; its hook reports vllm 0.9.2 without
    # them) and the plan of the refused requirements it needs, not a --no-deps run between
    assert log.read_text().count("Using pip ") == 2
    text = proc.stderr
    assert "nothing was installed or removed" in text
    assert "without them it would, among others:\n" in text
    assert (
        f"replace the vendor build torch {TORCH} with torch 2.7.0 (a community CUDA build)" in text
    )
    assert "triton 3.0.0+das.opt1.dtk25041 with triton 3.3.0" in text
    assert "add 14 nvidia-* CUDA wheel(s)" in text
    assert "vendor-replaced (critical)" in text and "denied-package" in text
    assert "dtkpip install --find-links" in text
    assert "'vllm==0.8.5.post1+das.opt1.dtk25041'" in text
    assert "vllm 0.9.2 needs torch==2.7.0" in text
    assert changed(before, guarded.venv.snapshot()) == []


def test_other_release_that_keeps_vendor_torch_is_suggested(guarded: Guarded) -> None:
    before = guarded.venv.snapshot()
    proc = guarded.dtkpip("install", *guarded.index_args, "pins-torch==2.0")
    assert proc.returncode == 1
    assert "pins-torch 2.0 needs torch==2.6.0" in proc.stderr
    assert "dtkpip install 'pins-torch==1.0'" in proc.stderr
    assert changed(before, guarded.venv.snapshot()) == []


def test_denied_package_is_stopped(guarded: Guarded) -> None:
    before = guarded.venv.snapshot()
    proc = guarded.dtkpip("install", *guarded.index_args, "nvidia-cublas-cu12")
    assert proc.returncode == 1
    assert "denied-package (critical)" in proc.stderr and "nvidia-cublas-cu12" in proc.stderr
    assert changed(before, guarded.venv.snapshot()) == []


@pytest.mark.parametrize("spec", ["torch", "torch>=0", "Torch ; python_version>'3'", "TORCH[x]"])
def test_uninstall_of_vendor_build_is_stopped(guarded: Guarded, spec: str) -> None:
    before = guarded.venv.snapshot()
    proc = guarded.dtkpip("uninstall", "-y", spec)
    assert proc.returncode == 1 and "nothing was removed" in proc.stderr
    assert f"torch {TORCH} is a vendor build" in proc.stderr
    assert changed(before, guarded.venv.snapshot()) == []


def test_satisfied_runs_pip_once_and_passes_through(guarded: Guarded, tmp_path: Path) -> None:
    before = guarded.venv.snapshot()
    log = tmp_path / "pip.log"
    proc = guarded.dtkpip("install", "--log", str(log), *guarded.index_args, "torch")
    assert proc.returncode == 0, proc.stderr
    assert "Requirement already satisfied: torch in" in proc.stdout
    # pip ran once (the dry run): a second, real run would have logged a second resolution
    assert log.read_text().count("Requirement already satisfied: torch") == 1
    assert changed(before, guarded.venv.snapshot()) == []
    # other subcommands: pip untouched, with its exit code
    assert guarded.dtkpip("list").returncode == 0
    assert guarded.dtkpip("show", "no-such-package-here").returncode == 1


def test_safe_install_and_override(fresh: Guarded) -> None:
    g = fresh
    proc = g.dtkpip("install", *g.index_args, "accelerate==1.6.0")
    assert proc.returncode == 0, proc.stderr
    assert "Successfully installed" in proc.stdout and g.venv.installed()["accelerate"] == "1.6.0"
    assert g.venv.installed()["torch"] == TORCH
    proc = g.dtkpip(
        "--override",
        "cublas for a CPU test",
        "install",
        *g.index_args,
        "--no-deps",
        "nvidia-cublas-cu12",
    )
    assert proc.returncode == 0, proc.stderr
    records = g.store.overrides.read_text().splitlines()
    assert len(records) == 1  # recorded by dtkpip once, not again by the hook
    entry = json.loads(records[0])
    assert entry["reason"] == "cublas for a CPU test" and entry["tool"] == "dtkpip"
    assert any("nvidia-cublas-cu12" in a for a in entry["allowed"])
    check = g.dtkguard("check", "--python", str(g.venv.python), "--format", "json")
    assert check.returncode == 1
    rules = {f["rule"] for f in json.loads(check.stdout)["findings"]}
    assert {"override-used", "denied-package"} <= rules


def test_bad_override_is_usage_error(guarded: Guarded) -> None:
    proc = guarded.dtkpip("--override", "", "install", "x")
    assert proc.returncode == 2 and "--override" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_uninstall_with_a_specifier_is_judged_like_the_name(guarded: Guarded) -> None:
    before = guarded.venv.snapshot()
    for spec in ("torch>=0", "Torch[extra] ; python_version > '3'", "torch==2.4.1"):
        proc = guarded.dtkpip("uninstall", "-y", spec)
        assert proc.returncode == 1 and "nothing was removed" in proc.stderr, spec
    assert changed(before, guarded.venv.snapshot()) == []


def test_override_token_is_one_time(fresh: Guarded) -> None:
    """dtkpip records the override and hands the hook a one-time token: one record. A token
    set by hand (or one used already) is not dtkpip's record: the hook records again."""
    g = fresh
    log = g.store.overrides
    proc = g.dtkpip(
        "--override",
        "cublas for a test",
        "install",
        *g.index_args,
        "--no-deps",
        "nvidia-cublas-cu12",
    )
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["tool"] for r in records] == ["dtkpip"] and records[0]["token"]
    assert not list(log.parent.glob("override-*.token"))  # consumed
    used = records[0]["token"]
    for token in (used, "0" * 32):
        env = hermetic_env(DTKGUARD_OVERRIDE="forged", DTKGUARD_OVERRIDE_TOKEN=token)
        proc = g.pip("install", *g.index_args, "--no-deps", "nvidia-cufft-cu12", env=env)
        assert proc.returncode == 0, proc.stderr
        assert g.pip("uninstall", "-y", "nvidia-cufft-cu12").returncode == 0
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["tool"] for r in records] == ["dtkpip", "pip-hook", "pip-hook"]
    check = g.dtkguard("check", "--python", str(g.venv.python), "--format", "json")
    assert check.returncode == 1, check.stderr
    found = json.loads(check.stdout)["findings"]  # (the headline names the rule too)
    assert [f["rule"] for f in found].count("override-used") == 3


def _pip_runs(log: Path) -> int:
    """How many pip runs wrote to ``log`` (each names its pip once)."""
    return log.read_text().count("Using pip ")


def test_a_real_install_runs_pip_once(fresh: Guarded, tmp_path: Path) -> None:
    """Where the hook is present the real run is the only run: the hook pauses it before it
    installs, dtkpip judges the plan and lets it go on inside the journal's transaction."""
    g = fresh
    log = tmp_path / "pip.log"
    txns = transactions(g.store.journal)
    proc = g.dtkpip("install", "--log", str(log), *g.index_args, "accelerate==1.6.0")
    assert proc.returncode == 0, proc.stderr
    assert "Successfully installed" in proc.stdout
    assert _pip_runs(log) == 1  # no dry run before it
    assert g.venv.installed()["accelerate"] == "1.6.0"
    [txn] = transactions(g.store.journal)[len(txns) :]  # journalled as one transaction
    assert txn.state == "committed" and txn.after.get("accelerate") == "1.6.0", txn
    check = g.dtkguard("check", "--python", str(g.venv.python))
    assert check.returncode == 0, check.stdout + check.stderr  # the baseline followed


def test_a_veto_in_the_one_run_changes_nothing(fresh: Guarded, tmp_path: Path) -> None:
    """The paused run refused by dtkpip: its full explanation, pip's own refusal, one
    resolution, the environment as it was."""
    g = fresh
    log = tmp_path / "pip.log"
    before = g.venv.snapshot()
    proc = g.dtkpip("install", "--log", str(log), *g.index_args, "nvidia-cublas-cu12")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "nothing was installed or removed" in proc.stderr
    assert "denied-package (critical)" in proc.stderr
    assert "dtkpip refused this install" in proc.stderr  # the hook stopped pip for dtkpip
    assert "Would install" not in log.read_text().split("Using pip ")[1]  # the real run
    assert changed(before, g.venv.snapshot()) == []


def test_without_this_hook_dtkpip_plans_first(fresh: Guarded, tmp_path: Path) -> None:
    """A hook that is not this dtkguard's (an older guard install) cannot be paused: dtkpip
    plans with a dry run first, as before, and installs with a second run."""
    g = fresh
    hook = g.venv.site_packages / "_dtkguard_pip_hook.py"
    hook.write_text(hook.read_text() + "\n# an older hook\n")
    log = tmp_path / "pip.log"
    proc = g.dtkpip("install", "--log", str(log), *g.index_args, "accelerate==1.6.0")
    assert proc.returncode == 0, proc.stderr
    assert _pip_runs(log) == 2
    assert g.venv.installed()["accelerate"] == "1.6.0"
