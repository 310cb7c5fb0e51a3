"""Plain ``pip uninstall`` in a guarded venv is judged by the decision core, as an install is
(`decision.judge_uninstall`: the vendor build's removal, its files, the policy's exceptions);
and a venv guarded by a dtkguard whose hook had another copy set is stale until `guard
install` writes the new one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed

pytestmark = pytest.mark.wheel_cache


def _site(g: Guarded) -> Path:
    return g.venv.site_packages


def _rows(g: Guarded) -> tuple[int, dict[str, str]]:
    status = g.dtkguard("guard", "status", "--python", str(g.venv.python))
    rows = {line.split()[1]: line.split()[0] for line in status.stdout.splitlines() if line}
    return status.returncode, rows


def test_uninstall_of_a_vendor_build_is_refused_of_a_free_package_passes(fresh: Guarded) -> None:
    before = fresh.venv.snapshot()
    proc = fresh.pip("uninstall", "-y", "torch")
    assert proc.returncode == 1, proc.stdout
    assert "dtkguard: refusing removing torch" in proc.stderr, proc.stderr
    assert f"(the vendor build is {TORCH}) [vendor-missing]" in proc.stderr
    assert changed(before, fresh.venv.snapshot()) == []
    assert fresh.venv.installed()["torch"] == TORCH
    # a free package: installed and removed through the same hook, nothing refused
    assert fresh.pip("install", *fresh.index_args, "--no-deps", "idna").returncode == 0
    assert "idna" in fresh.venv.installed()
    proc = fresh.pip("uninstall", "-y", "idna")
    assert proc.returncode == 0 and "dtkguard" not in proc.stderr, proc.stderr
    assert "idna" not in fresh.venv.installed()
    # python -m pip is the same pip
    proc = fresh.pip("uninstall", "-y", "torch", module=True)
    assert proc.returncode == 1 and "[vendor-missing]" in proc.stderr, proc.stderr


def test_an_exception_of_the_policy_waives_an_uninstall_as_it_waives_an_install(
    fresh: Guarded, tmp_path: Path
) -> None:
    """The policy's exceptions for one vendor build's removal (``vendor-missing``, and
    ``file-conflict``: its own files are a vendor build's) let its uninstall through, as
    check, dtkpip and the hook's install path honour exceptions; the other vendor builds stay
    refused."""
    policy = tmp_path / "waived.toml"
    waive = "".join(
        f'\n[[exceptions]]\nrule = "{rule}"\npackage = "torchaudio"\n'
        'reason = "replaced by the site image"\nexpires = 2099-01-01\n'
        for rule in ("vendor-missing", "file-conflict")
    )
    policy.write_text(fresh.policy.read_text() + waive)
    py = str(fresh.venv.python)
    proc = fresh.dtkguard("guard", "install", "--python", py, "--policy", str(policy))
    assert proc.returncode == 0, proc.stderr
    proc = fresh.pip("uninstall", "-y", "torchvision")
    assert proc.returncode == 1 and "[vendor-missing]" in proc.stderr, proc.stderr
    proc = fresh.pip("uninstall", "-y", "torchaudio")
    assert proc.returncode == 0, proc.stderr
    assert "torchaudio" not in fresh.venv.installed()


def _as_guarded_before(g: Guarded) -> None:
    """Make ``g`` look guarded by the dtkguard before the site facts' copy: no
    ``_dtkguard_sitefacts.py`` (nor its byte code, nor their manifest rows) and that
    release's hook, which `guard install` wrote (its digest in the manifest)."""
    import hashlib

    manifest = g.store.manifest
    data = json.loads(manifest.read_text())
    copy = _site(g) / "_dtkguard_sitefacts.py"
    for path in [copy, *_site(g).glob("__pycache__/_dtkguard_site*")]:
        path.unlink()
        data["files"].pop(str(path), None)
    hook = _site(g) / "_dtkguard_pip_hook.py"
    old = hook.read_text().replace("_COPIES = (", "# the previous release\n_COPIES = (", 1)
    hook.write_text(old)
    data["files"][str(hook)]["sha256"] = hashlib.sha256(old.encode()).hexdigest()
    manifest.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def test_a_venv_guarded_by_the_previous_copy_set_is_stale_then_repaired(fresh: Guarded) -> None:
    _as_guarded_before(fresh)
    code, rows = _rows(fresh)
    assert code == 1, rows
    assert rows["hook"] == "stale" and rows["sitefacts"] == "absent", rows
    py = str(fresh.venv.python)
    proc = fresh.dtkguard("guard", "install", "--python", py, "--policy", str(fresh.policy))
    assert proc.returncode == 0, proc.stderr
    assert "written" in proc.stdout and "sitefacts" in proc.stdout, proc.stdout
    code, rows = _rows(fresh)
    assert code == 0 and rows["hook"] == rows["sitefacts"] == "present", rows
    assert list(_site(fresh).glob("__pycache__/_dtkguard_sitefacts.*.pyc"))
    proc = fresh.pip("uninstall", "-y", "torch")
    assert proc.returncode == 1 and "[vendor-missing]" in proc.stderr, proc.stderr
