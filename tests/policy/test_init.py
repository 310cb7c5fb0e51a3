"""`dtkguard policy init --from-env`: a policy written from an image, accepted unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import dtkguard
from tests.support.sitetree import add_dist, vendor_site


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DTKGUARD_CACHE_DIR", str(tmp_path / "cache"))


def image(root: Path) -> Path:
    return root / "usr" / "local" / "lib" / "python3.10" / "site-packages"


def test_policy_of_a_25041_image_extends_the_bundled_policy(tmp_path: Path) -> None:
    site = vendor_site(image(tmp_path / "img"))
    add_dist(site, "flash_attn", "2.6.1+das.opt1.dtk25041")
    out = tmp_path / "policy.toml"
    proc = dtkguard("policy", "init", "--from-env", str(tmp_path / "img"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert 'extends = ["dtk-25.04.1"]' in text and 'dtk = "25.04.1"' in text
    assert 'flash_attn = "2.6.1+das.opt1.dtk25041"' in text
    assert "accelerate" not in text  # a community package is not a vendor build
    ok = dtkguard("policy", "check", str(out))
    assert ok.returncode == 0 and ok.stdout.startswith("ok: site-dtk-25.04.1"), ok.stderr
    clean = dtkguard("check", "--root", str(tmp_path / "img"), "--policy", str(out))
    assert clean.returncode == 0, clean.stdout


def test_policy_of_another_dtk_release_copies_the_deny_list(tmp_path: Path) -> None:
    site = image(tmp_path / "img")
    add_dist(site, "torch", "2.7.1+das.opt1.dtk2604")
    add_dist(site, "vllm", "0.11.0+das.opt1.dtk2604")
    add_dist(site, "lmslim", "0.4.0+das.dtk2604")
    add_dist(site, "moe-w8a8", "0.0.2+das.dtk2510")
    add_dist(site, "accelerate", "1.6.0")
    out = tmp_path / "policy.toml"
    proc = dtkguard("policy", "init", "--from-env", "--root", str(tmp_path / "img"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "extends" not in text  # no 25.04.1 pins for a 26.04 image
    assert 'dtk = "26.04"' in text and 'dtk-allow = ["25.10"]' in text
    assert 'python = "3.10"' in text and 'pattern = "nvidia-*-cu12"' in text
    ok = dtkguard("policy", "check", str(out))
    assert ok.returncode == 0, ok.stderr
    assert "4 vendor builds" in ok.stdout
    shown = dtkguard("policy", "show", str(out), "-f", "json")
    assert '"torch": "2.7.1+das.opt1.dtk2604"' in shown.stdout
    clean = dtkguard("check", "--root", str(tmp_path / "img"), "--policy", str(out))
    assert clean.returncode == 0, clean.stdout
    # the written policy guards: a community torch is now a finding
    (site / "torch-2.7.1+das.opt1.dtk2604.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.7.1\n\n"
    )
    dirty = dtkguard("check", "--root", str(tmp_path / "img"), "--policy", str(out))
    assert dirty.returncode == 1 and "vendor-replaced" in dirty.stdout


def test_no_vendor_builds_is_exit_2_with_one_line(tmp_path: Path) -> None:
    site = image(tmp_path / "img")
    add_dist(site, "accelerate", "1.6.0")
    out = tmp_path / "policy.toml"
    proc = dtkguard("policy", "init", "--from-env", str(tmp_path / "img"), "-o", str(out))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "no DAS/DTK-labelled" in proc.stderr
    assert not out.exists()


def test_unwritable_output_is_exit_2_with_one_line(tmp_path: Path) -> None:
    vendor_site(image(tmp_path / "img"))
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "policy.toml"
    proc = dtkguard("policy", "init", "--from-env", str(tmp_path / "img"), "-o", str(out))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"dtkguard: error: {out}: -o: cannot write output")


def test_guard_on_import_is_validated(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[policy]\nname = "g"\n[guard]\non-import = "error"\n')
    shown = dtkguard("policy", "show", str(good))
    assert shown.returncode == 0 and "guard: on-import=error" in shown.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text('[policy]\nname = "b"\n\n[guard]\non-import = "loud"\n')
    proc = dtkguard("policy", "check", str(bad))
    assert proc.returncode == 2
    assert f"{bad}:5:" in proc.stderr and "on-import" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
