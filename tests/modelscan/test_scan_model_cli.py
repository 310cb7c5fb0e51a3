from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from modelkit import deepseek_model, write_raw

from tests.support.cli import dtkguard as run_dtkguard


def dtkguard(*args: str, cwd: Path | None = None, env: dict | None = None):
    """The CLI in a subprocess; a hang fails the test."""
    return run_dtkguard(*args, env=env, cwd=cwd, timeout=120)


def test_scan_model_exit_codes_and_json(tmp_path):
    fp8 = deepseek_model(tmp_path / "DeepSeek-V3", layers=2, shards=2)
    clean = deepseek_model(tmp_path / "bf16", fp8=False)
    out = dtkguard("scan-model", str(clean), "--policy", "dtk-25.04.1", "--card", "K100_AI")
    assert out.returncode == 0, out.stderr
    out = dtkguard(
        "scan-model", str(fp8), "--policy", "dtk-25.04.1", "--card", "K100_AI", "--format", "json"
    )
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    (finding,) = report["findings"]
    assert finding["rule"] == "fp8-weights" and finding["severity"] == "high"
    assert "F8_E4M3" in finding["evidence"]["summary"]
    # BW1100 is "warn" in the bundled policy: medium, below the default --fail-on high
    out = dtkguard("scan-model", str(fp8), "--policy", "dtk-25.04.1", "--card", "BW1100")
    assert out.returncode == 0, out.stderr
    out = dtkguard(
        "scan-model",
        str(fp8),
        "--policy",
        "dtk-25.04.1",
        "--card",
        "BW1100",
        "--fail-on",
        "medium",
        "-o",
        str(tmp_path / "r.json"),
        "--format",
        "json",
    )
    assert out.returncode == 1
    assert json.loads((tmp_path / "r.json").read_text())["findings"][0]["severity"] == "medium"


def test_scan_model_bad_input_is_one_line_exit_2(tmp_path):
    out = dtkguard("scan-model", str(tmp_path / "nope"), "--policy", "dtk-25.04.1")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "no such file" in out.stderr
    out = dtkguard("scan-model", str(tmp_path), "--fail-on", "bogus")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    bad = write_raw(tmp_path / "bad.safetensors", 1 << 63, b"{}")
    out = dtkguard("scan-model", str(bad), "--policy", "dtk-25.04.1", "--card", "K100_AI")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "exceeds the cap" in out.stderr


def test_exec_really_execs(tmp_path):
    out = dtkguard(
        "exec",
        "--policy",
        "dtk-25.04.1",
        "--card",
        "K100_AI",
        "--",
        sys.executable,
        "-c",
        "import os; print('served', os.getpid())",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("served ")


def test_exec_vetoes_fp8_model_and_flags(tmp_path):
    marker = tmp_path / "started"
    fp8 = deepseek_model(tmp_path / "DeepSeek-V3", layers=1, shards=1)
    script = tmp_path / "vllm"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    out = dtkguard(
        "exec",
        "--policy",
        "dtk-25.04.1",
        "--card",
        "K100_AI",
        "--",
        str(script),
        "serve",
        "DeepSeek-V3",
        cwd=tmp_path,
    )
    assert out.returncode == 1 and not marker.exists()
    assert "fp8-weights" in out.stderr and "veto" in out.stderr
    clean = deepseek_model(tmp_path / "bf16", fp8=False)
    out = dtkguard(
        "exec",
        "--policy",
        "dtk-25.04.1",
        "--card",
        "K100_AI",
        "--",
        str(script),
        "serve",
        str(clean),
        "--kv-cache-dtype",
        "fp8_e4m3",
    )
    assert out.returncode == 1 and not marker.exists() and "fp8-serving" in out.stderr
    out = dtkguard(
        "exec",
        "--policy",
        "dtk-25.04.1",
        "--card",
        "K100_AI",
        "--",
        str(script),
        "serve",
        str(clean),
    )
    assert out.returncode == 0 and marker.exists()
    assert fp8.exists()


def test_exec_without_command_and_missing_command():
    out = dtkguard("exec", "--policy", "dtk-25.04.1")
    assert out.returncode == 2 and "needs a command" in out.stderr
    out = dtkguard(
        "exec", "--policy", "dtk-25.04.1", "--card", "K100_AI", "--", "no-such-command-xyz"
    )
    assert out.returncode == 127 and "no-such-command-xyz" in out.stderr


def test_policy_exception_waives_a_model_like_any_finding(tmp_path):
    fp8 = deepseek_model(tmp_path / "DeepSeek-V3", layers=2, shards=1)
    policy = tmp_path / "site.toml"
    policy.write_text(
        '[policy]\nextends = ["dtk-25.04.1"]\n\n[[exceptions]]\nrule = "fp8-weights"\n'
        'package = "*/deepseek-v3"\nreason = "dequantized at load by the site loader"\n'
        "expires = 2999-12-31\n"
    )
    args = ("scan-model", str(fp8), "--card", "K100_AI", "--format", "json")
    waived = dtkguard(*args, "--policy", str(policy))
    assert waived.returncode == 0, waived.stderr
    assert json.loads(waived.stdout)["findings"] == []
    assert dtkguard(*args, "--policy", "dtk-25.04.1").returncode == 1


def _server(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in server that records that it started."""
    marker = tmp_path / "started"
    script = tmp_path / "vllm"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    return script, marker


def _deny_policy(tmp_path: Path) -> Path:
    policy = tmp_path / "strict.toml"
    policy.write_text(
        '[policy]\nextends = ["dtk-25.04.1"]\n\n[fp8]\nunresolved-model = "deny"\n'
        '\n[fp8.cards]\nBW1100 = "warn"\n'
    )
    return policy


def test_exec_warns_by_default_when_the_model_cannot_be_found(tmp_path):
    script, marker = _server(tmp_path)
    hub = tmp_path / "hub"
    hub.mkdir()
    base = ("exec", "--policy", "dtk-25.04.1", "--card", "K100_AI", "--", str(script), "serve")
    for model in (str(tmp_path / "no-such-model"), "org/not-downloaded"):
        marker.unlink(missing_ok=True)
        out = dtkguard(*base, model, env={"HF_HUB_CACHE": str(hub)})
        assert out.returncode == 0, out.stderr
        assert marker.exists()
        assert "warning: model not checked for FP8" in out.stderr
        assert 'unresolved-model = "warn"' in out.stderr and model in out.stderr


def test_exec_deny_refuses_a_model_it_cannot_resolve(tmp_path):
    script, marker = _server(tmp_path)
    hub = tmp_path / "hub"
    # a cache repo without any snapshot: the id resolves to a folder with nothing to read
    (hub / "models--org--empty" / "snapshots").mkdir(parents=True)
    policy = str(_deny_policy(tmp_path))
    base = ("exec", "--policy", policy, "--card", "BW1100", "--", str(script), "serve")
    readme_only = tmp_path / "readme-only"  # a folder with nothing any reader can read
    readme_only.mkdir()
    (readme_only / "README.md").write_text("weights not downloaded\n")
    for model in (str(tmp_path / "missing"), "org/not-downloaded", "org/empty", str(readme_only)):
        out = dtkguard(*base, model, env={"HF_HUB_CACHE": str(hub)})
        assert out.returncode == 1, (model, out.stderr)
        assert not marker.exists()
        assert "error: model not checked for FP8" in out.stderr and "veto" in out.stderr
    # `vllm serve` with no model at all is not checkable either
    out = dtkguard("exec", "--policy", policy, "--card", "BW1100", "--", str(script), "serve")
    assert out.returncode == 1 and "names no model" in out.stderr and not marker.exists()


def test_exec_deny_still_starts_a_model_it_found(tmp_path):
    script, marker = _server(tmp_path)
    hub = tmp_path / "hub"
    snap = hub / "models--org--clean" / "snapshots" / ("a" * 40)
    deepseek_model(snap, layers=1, shards=1, fp8=False)
    (hub / "models--org--clean" / "refs").mkdir()
    (hub / "models--org--clean" / "refs" / "main").write_text("a" * 40)
    policy = str(_deny_policy(tmp_path))
    out = dtkguard(
        "exec",
        "--policy",
        policy,
        "--card",
        "K100_AI",
        "--",
        str(script),
        "serve",
        "org/clean",
        env={"HF_HUB_CACHE": str(hub)},
    )
    assert out.returncode == 0, out.stderr
    assert marker.exists() and "not checked" not in out.stderr
    # a plain python command names no model: nothing to resolve, nothing to refuse
    out = dtkguard("exec", "--policy", policy, "--", sys.executable, "-c", "print('ok')")
    assert out.returncode == 0 and out.stdout == "ok\n", out.stderr


def test_scan_model_cyclonedx_lists_each_model_with_its_quantisation(tmp_path):
    fp8 = deepseek_model(tmp_path / "models" / "DeepSeek-V3", layers=1, shards=1)
    clean = deepseek_model(tmp_path / "models" / "bf16", fp8=False)
    out = dtkguard(
        "scan-model",
        str(tmp_path / "models"),
        "--policy",
        "dtk-25.04.1",
        "--card",
        "K100_AI",
        "--format",
        "cyclonedx",
    )
    assert out.returncode == 1, out.stderr
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    validator = JsonStrictValidator(SchemaVersion.V1_6)
    assert validator.validate_str(out.stdout) is None
    doc = json.loads(out.stdout)
    bad = json.dumps({**doc, "components": [{**doc["components"][0], "type": "model"}]})
    assert validator.validate_str(bad) is not None  # the validator does reject a wrong type
    assert doc["bomFormat"] == "CycloneDX" and doc["specVersion"] == "1.6"
    comps = {c["name"]: c for c in doc["components"]}
    assert set(comps) == {"DeepSeek-V3", "bf16"}
    assert {c["type"] for c in comps.values()} == {"machine-learning-model"}
    assert doc["dependencies"][0]["dependsOn"] == [c["bom-ref"] for c in doc["components"]]
    props = {p["name"]: p["value"] for p in comps["DeepSeek-V3"]["properties"]}
    assert props["dtkguard:location"] == str(fp8)
    assert props["dtkguard:quantization:method"] == "fp8"
    assert props["dtkguard:quantization:weights"] == "fp8"
    assert props["dtkguard:quantization:detections"] == "fp8-weights"
    assert "F8_E4M3:" in props["dtkguard:weights:dtypes"]
    assert props["dtkguard:finding:fp8-weights"].startswith("high: ")
    clean_props = {p["name"]: p["value"] for p in comps["bf16"]["properties"]}
    assert clean_props["dtkguard:location"] == str(clean)
    assert clean_props["dtkguard:quantization:weights"] == "none"
    assert not any(k.startswith("dtkguard:finding") for k in clean_props)
    # the findings sit on their model, not loose on the BOM's subject
    meta = {p["name"] for p in doc["metadata"]["component"]["properties"]}
    assert not any(name.startswith("dtkguard:finding") for name in meta)


@pytest.mark.parametrize("name", ["ct-w4afp8", "modelopt-w4a8-awq"])
def test_exec_vetoes_fp8_activations_over_int4_on_a_card_without_fp8(tmp_path, name):
    from schemes import SCHEMES

    model = next(s for s in SCHEMES if s.id == name).build(tmp_path)
    script, marker = _server(tmp_path)
    base = ("exec", "--policy", "dtk-25.04.1", "--", str(script), "serve", str(model))
    out = dtkguard(*base[:3], "--card", "BW1000", *base[3:])
    assert out.returncode == 1 and not marker.exists(), out.stderr
    assert "fp8-activations" in out.stderr and "Keep quantization_config" in out.stderr
    assert "stale config" not in out.stderr
    # BW1100 has FP8: a warning (medium), below the default --fail-on high
    out = dtkguard(*base[:3], "--card", "BW1100", *base[3:])
    assert out.returncode == 0 and marker.exists(), out.stderr


@pytest.mark.parametrize("kind", ["empty", "fifo", "device", "readme"])
def test_nothing_to_read_is_not_a_clean_model(tmp_path, kind):
    """An empty or mistyped model folder, or one of FIFOs and device links, is exit 3 (unknown
    is not clean); --allow-empty lets it pass."""
    folder = tmp_path / "model"
    folder.mkdir()
    if kind == "fifo":
        os.mkfifo(folder / "model.safetensors")
    elif kind == "device":
        (folder / "model.safetensors").symlink_to("/dev/zero")
    elif kind == "readme":
        (folder / "README.md").write_text("weights not downloaded yet\n")
    out = dtkguard("scan-model", str(folder), "--card", "K100_AI")
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stderr.startswith(f"dtkguard: error: nothing to scan at {folder}")
    assert "Traceback" not in out.stderr
    out = dtkguard("scan-model", str(folder), "--card", "K100_AI", "--allow-empty")
    assert out.returncode == 0, out.stderr


def test_audit_models_of_an_empty_folder_is_not_clean(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "demo-1.0.dist-info").mkdir()
    (site / "demo-1.0.dist-info" / "METADATA").write_text("Name: demo\nVersion: 1.0\n")
    empty = tmp_path / "models"
    empty.mkdir()
    out = dtkguard("audit", "--path", str(site), "--models", str(empty))
    assert out.returncode == 3 and "nothing to scan at" in out.stderr, out.stderr
