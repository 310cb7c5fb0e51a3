"""Drift against a PEP 751 lock, device facts, and the machine formats of an audit."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.audit.conftest import VENDOR_TORCH, run_cli, site, write_lock

POLICY = Path(__file__).resolve().parents[2] / "policies" / "dtk-25.04.1.toml"


def rules_of(result) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in result.json()["findings"]:
        out.setdefault(f["rule"], []).append(f)
    return out


def test_drift_missing_version_extra(venv, tmp_path):
    venv.pip("uninstall", "-y", "helper")
    lock = write_lock(
        tmp_path / "pylock.img.toml",
        [("torch", VENDOR_TORCH), ("demo-pkg", "1.0.0"), ("helper", "2.0"), ("setuptools", "1")],
    )
    result = run_cli("audit", "--path", site(venv), "--lock", str(lock), "-f", "json")
    assert result.code == 1
    rules = rules_of(result)
    # installed as Demo_Pkg 1.0: demo-pkg 1.0.0 is the same; no drift
    assert [f["subject"] for f in rules["drift-missing"]] == ["helper"]
    assert [f["subject"] for f in rules["drift-version"]] == ["setuptools"]
    assert "drift-extra" not in rules  # pip is never extra; everything else is locked
    assert result.json()["facts"]["lock"]["packages"] == 4


def test_local_label_is_a_different_version(venv, tmp_path):
    lock = write_lock(tmp_path / "pylock.toml", [("torch", "2.4.1"), ("demo-pkg", "1.0")])
    result = run_cli("audit", "--path", site(venv), "--lock", str(lock), "-f", "json")
    (drift,) = rules_of(result)["drift-version"]
    assert drift["evidence"]["installed"] == VENDOR_TORCH


def test_drift_extra_severity_comes_from_the_policy(venv, tmp_path):
    lock = write_lock(tmp_path / "pylock.toml", [("torch", VENDOR_TORCH)])
    policy = tmp_path / "strict.toml"
    policy.write_text(
        POLICY.read_text().replace(
            '[drift]\nextra-severity = "medium"', '[drift]\nextra-severity = "critical"'
        )
    )
    result = run_cli(
        "audit", "--path", site(venv), "--lock", str(lock), "--policy", str(policy), "-f", "json"
    )
    extra = {f["subject"]: f["severity"] for f in rules_of(result)["drift-extra"]}
    # pip, setuptools and wheel are the installer's own, never drift-extra
    assert extra == {"demo-pkg": "critical", "helper": "critical"}
    default = run_cli("audit", "--path", site(venv), "--lock", str(lock), "-f", "json")
    assert {f["severity"] for f in rules_of(default)["drift-extra"]} == {"medium"}


def test_check_takes_a_lock_too(venv, tmp_path):
    venv.pip("uninstall", "-y", "helper")
    lock = write_lock(tmp_path / "pylock.toml", [("torch", VENDOR_TORCH), ("helper", "2.0")])
    result = run_cli("check", "--path", site(venv), "--lock", str(lock), "-f", "json")
    assert result.code == 1
    assert [f["subject"] for f in rules_of(result)["drift-missing"]] == ["helper"]
    plain = run_cli("check", "--path", site(venv), "-f", "json")
    assert "drift-missing" not in rules_of(plain)


HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"
OTHER = "3.8" if HERE != "3.8" else "3.9"  # a Python that is not dtkguard's


def _marker_lock(tmp_path: Path) -> Path:
    """A lock of ``kept``, ``only-target`` (for Python `OTHER`) and ``only-here`` (`HERE`)."""
    lock = write_lock(
        tmp_path / "pylock.toml", [("kept", "1.0"), ("only-target", "1.0"), ("only-here", "1.0")]
    )
    text = lock.read_text()
    for name, python in (("only-target", OTHER), ("only-here", HERE)):
        text = text.replace(
            f'name = "{name}"\n', f'name = "{name}"\nmarker = "python_version == \'{python}\'"\n'
        )
    lock.write_text(text)
    return lock


def _missing(args: list[str], lock: Path) -> dict[str, list[str]]:
    """The drift-missing subjects of ``check`` and of ``audit`` of a target."""
    out = {}
    for command in ("check", "audit"):
        result = run_cli(command, *args, "--lock", str(lock), "-f", "json")
        assert result.code in (0, 1), result.err
        out[command] = [f["subject"] for f in rules_of(result).get("drift-missing", [])]
    return out


@pytest.mark.parametrize("kind", ["path", "root"])
def test_check_and_audit_evaluate_lock_markers_for_the_target_python(tmp_path, kind):
    from tests.support.sitetree import add_dist

    image = tmp_path / "img"
    site_dir = image / "usr" / "lib" / f"python{OTHER}" / "site-packages"
    add_dist(site_dir, "kept", "1.0")
    args = ["--path", str(site_dir)] if kind == "path" else ["--root", str(image)]
    missing = _missing(args, _marker_lock(tmp_path))
    assert missing == {"check": ["only-target"], "audit": ["only-target"]}


def test_an_unknown_target_python_counts_as_any_not_as_dtkguards(tmp_path):
    from tests.support.sitetree import add_dist

    add_dist(tmp_path / "plain", "kept", "1.0")  # no lib/pythonX.Y: the Python is unknown
    missing = _missing(["--path", str(tmp_path / "plain")], _marker_lock(tmp_path))
    assert missing == {c: ["only-here", "only-target"] for c in ("check", "audit")}


def test_another_interpreter_is_judged_by_its_own_python(tmp_path):
    from tests.support.pythons import find_python
    from tests.support.sitetree import add_dist

    other = find_python(OTHER)
    if other is None:
        pytest.skip(f"needs python{OTHER} on PATH or under pyenv (a Python that is not {HERE})")
    venv = tmp_path / "venv"
    subprocess.run([other, "-m", "venv", "--without-pip", str(venv)], check=True)
    add_dist(venv / "lib" / f"python{OTHER}" / "site-packages", "kept", "1.0")
    missing = _missing(["--python", str(venv / "bin" / "python")], _marker_lock(tmp_path))
    assert missing == {"check": ["only-target"], "audit": ["only-target"]}


def test_bad_lock_exits_2_with_one_line_and_writes_nothing(venv, tmp_path):
    lock = tmp_path / "pylock.bad.toml"
    lock.write_text('lock-version = "1.0"\ncreated-by = "x"\n[[packages]]\nversion = "1"\n')
    out = tmp_path / "report.json"
    result = run_cli("audit", "--path", site(venv), "--lock", str(lock), "-o", str(out))
    assert result.code == 2
    assert result.err.startswith(f"dtkguard: error: {lock}:3:1: packages[0].name: ")
    assert result.err.count("\n") == 1
    assert not out.exists()
    broken = tmp_path / "pylock.broken.toml"
    broken.write_text("lock-version = \n")
    result = run_cli("audit", "--path", site(venv), "--lock", str(broken))
    assert result.code == 2 and result.err.startswith(f"dtkguard: error: {broken}:1:")


def test_bad_fail_on_and_workers_exit_2(venv):
    assert run_cli("audit", "--path", site(venv), "--fail-on", "severe").code == 2
    assert run_cli("audit", "--path", site(venv), "--workers", "0").code == 2


@pytest.fixture
def dtk_root(tmp_path, venv):
    """An image root: a copy of the venv's site-packages and a DTK install."""
    import shutil

    root = tmp_path / "img"
    shutil.copytree(venv.site_packages, root / "usr/local/lib/python3.10/site-packages")
    (root / "opt/dtk-25.04.1/.info").mkdir(parents=True)
    (root / "opt/dtk-25.04.1/.info/version").write_text("25.04.1\n")
    (root / "opt/dtk").symlink_to("/opt/dtk-25.04.1")  # absolute: resolved inside the root
    return root


def test_dtk_release_from_the_root(dtk_root):
    result = run_cli("audit", "--root", str(dtk_root), "-f", "json")
    device = result.json()["facts"]["device"]
    assert device["dtk"] == {
        "release": "25.04.1",
        "source": "/opt/dtk/.info/version",
        "raw": "25.04.1",
    }
    assert "cards" not in device  # an unpacked image has no cards


def test_dtk_release_fallbacks(tmp_path):
    from dtkguard.audit.facts import dtk_release
    from dtkguard.env.root import Root

    (tmp_path / "opt").mkdir()
    (tmp_path / "opt/dtk").symlink_to("dtk-24.04.3")
    assert dtk_release(Root(tmp_path))["release"] == "24.04.3"
    (tmp_path / "opt/dtk").unlink()
    (tmp_path / "opt/rocm/.info").mkdir(parents=True)
    (tmp_path / "opt/rocm/.info/version").write_text("6.2.0-1\n")
    assert dtk_release(Root(tmp_path)) == {
        "release": None,
        "rocm": "6.2.0-1",
        "source": "/opt/rocm/.info/version",
    }


def test_gfx_from_kfd_topology(tmp_path):
    from dtkguard.audit.facts import gfx_archs

    for node, value in (("0", 0), ("1", 90208), ("2", 90306)):  # CPU node, gfx928, gfx936
        (tmp_path / node).mkdir()
        (tmp_path / node / "properties").write_text(
            f"cpu_cores_count 0\ngfx_target_version {value}\n"
        )
    assert gfx_archs(str(tmp_path)) == ["gfx928", "gfx936"]


def test_card_series_from_hy_smi_on_path(venv, tmp_path, monkeypatch):
    """hy-smi cannot run here: a script prints its recorded text output."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    hy = bindir / "hy-smi"
    hy.write_text(
        "#!/bin/sh\n"
        "echo '=========== System Management Interface ==========='\n"
        "echo 'HCU[0]\t\t: Card Series: \t\tK100_AI'\n"
        "echo 'HCU[1]\t\t: Card Series: \t\tK100_AI'\n"
    )
    hy.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    result = run_cli("audit", "--path", site(venv), "-f", "json")
    device = result.json()["facts"]["device"]
    assert device["cards"] == ["K100_AI", "K100_AI"]
    assert device["visible_devices"] == {"HIP_VISIBLE_DEVICES": "1"}


def tampered_report(venv, fmt: str, tmp_path: Path) -> str:
    with (venv.site_packages / "demo" / "core.py").open("ab") as f:
        f.write(b"#")
    out = tmp_path / f"report.{fmt}"
    result = run_cli("audit", "--path", site(venv), "--verify-files", "-f", fmt, "-o", str(out))
    assert result.code == 1, result.err
    return out.read_text()


def test_sarif_required_fields_and_enums(venv, tmp_path):
    doc = json.loads(tampered_report(venv, "sarif", tmp_path))
    assert doc["version"] == "2.1.0"
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "dtkguard"
    ids = [r["id"] for r in driver["rules"]]
    assert len(ids) == len(set(ids)) and "file-modified" in ids and "drift-missing" not in ids
    assert run["results"]
    for result in run["results"]:
        assert result["message"]["text"]
        assert result["level"] in ("none", "note", "warning", "error")
        assert ids[result["ruleIndex"]] == result["ruleId"]
    for rule in driver["rules"]:
        assert rule["defaultConfiguration"]["level"] in ("none", "note", "warning", "error")
    modified = [r for r in run["results"] if r["ruleId"] == "file-modified"]
    assert modified[0]["level"] == "error"


def test_junit_is_parseable_and_fails(venv, tmp_path):
    root = ET.fromstring(tampered_report(venv, "junit", tmp_path))
    failures = root.findall(".//failure")
    assert failures
    assert any(
        "file-modified" in (tc.get("name") or "") + (tc.get("classname") or "")
        for tc in root.iter("testcase")
        if tc.find("failure") is not None
    )


def test_markdown_names_the_finding(venv, tmp_path):
    text = tampered_report(venv, "markdown", tmp_path)
    assert "file-modified" in text and "FAIL" in text


def test_cyclonedx_purls_and_hex_hashes(venv, tmp_path):
    doc = json.loads(tampered_report(venv, "cyclonedx", tmp_path))
    assert doc["bomFormat"] == "CycloneDX" and doc["specVersion"] == "1.6"
    assert doc["serialNumber"].startswith("urn:uuid:")
    comps = {c["name"]: c for c in doc["components"]}
    torch = comps["torch"]
    assert torch["purl"] == "pkg:pypi/torch@2.4.1%2Bdas.opt1.dtk25041"
    assert comps["Demo_Pkg"]["purl"] == "pkg:pypi/demo-pkg@1.0"
    files = {f["name"]: f for f in torch["components"]}
    lib = files["torch/lib/libtorch_hip.so"]
    (digest,) = lib["hashes"]
    assert digest["alg"] == "SHA-256"
    on_disk = (venv.site_packages / "torch/lib/libtorch_hip.so").read_bytes()
    assert digest["content"] == hashlib.sha256(on_disk).hexdigest()
    for comp in doc["components"]:
        for f in comp.get("components", []):
            for h in f["hashes"]:
                assert len(h["content"]) == 64 and int(h["content"], 16) >= 0
    demo = comps["Demo_Pkg"]
    assert any(p["name"] == "dtkguard:finding:file-modified" for p in demo["properties"])
    refs = [c["bom-ref"] for c in doc["components"]]
    assert len(refs) == len(set(refs))


def test_json_identity_and_schema(venv, tmp_path):
    doc = json.loads(tampered_report(venv, "json", tmp_path))
    assert doc["schema_version"] == 1
    assert doc["command"] == "audit"
    assert doc["host"]
    assert doc["target"]["kind"] == "path"
    assert doc["target"]["root"] == "/"
    assert doc["target"]["python_version"] == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert set(doc["facts"]["device"]) >= {"dtk", "cards", "gfx", "visible_devices"}
