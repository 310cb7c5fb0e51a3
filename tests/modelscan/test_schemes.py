"""Every config field that declares FP8/FP4 (docs/fp8.md), on tensors from the real writers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from schemes import SCHEMES, Scheme

from dtkguard.modelscan.detect import detect
from dtkguard.modelscan.scan import scan

DOC = Path(__file__).resolve().parents[2] / "docs" / "fp8.md"


def detections(folder: Path) -> dict[str, object]:
    (model,) = scan([str(folder)])
    return {d.kind: d for d in detect(model)}


@pytest.mark.parametrize("scheme", SCHEMES, ids=[s.id for s in SCHEMES])
def test_scheme(tmp_path, scheme: Scheme):
    found = detections(scheme.build(tmp_path))
    assert set(found) == set(scheme.expect), {k: d.message for k, d in found.items()}


def test_every_fixture_is_documented():
    text = DOC.read_text()
    missing = [s.id for s in SCHEMES if f"`{s.id}`" not in text]
    assert not missing, f"docs/fp8.md has no row for {missing}"


def _by_id(name: str) -> Scheme:
    return next(s for s in SCHEMES if s.id == name)


@pytest.mark.parametrize("name", ["ct-w4afp8", "modelopt-w4a8-awq", "w4afp8"])
def test_fp8_activations_over_int4_keep_the_config(tmp_path, name):
    det = detections(_by_id(name).build(tmp_path))["fp8-activations"]
    assert "FP8 activations over integer weights" in det.message and "needs FP8" in det.message
    assert "Keep quantization_config" in det.remediation
    assert "remove" not in det.remediation.lower()


def test_stale_config_fix_names_the_file_and_dtypes_found(tmp_path):
    det = detections(_by_id("ct-w4afp8-dequantized").build(tmp_path))["stale-config"]
    assert "plain BF16" in det.message
    assert "Remove quantization_config from config.json" in det.remediation
    # the same stale scheme declared in hf_quant_config.json names that file
    folder = tmp_path / "modelopt-stale"
    scheme = _by_id("modelopt-w4a8-awq")
    stale = Scheme(folder.name, "", "", "", scheme.files, {"lm_head.weight": ("F16", [8, 8])})
    det = detections(stale.build(tmp_path))["stale-config"]
    assert "Remove hf_quant_config.json" in det.remediation and "as F16" in det.remediation


def test_config_fp8_weights_over_int_tensors_is_a_mismatch_not_stale(tmp_path):
    scheme = _by_id("ct-fp8-dynamic")
    ints = Scheme("mismatch", "", "", "", scheme.files, _by_id("ct-w4afp8").tensors)
    found = detections(ints.build(tmp_path))
    assert set(found) == {"config-mismatch"}
    assert "do not delete it" in found["config-mismatch"].remediation


def test_per_layer_quant_algos_are_summarised(tmp_path):
    (model,) = scan([str(_by_id("modelopt-mixed-hf").build(tmp_path))])
    cfg = model.config
    assert cfg.weights == {"fp8", "fp4"} and cfg.kv == {"fp8"}
    assert "per-layer quant_algo 1x FP8, 1x NVFP4" in cfg.evidence()


def test_quark_kv_output_tensors_are_kv_not_activations(tmp_path):
    (model,) = scan([str(_by_id("quark-kv-cache-group").build(tmp_path))])
    assert model.config.kv == {"fp8"} and model.config.activations == set()
    assert model.kv_scales == 2


def test_int_kv_scheme_scales_are_not_fp8(tmp_path):
    (model,) = scan([str(_by_id("ct-kv-int8").build(tmp_path))])
    assert model.kv_scales == 2 and model.config.kv_int and not model.config.kv
    assert "fp8-kv-cache" not in {d.kind for d in detect(model)}


def test_index_names_stand_in_for_missing_shards(tmp_path):
    found = detections(_by_id("index-scale-inv-shards-missing").build(tmp_path))
    det = found["fp8-weights"]
    assert "from the index; 1 shards missing" in det.message and not det.weak
    assert "index names 1 *_scale_inv" in det.evidence
    hint = detections(_by_id("index-weight-scale-shards-missing").build(tmp_path))["fp8-weights"]
    assert hint.weak and "unknown format" in hint.message


@pytest.mark.skipif(
    sys.version_info[:2] != (3, 11),
    reason="torch is in the test extra for Python 3.11 only (CPU torch 2.13.0)",
)
@pytest.mark.parametrize("zipfile", [True, False], ids=["zip", "legacy"])
def test_torch_save_checkpoints(tmp_path, zipfile):
    import torch

    state = {
        "w8": torch.zeros(4, 4).to(torch.float8_e5m2),
        "w4": torch.zeros(4, 2, dtype=torch.uint8).view(torch.float4_e2m1fn_x2),
        "scale": torch.ones(1),
    }
    torch.save(state, tmp_path / "pytorch_model.bin", _use_new_zipfile_serialization=zipfile)
    (model,) = scan([str(tmp_path)])
    assert not model.problems
    assert model.pickle_globals == {"torch.float8_e5m2": 1, "torch.float4_e2m1fn_x2": 1}
    assert {d.kind for d in detect(model)} == {"fp8-weights", "fp4-weights"}
    torch.save({"w": torch.zeros(2, 2, dtype=torch.bfloat16)}, tmp_path / "pytorch_model.bin")
    (model,) = scan([str(tmp_path)])
    assert detect(model) == []


def _method_cases() -> list[tuple[str, set[str]]]:
    from dtkguard.modelscan.config import FP4_METHODS, FP8_ACT_METHODS, FP8_METHODS

    return (
        [(m, {"fp8-weights"}) for m in sorted(FP8_METHODS)]
        + [(m, {"fp4-weights"}) for m in sorted(FP4_METHODS)]
        + [(m, {"fp8-activations"}) for m in sorted(FP8_ACT_METHODS)]
        + [(m, set()) for m in ("awq", "gptq", "bitsandbytes", "experts_int8", "slimquant_w4a8")]
    )


@pytest.mark.parametrize(("method", "expect"), _method_cases())
def test_every_quant_method_value(tmp_path, method, expect):
    """A config naming only the method, weights not downloaded: declared by the config."""
    scheme = Scheme(
        method, "", "", "", {"config.json": {"quantization_config": {"quant_method": method}}}
    )
    found = detections(scheme.build(tmp_path))
    assert set(found) == expect
    from dtkguard.modelscan.config import ONLINE_METHODS

    said = "quantised at load" if method in ONLINE_METHODS else "declared by the config"
    assert all(said in d.message for d in found.values())


@pytest.mark.parametrize(
    ("algo", "weights", "activations"),
    [
        ("FP8", {"fp8"}, {"fp8"}),
        ("FP8_PER_CHANNEL_PER_TOKEN", {"fp8"}, {"fp8"}),
        ("FP8_PB_WO", {"fp8"}, set()),
        ("FP8_BLOCK_SCALES", {"fp8"}, {"fp8"}),
        ("MXFP8", {"fp8"}, {"fp8"}),
        ("NVFP4", {"fp4"}, {"fp4"}),
        ("NVFP4_AWQ", {"fp4"}, {"fp4"}),
        ("W4A16_NVFP4", {"fp4"}, set()),
        ("W4A8_NVFP4_FP8", {"fp4"}, {"fp8"}),
        ("MXFP4", {"fp4"}, {"fp4"}),
        ("W4A8_MXFP4_FP8", {"fp4"}, {"fp8"}),
        ("W4A8_AWQ", set(), {"fp8"}),
        ("W4A16_AWQ", set(), set()),
        ("INT4_AWQ", set(), set()),
        ("INT8_SQ", set(), set()),
        ("W8A8_SQ_PER_CHANNEL", set(), set()),
        ("fp8", {"fp8"}, {"fp8"}),  # vLLM upper-cases the value
    ],
)
def test_every_modelopt_quant_algo(tmp_path, algo, weights, activations):
    files = {"hf_quant_config.json": {"quantization": {"quant_algo": algo}}}
    scheme = Scheme("m", "", "", "", files)
    (model,) = scan([str(scheme.build(tmp_path))])
    assert (model.config.weights, model.config.activations) == (weights, activations)


@pytest.mark.parametrize(
    "qc",
    [
        {"quant_method": "modelopt", "quant_algo": 7, "quantized_layers": {"a": 1, "b": None}},
        {"quant_method": "quark", "export": "x", "layer_quant_config": []},
        {"quant_method": "quark", "export": {"kv_cache_group": [1, None, "*"]}},
        {"quant_method": "quark", "export": {"kv_cache_group": ["*"]}, "layer_quant_config": {}},
        {"quant_method": "auto-round", "data_type": 8, "bits": "8", "act_data_type": ["fp"]},
        {"quant_method": "auto-round", "data_type": "fp", "act_bits": "8", "act_data_type": "fp"},
        {"quant_method": "compressed-tensors", "config_groups": [[[[{"weights": {}}]]]]},
        {"kv_cache_scheme": {"type": "float", "num_bits": "8"}, "kv_cache_quant_algo": 8},
        {"config_groups": {"g": {"weights": {"type": "float", "num_bits": True}}}},
    ],
)
def test_malformed_configs_declare_nothing_and_do_not_crash(tmp_path, qc):
    """Wrong types where the producers write strings and integers: read as no declaration."""
    scheme = Scheme("m", "", "", "", {"config.json": {"quantization_config": qc}}, _bf16_only())
    (model,) = scan([str(scheme.build(tmp_path))])
    cfg = model.config
    assert not (cfg.weights or cfg.activations or cfg.kv), cfg
    assert not model.problems


def _bf16_only():
    return {"lm_head.weight": ("BF16", [8, 8])}


def test_fp8_kv_wins_over_an_int_kv_declared_elsewhere(tmp_path):
    """Two KV declarations that disagree: the FP8 one is reported (unknown is not clean)."""
    qc = {"kv_cache_scheme": {"type": "int", "num_bits": 8}, "kv_cache_quant_algo": "FP8"}
    scheme = Scheme("m", "", "", "", {"config.json": {"quantization_config": qc}}, _bf16_only())
    assert set(detections(scheme.build(tmp_path))) == {"fp8-kv-cache"}


def test_a_deep_config_is_read_to_a_bound(tmp_path):
    deep: dict = {"weights": {"type": "float", "num_bits": 8}}
    for _ in range(40):
        deep = {"nested": deep}
    scheme = Scheme("m", "", "", "", {"config.json": {"quantization_config": deep}}, None)
    (model,) = scan([str(scheme.build(tmp_path))])
    assert not model.problems and model.config.weights == set()


def test_u8_packed_weights_follow_an_integer_config(tmp_path):
    """U8 ``weight_packed`` is FP4 (NVFP4/MXFP4) unless the config says integer weights only."""
    files = _by_id("ct-w4afp8").files
    tensors = {**_bf16_only(), "m.up_proj.weight_packed": ("U8", [8, 4])}
    found = detections(Scheme("int4-u8", "", "", "", files, tensors).build(tmp_path))
    assert set(found) == {"fp8-activations"}
    found = detections(Scheme("no-config", "", "", "", {}, tensors).build(tmp_path))
    assert set(found) == {"fp4-weights"}


def test_a_config_with_many_distinct_values_stays_fast_and_short(tmp_path):
    """16 MB of per-layer entries, each with its own spelling: linear work, capped evidence."""
    layers = {f"l{i}": {"format": f"fmt-{i}", "quant_algo": f"ALGO_{i}"} for i in range(60_000)}
    layers["l0"] = {"quant_algo": "NVFP4"}
    qc = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": layers}
    scheme = Scheme("big", "", "", "", {"config.json": {"quantization_config": qc}}, None)
    (model,) = scan([str(scheme.build(tmp_path))])
    assert model.config.weights == {"fp4"}
    assert len(model.config.details) <= 64 and len(model.config.evidence()) < 2000


NEW_SCHEMES = [
    "gpt-oss-original",
    "gpt-oss-original-dtypes-only",
    "torchao-nvfp4",
    "torchao-mxfp4",
    "torchao-mxfp8",
    "torchao-fp8-act-int4",
    "torchao-int4",
    "deepseek-v4-expert-fp4",
]


@pytest.mark.parametrize("name", NEW_SCHEMES)
def test_schemes_once_unread_get_their_verdict_through_scan_model(tmp_path, name):
    import json

    from tests.support.cli import run_in_process

    scheme = _by_id(name)
    out = run_in_process(
        "scan-model", scheme.build(tmp_path), "--card", "K100_AI", "--format", "json"
    )
    assert out.code == (1 if scheme.expect else 0), out.err
    rules = {f["rule"] for f in json.loads(out.out)["findings"]}
    assert rules == set(scheme.expect)


def test_gpt_oss_repo_with_its_original_folder(tmp_path):
    """The hub layout (config.json mxfp4, *_blocks) and original/ (dtypes.json, *.blocks) in one
    repo: both read, one model."""
    root = _by_id("mxfp4-gpt-oss").build(tmp_path)
    original = _by_id("gpt-oss-original").build(root)
    original.rename(root / "original")
    (model,) = scan([str(root)])
    assert model.read["sidecar"] == (root / "original" / "dtypes.json").stat().st_size
    assert model.shards == 2
    assert {d.kind for d in detect(model)} == {"fp4-weights", "fp8-scales"}
