"""dtkuv (= dtkguard uv) end to end with the real uv: uv's dry run is judged with dtkpip's
verdict; refusals leave the environment byte-identical; safe installs run uv once."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.support.venvs import hermetic_env

pytestmark = pytest.mark.wheel_cache


@pytest.fixture(scope="module")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("uv-cache")


@pytest.fixture(scope="module")
def ug(tmp_path_factory: pytest.TempPathFactory, build_guarded: Callable[..., Guarded]) -> Guarded:
    """A guarded venv (newest pip; uv does not use it) shared by the cases that change nothing."""
    return build_guarded(tmp_path_factory.mktemp("uv-guarded") / "venv")


def dtkuv(g: Guarded, cache: Path, *args: str, env: dict[str, str] | None = None):
    environ = env or hermetic_env(UV_CACHE_DIR=str(cache))
    return g.dtkguard("uv", "--python", str(g.venv.python), *args, env=environ)


def refused(g: Guarded, proc: subprocess.CompletedProcess[str], before: dict[str, str]) -> str:
    """The refusal's text, after asserting exit 1, dtkguard named, nothing touched."""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "dtkuv: stopped `uv " in proc.stderr and "dtkguard policy explain" in proc.stderr
    assert changed(before, g.venv.snapshot()) == []
    assert g.venv.installed()["torch"] == TORCH
    return proc.stderr


def test_vllm_092_is_refused_with_dtkpips_explanation(ug: Guarded, uv_cache: Path) -> None:
    before = ug.venv.snapshot()
    proc = dtkuv(ug, uv_cache, "pip", "install", *ug.index_args, "vllm==0.9.2")
    text = refused(ug, proc, before)
    assert f"dtkuv: acting on {ug.venv.python}" in text
    assert "nothing was installed or removed" in text
    assert "uv cannot satisfy this request while keeping the vendor builds" in text
    assert f"replace the vendor build torch {TORCH} with torch 2.7.0" in text
    assert "vendor-replaced (critical)" in text and "denied-package" in text
    assert "'vllm==0.8.5.post1+das.opt1.dtk25041'" in text and "dtkuv pip install" in text
    assert 'dtkuv --override "reason" pip install' in text


def test_sync_of_an_unrelated_set_is_refused(ug: Guarded, uv_cache: Path, tmp_path: Path) -> None:
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("pins-torch==1.0\n")
    before = ug.venv.snapshot()
    proc = dtkuv(ug, uv_cache, "pip", "sync", *ug.index_args, str(reqs))
    text = refused(ug, proc, before)
    assert f"remove the vendor build torch {TORCH}" in text
    assert "vendor-missing (critical)" in text and "torchvision" in text


def test_uninstall_of_a_vendor_build_is_refused(ug: Guarded, uv_cache: Path) -> None:
    before = ug.venv.snapshot()
    proc = dtkuv(ug, uv_cache, "pip", "uninstall", "torch")
    assert proc.returncode == 1, proc.stderr
    assert "dtkuv: stopped `uv pip uninstall torch`: nothing was removed" in proc.stderr
    assert f"torch {TORCH} is a vendor build" in proc.stderr
    assert "dtkuv pip install --reinstall --no-deps" in proc.stderr
    assert changed(before, ug.venv.snapshot()) == []


def test_denied_package_is_refused(ug: Guarded, uv_cache: Path) -> None:
    before = ug.venv.snapshot()
    proc = dtkuv(ug, uv_cache, "pip", "install", *ug.index_args, "nvidia-cublas-cu12")
    text = refused(ug, proc, before)
    assert "denied-package (critical)" in text and "nvidia-cublas-cu12" in text


@pytest.mark.parametrize("where", ["global", "after"])
def test_no_config_does_not_get_past_dtkuv(ug: Guarded, uv_cache: Path, where: str) -> None:
    before = ug.venv.snapshot()
    req = ["pip", "install", *ug.index_args, "torch==2.7.0"]
    args = ["--no-config", *req] if where == "global" else [*req, "--no-config"]
    text = refused(ug, dtkuv(ug, uv_cache, *args), before)
    assert f"replace the vendor build torch {TORCH} with torch 2.7.0" in text


def test_version_request_as_python_is_refused_not_guessed(ug: Guarded, uv_cache: Path) -> None:
    before = ug.venv.snapshot()
    proc = ug.dtkguard(
        "uv", "pip", "install", "--python", "3.99", "torch==2.7.0",
        env=hermetic_env(UV_CACHE_DIR=str(uv_cache)),
    )  # fmt: skip
    assert proc.returncode == 2 and "not a version request" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert changed(before, ug.venv.snapshot()) == []


def test_satisfied_runs_uv_once_and_leaves_nothing(ug: Guarded, uv_cache: Path) -> None:
    before = ug.venv.snapshot()
    proc = dtkuv(ug, uv_cache, "pip", "install", *ug.index_args, "torch")
    assert proc.returncode == 0, proc.stderr
    assert "Would" not in proc.stderr
    assert changed(before, ug.venv.snapshot()) == []
    # other uv commands: uv untouched, with its exit code
    listed = dtkuv(ug, uv_cache, "pip", "list", "--python", str(ug.venv.python))
    assert listed.returncode == 0 and "torch" in listed.stdout


def test_safe_install_runs_uv_and_override_is_recorded(
    tmp_path: Path, build_guarded: Callable[..., Guarded], uv_cache: Path
) -> None:
    g = build_guarded(tmp_path / "venv")
    proc = dtkuv(g, uv_cache, "pip", "install", *g.index_args, "accelerate==1.6.0")
    assert proc.returncode == 0, proc.stderr
    assert "dtkuv: planning with uv … (1 package)" in proc.stderr
    assert g.venv.installed()["accelerate"] == "1.6.0" and g.venv.installed()["torch"] == TORCH
    proc = dtkuv(
        g, uv_cache, "--override", "cublas for a CPU test",
        "pip", "install", *g.index_args, "--no-deps", "nvidia-cublas-cu12",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "nvidia-cublas-cu12" in g.venv.installed()
    lines = g.store.overrides.read_text().splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry["tool"] == "dtkuv" and entry["reason"] == "cublas for a CPU test"
    assert any("nvidia-cublas-cu12" in a for a in entry["allowed"])


def test_target_outside_runs_uv_and_inside_is_judged(
    ug: Guarded, uv_cache: Path, tmp_path: Path
) -> None:
    before = ug.venv.snapshot()
    req = ["pip", "install", *ug.index_args, "--no-deps", "torch==2.7.0"]
    inside = dtkuv(ug, uv_cache, *req, "--target", str(ug.venv.site_packages))
    refused(ug, inside, before)
    elsewhere = tmp_path / "elsewhere"
    outside = dtkuv(ug, uv_cache, *req, "--target", str(elsewhere))
    assert outside.returncode == 0, outside.stderr
    assert "is outside" in outside.stderr and (elsewhere / "torch").is_dir()
    assert changed(before, ug.venv.snapshot()) == []


def test_a_plan_dtkuv_cannot_read_is_refused(tmp_path: Path) -> None:
    """uv's dry-run format as recorded, with one change line missing: fail closed."""
    from dtkguard.guard.uvplan import uv_dry_run

    fake = tmp_path / "uv"
    fake.write_text(
        "#!/bin/sh\ncat >&2 <<'EOF'\nUsing Python 3.11.7 environment at: venv\n"
        "Resolved 2 packages in 3ms\nWould install 2 packages\n + accelerate==1.6.0\nEOF\n"
    )
    fake.chmod(0o755)
    plan = uv_dry_run(str(fake), ["pip", "install", "--dry-run", "x"], hermetic_env(), set())
    assert plan.returncode == 1 and "cannot read uv's plan" in plan.stderr
    fake.write_text(fake.read_text().replace("install 2", "install 1"))
    plan = uv_dry_run(str(fake), ["pip", "install", "--dry-run", "x"], hermetic_env(), set())
    assert plan.ok and [p.name for p in plan.install] == ["accelerate"]


def test_a_venv_without_pip_is_guarded_too(
    tmp_path: Path, uv_cache: Path, guard_policy: Path, vendor_wheelhouse: Path, public_dir: Path
) -> None:
    """uv users' venvs often have no pip: planning, judging and explaining need none."""
    from tests.guard.conftest import DAS_25041
    from tests.support.venvs import make_venv

    venv = make_venv(tmp_path / "venv", with_pip=False)
    env = hermetic_env(UV_CACHE_DIR=str(uv_cache))
    venv.uv_pip("install", "--no-index", "-f", str(vendor_wheelhouse), "-f", str(public_dir),
                f"torch=={DAS_25041['torch']}", env=env)  # fmt: skip
    g = Guarded(venv, guard_policy, ["--no-index", "-f", str(public_dir)], tmp_path)
    proc = g.dtkguard("guard", "install", "--python", str(venv.python), "--policy", str(g.policy))
    assert proc.returncode == 0, proc.stderr
    before = venv.snapshot()
    proc = dtkuv(g, uv_cache, "pip", "install", *g.index_args, "torch==2.7.0")
    text = refused(g, proc, before)
    assert f"replace the vendor build torch {TORCH} with torch 2.7.0" in text


def test_a_target_from_uv_config_is_refused(ug: Guarded, uv_cache: Path, tmp_path: Path) -> None:
    """A uv.toml with ``[pip] target`` redirects the install where dtkuv was not told."""
    config = tmp_path / "uv.toml"
    config.write_text(f'[pip]\ntarget = "{ug.venv.site_packages}"\n')
    before = ug.venv.snapshot()
    proc = dtkuv(
        ug, uv_cache, "--config-file", str(config), "pip", "install", *ug.index_args,
        "--no-deps", "torch==2.7.0",
    )  # fmt: skip
    assert proc.returncode == 2 and "--target" in proc.stderr, proc.stderr
    assert changed(before, ug.venv.snapshot()) == []


def test_dtkuv_install_is_a_transaction_that_undo_reverts(
    tmp_path: Path, build_guarded: Callable[..., Guarded], uv_cache: Path
) -> None:
    """dtkuv's one real uv run is journalled like dtkpip's: `undo` gives the previous set back.
    (Without the vendor vllm, which the fixture installs without its requirements: undoing an
    install that brought one of them, pyyaml, is rightly refused as vendor-deps-broken.)"""
    import json

    g = build_guarded(tmp_path / "venv", with_vllm=False)
    before = g.venv.installed()
    proc = dtkuv(g, uv_cache, "pip", "install", *g.index_args, "accelerate==1.6.0")
    assert proc.returncode == 0, proc.stderr
    history = g.dtkguard("history", "--python", str(g.venv.python), "--json")
    assert history.returncode == 0, history.stdout + history.stderr
    [txn] = json.loads(history.stdout)
    assert txn["tool"] == "dtkuv" and txn["state"] == "committed"
    assert "accelerate" in txn["after"] and "accelerate" not in txn["before"]
    # approved: the baseline follows it, so restore keeps it (issue 26)
    assert "accelerate" in json.loads(g.store.baseline.read_text())["dists"]
    plan = g.dtkguard("restore", "--python", str(g.venv.python), "--dry-run")
    assert "nothing to do" in plan.stdout, plan.stdout
    proc = g.dtkguard("undo", "--python", str(g.venv.python), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert g.venv.installed() == before
    assert "accelerate" not in json.loads(g.store.baseline.read_text())["dists"]
