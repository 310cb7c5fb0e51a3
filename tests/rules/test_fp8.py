from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "modelscan"))

from modelkit import deepseek_model, write_json, write_safetensors

from dtkguard.findings import Severity
from dtkguard.modelscan.scan import scan
from dtkguard.modelscan.serving import ServingProcess, parse_command
from dtkguard.policy.compiled import CompiledPolicy, Fp8Rule
from dtkguard.rules.fp8 import fp8_findings, pick_card

POLICY = CompiledPolicy(name="t", fp8=Fp8Rule(cards={"BW1100": "warn"}))


@pytest.fixture
def fp8_model(tmp_path):
    return deepseek_model(tmp_path / "DeepSeek-V3", layers=2, shards=2)


@pytest.mark.parametrize(
    ("card", "severity"),
    [
        ("K100_AI", Severity.HIGH),
        ("BW1000", Severity.HIGH),
        ("BW1100", Severity.MEDIUM),
        (None, Severity.HIGH),
        ("bw1100", Severity.MEDIUM),
    ],
)
def test_fp8_weights_severity_follows_card(fp8_model, card, severity):
    (finding,) = fp8_findings(scan([str(fp8_model)]), POLICY, card)
    assert finding.rule == "fp8-weights" and finding.severity is severity
    assert finding.subject == str(fp8_model)
    assert finding.evidence["summary"].startswith("config quant_method=fp8 fmt=e4m3")
    assert finding.evidence["card"] == card


def test_allow_gives_no_finding(fp8_model):
    policy = CompiledPolicy(name="t", fp8=Fp8Rule(cards={"BW1100": "allow"}))
    assert list(fp8_findings(scan([str(fp8_model)]), policy, "BW1100")) == []
    assert len(list(fp8_findings(scan([str(fp8_model)]), policy, "K100_AI"))) == 1


def test_stale_config_is_not_reported_as_fp8(tmp_path):
    folder = deepseek_model(tmp_path / "bf16", fp8=False, stale_config=True)
    (finding,) = fp8_findings(scan([str(folder)]), POLICY, "K100_AI")
    assert finding.rule == "fp8-weights" and finding.severity is Severity.MEDIUM
    assert finding.evidence["detection"] == "stale-config"
    assert "stale config" in finding.message and "FP8 weights" not in finding.message


def test_rule_ids_for_nvfp4_and_kv(tmp_path):
    folder = tmp_path / "nvfp4"
    folder.mkdir()
    write_json(
        folder / "hf_quant_config.json",
        {"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}},
    )
    write_safetensors(
        folder / "model.safetensors",
        {
            "l.weight": ("U8", [8, 4]),
            "l.weight_scale": ("F8_E4M3", [8, 1]),
            "l.k_scale": ("F32", []),
            "l.v_scale": ("F32", []),
        },
    )
    rules = {f.rule: f.severity for f in fp8_findings(scan([str(folder)]), POLICY, "K100_AI")}
    assert rules == {
        "fp4-weights": Severity.HIGH,
        "fp8-scales": Severity.HIGH,
        "fp8-kv-cache": Severity.HIGH,
    }


def test_weak_kv_hint_is_low(tmp_path):
    path = write_safetensors(
        tmp_path / "m.safetensors", {"l.weight": ("BF16", [4]), "l.k_scale": ("F32", [])}
    )
    (finding,) = fp8_findings(scan([str(path)]), POLICY, "K100_AI")
    assert finding.rule == "fp8-kv-cache" and finding.severity is Severity.LOW


def test_serving_process_and_its_model(fp8_model):
    cmd = parse_command(["vllm", "serve", str(fp8_model), "--kv-cache-dtype", "fp8"])
    proc = ServingProcess(pid=4242, command=cmd, model_path=str(fp8_model))
    found = list(fp8_findings([proc], POLICY, "K100_AI"))
    assert [f.rule for f in found] == ["fp8-serving", "fp8-weights"]
    assert found[0].subject == "pid 4242 (vllm)" and found[0].severity is Severity.HIGH
    assert found[0].evidence["requests"] == [
        {"kind": "kv_cache", "source": "flag", "text": "--kv-cache-dtype fp8"}
    ]
    assert found[1].evidence["served_by"] == {"pid": 4242, "engine": "vllm"}


def test_pick_card_takes_the_most_restrictive():
    assert pick_card([], POLICY) is None
    assert pick_card(["BW1100", "BW1100"], POLICY) == "BW1100"
    assert pick_card(["BW1100", "K100_AI"], POLICY) == "K100_AI"


def test_every_fp8_rule_is_in_the_catalog():
    from dtkguard.rules.catalog import is_known
    from dtkguard.rules.fp8 import RULES

    assert all(is_known(rule.id) for rule in RULES)


def test_aiter_bmm_switches_count_only_for_mla_models(tmp_path):
    """vLLM's AITER FP8/FP4 BMM re-quantise MLA weights: a Llama is not touched by them."""
    env = {"VLLM_ROCM_USE_AITER": "1"}
    llama = deepseek_model(tmp_path / "llama-bf16", fp8=False)
    mla = deepseek_model(tmp_path / "dsv3-bf16", fp8=False)
    config = json.loads((mla / "config.json").read_text())
    (mla / "config.json").write_text(json.dumps({**config, "kv_lora_rank": 512}))

    def rules(model):
        cmd = parse_command(["vllm", "serve", str(model)], env)
        proc = ServingProcess(pid=0, command=cmd, model_path=str(model) if model else None)
        return [f.rule for f in fp8_findings([proc], POLICY, "K100_AI")]

    assert rules(llama) == []
    assert rules(mla) == ["fp8-serving"]
    assert rules(None) == ["fp8-serving"]  # model unknown: the request stands
