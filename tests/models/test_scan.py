from __future__ import annotations

import os
import shutil
from pathlib import Path

from modelkit import (
    DATA,
    deepseek_model,
    write_gguf,
    write_json,
    write_safetensors,
)

from dtkguard.models.scan import scan
from dtkguard.models.verdict import detect


def kinds(path: Path | str) -> dict[str, object]:
    (model,) = scan([str(path)])
    return {d.kind: d for d in detect(model)}


def test_deepseek_fp8_block_model(tmp_path):
    folder = deepseek_model(tmp_path / "DeepSeek-V3", layers=6, shards=3)
    (model,) = scan([str(folder)])
    assert model.shards == 3 and model.index is not None and model.index.scale_inv == 6 * 8
    found = {d.kind: d for d in detect(model)}
    assert set(found) == {"fp8-weights"}
    ev = found["fp8-weights"].evidence
    assert ev.startswith("config quant_method=fp8 fmt=e4m3 block [128,128]; 3 shards, ")
    assert "48 tensors F8_E4M3" in ev and "48 *_scale_inv" in ev
    assert "FineGrainedFP8Config(dequantize=True)" in found["fp8-weights"].remediation
    assert "BF16 variant" in found["fp8-weights"].remediation


def test_deepseek_converted_to_bf16_is_a_stale_config_not_fp8(tmp_path):
    folder = deepseek_model(tmp_path / "DeepSeek-V3-bf16", fp8=False, stale_config=True)
    found = kinds(folder)
    assert set(found) == {"stale-config"}
    assert "stale config" in found["stale-config"].message
    fix = found["stale-config"].remediation
    assert "Remove quantization_config from config.json" in fix and "as BF16" in fix


def test_clean_bf16_model_has_no_detection(tmp_path):
    assert kinds(deepseek_model(tmp_path / "bf16", fp8=False)) == {}


def test_compressed_tensors_fp8_dynamic(tmp_path):
    folder = tmp_path / "Llama-FP8-Dynamic"
    folder.mkdir()
    group = {
        "format": "float-quantized",
        "targets": ["Linear"],
        "weights": {
            "num_bits": 8,
            "type": "float",
            "strategy": "channel",
            "dynamic": False,
            "symmetric": True,
        },
        "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True},
    }
    write_json(
        folder / "config.json",
        {
            "model_type": "llama",
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "format": "float-quantized",
                "config_groups": {"group_0": group},
                "ignore": ["lm_head"],
                "quantization_status": "compressed",
            },
        },
    )
    write_safetensors(
        folder / "model.safetensors",
        {
            "model.layers.0.mlp.down_proj.weight": ("F8_E4M3", [64, 64]),
            "model.layers.0.mlp.down_proj.weight_scale": ("BF16", [64, 1]),
            "lm_head.weight": ("BF16", [64, 64]),
        },
    )
    found = kinds(folder)
    assert set(found) == {"fp8-weights"}
    assert "quant_method=compressed-tensors" in found["fp8-weights"].evidence
    assert "1 tensors F8_E4M3" in found["fp8-weights"].evidence


def test_modelopt_nvfp4_fp4_weights_and_fp8_scales(tmp_path):
    folder = tmp_path / "Llama-NVFP4"
    folder.mkdir()
    write_json(folder / "config.json", {"model_type": "llama"})
    write_json(
        folder / "hf_quant_config.json",
        {
            "producer": {"name": "modelopt", "version": "0.29.0"},
            "quantization": {
                "quant_algo": "NVFP4",
                "kv_cache_quant_algo": None,
                "group_size": 16,
                "exclude_modules": ["lm_head"],
            },
        },
    )
    write_safetensors(
        folder / "model.safetensors",
        {
            "model.layers.0.mlp.up_proj.weight": ("U8", [64, 32]),
            "model.layers.0.mlp.up_proj.weight_scale": ("F8_E4M3", [64, 4]),
            "model.layers.0.mlp.up_proj.weight_scale_2": ("F32", []),
            "model.layers.0.mlp.up_proj.input_scale": ("F32", []),
        },
    )
    found = kinds(folder)
    assert set(found) == {"fp4-weights", "fp8-scales"}
    assert "hf_quant_config.json quant_algo=NVFP4" in found["fp4-weights"].evidence
    assert "1 tensors U8 (packed FP4)" in found["fp4-weights"].evidence
    assert "1 tensors F8_E4M3" in found["fp8-scales"].evidence


def test_fp8_kv_cache_only(tmp_path):
    folder = tmp_path / "Llama-FP8-KV"
    folder.mkdir()
    write_json(
        folder / "config.json",
        {
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "format": "dense",
                "config_groups": {},
                "kv_cache_scheme": {
                    "num_bits": 8,
                    "type": "float",
                    "strategy": "tensor",
                    "dynamic": False,
                    "symmetric": True,
                },
            }
        },
    )
    write_safetensors(
        folder / "model.safetensors",
        {
            "model.layers.0.self_attn.k_proj.weight": ("BF16", [64, 64]),
            "model.layers.0.self_attn.k_scale": ("F32", []),
            "model.layers.0.self_attn.v_scale": ("F32", []),
        },
    )
    found = kinds(folder)
    assert set(found) == {"fp8-kv-cache"}
    assert not found["fp8-kv-cache"].weak
    assert "2 k/v scale tensors" in found["fp8-kv-cache"].evidence
    assert "--kv-cache-dtype auto" in found["fp8-kv-cache"].remediation


def test_kv_scales_without_declaration_are_a_weak_hint(tmp_path):
    folder = tmp_path / "kv-scales"
    folder.mkdir()
    write_safetensors(
        folder / "model.safetensors",
        {"l.weight": ("BF16", [8, 8]), "l.k_scale": ("F32", []), "l.v_scale": ("F32", [])},
    )
    found = kinds(folder)
    assert set(found) == {"fp8-kv-cache"} and found["fp8-kv-cache"].weak


def test_mxfp4_gpt_oss(tmp_path):
    folder = tmp_path / "gpt-oss-20b"
    folder.mkdir()
    write_json(
        folder / "config.json",
        {
            "model_type": "gpt_oss",
            "quantization_config": {
                "quant_method": "mxfp4",
                "modules_to_not_convert": ["model.layers.*.self_attn"],
            },
        },
    )
    write_safetensors(
        folder / "model.safetensors",
        {
            "model.layers.0.mlp.experts.gate_up_proj_blocks": ("U8", [32, 90, 16]),
            "model.layers.0.mlp.experts.gate_up_proj_scales": ("U8", [32, 90]),
            "model.layers.0.self_attn.q_proj.weight": ("BF16", [64, 64]),
        },
    )
    found = kinds(folder)
    # the U8 *_scales are E8M0 exponents, as F8_E8M0 scales are
    assert set(found) == {"fp4-weights", "fp8-scales"}
    assert "1 tensors U8 (E8M0 scales)" in found["fp8-scales"].evidence
    assert "Mxfp4Config(dequantize=True)" in found["fp4-weights"].remediation
    assert "quant_method=mxfp4" in found["fp4-weights"].evidence


def test_e8m0_scales_and_f4_values(tmp_path):
    path = write_safetensors(
        tmp_path / "mx.safetensors", {"w.weight": ("F4", [64]), "w.weight_scale": ("F8_E8M0", [2])}
    )
    assert set(kinds(path)) == {"fp4-weights", "fp8-scales"}


def test_torch_pickles_with_float8_globals(tmp_path):
    for name in ("fp8_state_dict.pt", "fp8_legacy.pt"):
        folder = tmp_path / name.replace(".", "_")
        folder.mkdir()
        shutil.copy(DATA / "models" / name, folder / "pytorch_model.bin")
        (model,) = scan([str(folder)])
        assert model.pickles == 1 and not model.problems
        assert model.pickle_globals == {"torch.float8_e4m3fn": 1}
        found = {d.kind: d for d in detect(model)}
        assert set(found) == {"fp8-weights"}
        assert "pickle global torch.float8_e4m3fn" in found["fp8-weights"].evidence


def test_pickle_with_stack_global_protocol_4(tmp_path):
    import pickletools

    # protocol 4 names globals with two strings and STACK_GLOBAL; the module string is memoised
    ops = (
        b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00"
        b"\x8c\x05torch\x94\x8c\x0bfloat8_e5m2\x94\x93\x94"
        b"h\x00\x8c\x0cFloatStorage\x94\x93\x94\x86\x94."
    )
    with open(os.devnull, "w") as sink:
        pickletools.dis(ops, out=sink)  # a valid pickle
    (tmp_path / "m.pt").write_bytes(ops)
    (model,) = scan([str(tmp_path / "m.pt")])
    assert model.pickle_globals == {"torch.float8_e5m2": 1}


def test_gguf_mxfp4(tmp_path):
    path = write_gguf(
        tmp_path / "gpt-oss-20b-mxfp4.gguf",
        [
            ("blk.0.ffn_gate_exps.weight", [4, 64, 64], 39),
            ("blk.0.attn_q.weight", [64, 64], 30),
            ("output.weight", [128, 64], 8),
        ],
    )
    (model,) = scan([str(path)])
    assert model.gguf_types == {"MXFP4": 1, "BF16": 1, "Q8_0": 1}
    found = {d.kind: d for d in detect(model)}
    assert set(found) == {"fp4-weights"} and "1 tensors MXFP4" in found["fp4-weights"].evidence
    clean = write_gguf(tmp_path / "q8.gguf", [("output.weight", [64, 64], 8)])
    assert kinds(clean) == {}


def test_hf_cache_repo_and_snapshot(tmp_path):
    repo = tmp_path / "hub" / "models--deepseek-ai--DeepSeek-V3"
    source = deepseek_model(tmp_path / "src", layers=2, shards=1)
    blobs = repo / "blobs"
    snap = repo / "snapshots" / "0123456789abcdef0123"
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123456789abcdef0123")
    for i, f in enumerate(sorted(source.iterdir())):
        shutil.copy(f, blobs / f"sha{i}")
        os.symlink(f"../../blobs/sha{i}", snap / f.name)
    for target in (repo, snap, tmp_path / "hub"):
        (model,) = scan([str(target)])
        assert model.name == "deepseek-ai/DeepSeek-V3@0123456789ab"
        assert model.shards == 1 and model.config.weights == {"fp8"}
        assert "fp8-weights" in {d.kind for d in detect(model)}


def test_parent_folder_finds_every_model(tmp_path):
    deepseek_model(tmp_path / "models" / "a", layers=1, shards=1)
    deepseek_model(tmp_path / "models" / "b", layers=1, shards=1, fp8=False)
    scans = scan([str(tmp_path / "models")])
    assert sorted(s.name for s in scans) == ["a", "b"]
