"""One fixture per config field that can declare FP8/FP4 (docs/fp8.md lists them by producer).

Each `Scheme` is a model folder: its config files (shaped after published checkpoints and the
producers' own export code; the model named in ``source``) and the tensors the producer writes
(names and dtypes; tiny shapes), written by the real writers in `modelkit`. ``expect`` is the set
of detections `dtkguard.modelscan.detect.detect` must make.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from modelkit import DEEPSEEK_FP8_QC, write_json, write_safetensors

Tensors = dict[str, tuple[str, list[int]]]
L0 = "model.layers.0"


@dataclass(frozen=True)
class Scheme:
    id: str
    producer: str
    field: str
    source: str
    files: dict[str, dict] = field(default_factory=dict)
    tensors: Tensors | None = None
    expect: frozenset[str] = frozenset()
    #: write the index but not the shards (evidence from tensor names only)
    index_only: bool = False

    def build(self, root: Path) -> Path:
        folder = root / self.id
        folder.mkdir(parents=True)
        for name, data in self.files.items():
            write_json(folder / name, data)
        if self.tensors is not None:
            if self.index_only:
                name = "model-00001-of-00001.safetensors"
                write_json(
                    folder / "model.safetensors.index.json",
                    {"metadata": {}, "weight_map": dict.fromkeys(self.tensors, name)},
                )
            else:
                write_safetensors(folder / "model.safetensors", self.tensors)
        return folder


def _linear(prefix: str, weight: str, **extra: str) -> Tensors:
    out: Tensors = {f"{prefix}.weight": (weight, [32, 32])}
    shapes = {"weight_scale_inv": [1, 1], "weight_scale": [32, 1], "input_scale": []}
    for leaf, dtype in extra.items():
        out[f"{prefix}.{leaf}"] = (dtype, shapes.get(leaf, [32, 2]))
    return out


def _bf16() -> Tensors:
    return {
        "model.embed_tokens.weight": ("BF16", [64, 32]),
        f"{L0}.input_layernorm.weight": ("BF16", [32]),
        "lm_head.weight": ("BF16", [64, 32]),
    }


def _ct_group(weights: dict, acts: dict | None = None, fmt: str | None = None) -> dict:
    group = {"targets": ["Linear"], "weights": weights, "input_activations": acts}
    if fmt:
        group["format"] = fmt
    return group


def _ct(groups: dict, fmt: str, kv: dict | None = None, key: str = "quantization_config") -> dict:
    qc = {
        "quant_method": "compressed-tensors",
        "format": fmt,
        "config_groups": groups,
        "ignore": ["lm_head"],
        "quantization_status": "compressed",
        "kv_cache_scheme": kv,
        "version": "0.11.0",
    }
    return {"config.json": {"model_type": "llama", key: qc}}


FP8_W = {"num_bits": 8, "type": "float", "strategy": "channel", "dynamic": False, "symmetric": True}
FP8_A = {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True, "symmetric": True}
INT4_W = {
    "num_bits": 4,
    "type": "int",
    "strategy": "group",
    "group_size": 128,
    "dynamic": False,
    "symmetric": True,
}
INT8_W = {**INT4_W, "num_bits": 8, "strategy": "channel", "group_size": None}
INT8_A = {**FP8_A, "type": "int"}
FP4_W = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}
MX4_W = {"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32}
KV_FP8 = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True}
KV_INT8 = {**KV_FP8, "type": "int"}

CT_PACKED = {"weight_packed": "I32", "weight_scale": "BF16", "weight_shape": "I64"}
KV_SCALES: Tensors = {
    f"{L0}.self_attn.k_scale": ("F32", []),
    f"{L0}.self_attn.v_scale": ("F32", []),
}


def _packed(prefix: str, **leaves: str) -> Tensors:
    out: Tensors = {}
    for leaf, dtype in leaves.items():
        shape = [2] if leaf == "weight_shape" else [] if "global" in leaf else [32, 16]
        out[f"{prefix}.{leaf}"] = (dtype, shape)
    return out


def _modelopt(qc: dict, config: dict | None = None) -> dict:
    return {
        "config.json": config or {"model_type": "llama"},
        "hf_quant_config.json": {
            "producer": {"name": "modelopt", "version": "0.33.0"},
            "quantization": qc,
        },
    }


NVFP4_TENSORS: Tensors = {
    f"{L0}.mlp.up_proj.weight": ("U8", [32, 16]),
    f"{L0}.mlp.up_proj.weight_scale": ("F8_E4M3", [32, 2]),
    f"{L0}.mlp.up_proj.weight_scale_2": ("F32", []),
    f"{L0}.mlp.up_proj.input_scale": ("F32", []),
}
AWQ_INT4_TENSORS: Tensors = {
    f"{L0}.mlp.up_proj.weight": ("U8", [32, 16]),  # two int4 a byte
    f"{L0}.mlp.up_proj.weight_scale": ("F16", [32, 1]),
    f"{L0}.mlp.up_proj.pre_quant_scale": ("F16", [32]),
    f"{L0}.mlp.up_proj.input_scale": ("F32", []),
}


def _quark(global_cfg: dict, layers: dict | None = None, kv_group: list | None = None) -> dict:
    return {
        "config.json": {
            "model_type": "llama",
            "quantization_config": {
                "quant_method": "quark",
                "global_quant_config": global_cfg,
                "layer_quant_config": layers or {},
                "layer_type_quant_config": {},
                "exclude": ["lm_head"],
                "export": {
                    "kv_cache_group": kv_group or [],
                    "pack_method": "reorder",
                    "weight_format": "real_quantized",
                },
            },
        }
    }


def _q(dtype: str, qscheme: str = "per_tensor", **kw: object) -> dict:
    return {"dtype": dtype, "qscheme": qscheme, "is_dynamic": False, "symmetric": True, **kw}


def _autoround(**qc: object) -> dict:
    block = {
        "quant_method": "auto-round",
        "group_size": 128,
        "sym": True,
        "iters": 200,
        "autoround_version": "0.8.0",
        "block_name_to_quantize": "model.layers",
        **qc,
    }
    return {"config.json": {"model_type": "qwen3", "quantization_config": block}}


GPT_OSS_DTYPES = {
    "embedding.weight": "BF16",
    "block.0.attn.norm.scale": "BF16",
    "block.0.attn.qkv.weight": "BF16",
    "block.0.attn.sinks": "BF16",
    "block.0.mlp.gate.weight": "BF16",
    "block.0.mlp.mlp1_weight.blocks": "FP4",
    "block.0.mlp.mlp1_weight.scales": "UE8",
    "block.0.mlp.mlp1_bias": "BF16",
    "block.0.mlp.mlp2_weight.blocks": "FP4",
    "block.0.mlp.mlp2_weight.scales": "UE8",
    "norm.scale": "BF16",
    "unembedding.weight": "BF16",
}


def _dtype(name: str) -> dict:
    """A torch dtype as torchao's config encoder writes it."""
    return {"_type": "torch.dtype", "_data": name}


def _torchao(config_type: str, **data: object) -> dict:
    """config.json of a transformers TorchAoConfig (``quant_type`` holds the torchao config)."""
    qc = {
        "quant_method": "torchao",
        "quant_type": {"default": {"_type": config_type, "_version": 2, "_data": data}},
        "modules_to_not_convert": None,
        "include_input_output_embeddings": False,
        "untie_embedding_weights": False,
    }
    return {"config.json": {"model_type": "llama", "quantization_config": qc}}


SCHEMES: tuple[Scheme, ...] = (
    # ---------------- transformers / DeepSeek / vLLM Fp8Config ----------------
    Scheme(
        "fp8-block",
        "transformers FineGrainedFP8Config, vLLM Fp8Config",
        "quant_method=fp8, weight_block_size, fmt",
        "deepseek-ai/DeepSeek-V3 config.json",
        {"config.json": {"model_type": "deepseek_v3", "quantization_config": DEEPSEEK_FP8_QC}},
        {**_bf16(), **_linear(f"{L0}.mlp.down_proj", "F8_E4M3", weight_scale_inv="F32")},
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "fp8-block-ue8m0",
        "DeepSeek V3.1 / vLLM",
        "scale_fmt=ue8m0 (F8_E8M0 block scales)",
        "deepseek-ai/DeepSeek-V3.1 config.json",
        {
            "config.json": {
                "model_type": "deepseek_v3",
                "quantization_config": {**DEEPSEEK_FP8_QC, "scale_fmt": "ue8m0"},
            }
        },
        {**_bf16(), **_linear(f"{L0}.mlp.down_proj", "F8_E4M3", weight_scale_inv="F8_E8M0")},
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "fbgemm-fp8",
        "transformers FbgemmFp8Config",
        "quant_method=fbgemm_fp8",
        "meta-llama/Llama-3.1-405B-Instruct-FP8 config.json",
        {
            "config.json": {
                "model_type": "llama",
                "quantization_config": {
                    "activation_scale_ub": 1200.0,
                    "modules_to_not_convert": [f"{L0}.mlp.down_proj", "lm_head"],
                    "quant_method": "fbgemm_fp8",
                },
            }
        },
        {**_bf16(), **_linear(f"{L0}.mlp.up_proj", "F8_E4M3", weight_scale="F32")},
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "torch-dtype-float8",
        "transformers (single-file exports)",
        "torch_dtype / dtype = float8_e4m3fn",
        "diffusion single-file FP8 exports",
        {"config.json": {"model_type": "flux", "torch_dtype": "float8_e4m3fn"}},
        {"transformer.blocks.0.attn.to_q.weight": ("F8_E4M3", [32, 32])},
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "torchao-float8",
        "transformers TorchAoConfig",
        "quant_type.*._type = Float8*Config",
        "transformers TorchAoConfig.to_dict",
        {
            "config.json": {
                "model_type": "llama",
                "quantization_config": {
                    "quant_method": "torchao",
                    "quant_type": {
                        "default": {
                            "_type": "Float8DynamicActivationFloat8WeightConfig",
                            "_version": 2,
                            "_data": {"granularity": [{"_type": "PerRow", "_data": {}}]},
                        }
                    },
                },
            }
        },
        None,
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "quanto-float8",
        "transformers QuantoConfig (optimum-quanto)",
        "weights: float8 / activations: float8 (strings)",
        "transformers QuantoConfig.to_dict",
        {
            "config.json": {
                "model_type": "llama",
                "quantization_config": {
                    "quant_method": "quanto",
                    "weights": "float8",
                    "activations": None,
                    "modules_to_not_convert": ["lm_head"],
                },
            }
        },
        {
            **_bf16(),
            f"{L0}.mlp.up_proj.weight._data": ("F8_E4M3", [32, 32]),
            f"{L0}.mlp.up_proj.weight._scale": ("BF16", [32, 1]),
        },
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "mxfp4-gpt-oss",
        "transformers Mxfp4Config, vLLM mxfp4",
        "quant_method=mxfp4 (U8 *_blocks, U8 E8M0 *_scales)",
        "openai/gpt-oss-20b config.json",
        {
            "config.json": {
                "model_type": "gpt_oss",
                "quantization_config": {
                    "modules_to_not_convert": [
                        "model.layers.*.self_attn",
                        "model.layers.*.mlp.router",
                        "model.embed_tokens",
                        "lm_head",
                    ],
                    "quant_method": "mxfp4",
                },
            }
        },
        {
            **_bf16(),
            f"{L0}.mlp.experts.gate_up_proj_blocks": ("U8", [4, 64, 2, 16]),
            f"{L0}.mlp.experts.gate_up_proj_scales": ("U8", [4, 64, 2]),
        },
        frozenset({"fp4-weights", "fp8-scales"}),
    ),
    Scheme(
        "fp-quant",
        "transformers FPQuantConfig, vLLM fp_quant",
        "quant_method=fp_quant, forward_dtype=mxfp4",
        "transformers FPQuantConfig defaults",
        {
            "config.json": {
                "model_type": "qwen3",
                "quantization_config": {
                    "quant_method": "fp_quant",
                    "forward_dtype": "mxfp4",
                    "forward_method": "abs_max",
                    "hadamard_group_size": 32,
                    "modules_to_not_convert": ["lm_head"],
                },
            }
        },
        None,
        frozenset({"fp4-weights"}),
    ),
    Scheme(
        "bnb-fp4-is-not-fp4",
        "transformers BitsAndBytesConfig",
        "bnb_4bit_quant_type=fp4 (software 4-bit, not FP4 hardware)",
        "transformers BitsAndBytesConfig.to_dict",
        {
            "config.json": {
                "model_type": "llama",
                "quantization_config": {
                    "quant_method": "bitsandbytes",
                    "load_in_4bit": True,
                    "bnb_4bit_quant_type": "fp4",
                    "bnb_4bit_compute_dtype": "bfloat16",
                    "bnb_4bit_use_double_quant": False,
                },
            }
        },
        {
            **_bf16(),
            f"{L0}.mlp.up_proj.weight": ("U8", [512, 1]),
            f"{L0}.mlp.up_proj.weight.absmax": ("F32", [16]),
            f"{L0}.mlp.up_proj.weight.quant_map": ("F32", [16]),
            f"{L0}.mlp.up_proj.weight.quant_state.bitsandbytes__fp4": ("U8", [64]),
        },
        frozenset(),
    ),
    # ---------------- compressed-tensors / llm-compressor ----------------
    Scheme(
        "ct-fp8-dynamic",
        "compressed-tensors (preset FP8_DYNAMIC)",
        "config_groups.*.weights type=float num_bits=8, format=float-quantized",
        "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic config.json",
        _ct({"group_0": _ct_group(FP8_W, FP8_A)}, "float-quantized"),
        {**_bf16(), **_linear(f"{L0}.mlp.up_proj", "F8_E4M3", weight_scale="BF16")},
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "ct-compression-config",
        "compressed-tensors (older key), Hygon slimquant",
        "compression_config.config_groups.*.weights type=float",
        "older compressed-tensors exports",
        _ct({"group_0": _ct_group(FP8_W, FP8_A)}, "float-quantized", key="compression_config"),
        {**_bf16(), **_linear(f"{L0}.mlp.up_proj", "F8_E4M3", weight_scale="BF16")},
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "ct-w4afp8",
        "compressed-tensors (preset W4AFP8)",
        "config_groups.*.input_activations type=float num_bits=8 over int4 weights",
        "llm-compressor W4AFP8 preset (pack-quantized int4, FP8 dynamic activations)",
        _ct({"group_0": _ct_group(INT4_W, FP8_A, "pack-quantized")}, "pack-quantized"),
        {**_bf16(), **_packed(f"{L0}.mlp.up_proj", **CT_PACKED)},
        frozenset({"fp8-activations"}),
    ),
    Scheme(
        "ct-w4afp8-dequantized",
        "compressed-tensors",
        "stale config: W4AFP8 declared, plain BF16 tensors",
        "a W4AFP8 model dequantized to BF16 with the config left behind",
        _ct({"group_0": _ct_group(INT4_W, FP8_A, "pack-quantized")}, "pack-quantized"),
        {**_bf16(), f"{L0}.mlp.up_proj.weight": ("BF16", [32, 32])},
        frozenset({"stale-config"}),
    ),
    Scheme(
        "ct-w8a8-int8",
        "compressed-tensors (preset W8A8 INT8)",
        "integer weights and activations: not FP8",
        "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8 config.json",
        _ct({"group_0": _ct_group(INT8_W, INT8_A, "int-quantized")}, "int-quantized"),
        {**_bf16(), **_linear(f"{L0}.mlp.up_proj", "I8", weight_scale="BF16")},
        frozenset(),
    ),
    Scheme(
        "ct-nvfp4",
        "compressed-tensors (preset NVFP4)",
        "format=nvfp4-pack-quantized, weights type=float num_bits=4",
        "RedHatAI/Qwen3-8B-NVFP4 config.json",
        _ct({"group_0": _ct_group(FP4_W, FP4_W, "nvfp4-pack-quantized")}, "nvfp4-pack-quantized"),
        {
            **_bf16(),
            **_packed(
                f"{L0}.mlp.up_proj",
                weight_packed="U8",
                weight_scale="F8_E4M3",
                weight_global_scale="F32",
                input_global_scale="F32",
            ),
        },
        frozenset({"fp4-weights", "fp8-scales"}),
    ),
    Scheme(
        "ct-mxfp4",
        "compressed-tensors (preset MXFP4)",
        "format=mxfp4-pack-quantized (U8 E8M0 weight_scale)",
        "compressed-tensors MXFP4 preset",
        _ct({"group_0": _ct_group(MX4_W, None, "mxfp4-pack-quantized")}, "mxfp4-pack-quantized"),
        {**_bf16(), **_packed(f"{L0}.mlp.up_proj", weight_packed="U8", weight_scale="U8")},
        frozenset({"fp4-weights", "fp8-scales"}),
    ),
    Scheme(
        "ct-kv-fp8",
        "compressed-tensors / llm-compressor",
        "kv_cache_scheme type=float num_bits=8",
        "llm-compressor examples/quantization_kv_cache",
        _ct({"group_0": _ct_group(FP8_W, FP8_A)}, "float-quantized", kv=KV_FP8),
        {
            **_bf16(),
            **_linear(f"{L0}.mlp.up_proj", "F8_E4M3", weight_scale="BF16"),
            **KV_SCALES,
        },
        frozenset({"fp8-weights", "fp8-kv-cache"}),
    ),
    Scheme(
        "ct-kv-int8",
        "compressed-tensors",
        "kv_cache_scheme type=int: k/v scales are not an FP8 KV cache",
        "compressed-tensors INT8 KV cache",
        _ct({"group_0": _ct_group(INT8_W, INT8_A, "int-quantized")}, "int-quantized", KV_INT8),
        {**_bf16(), **_linear(f"{L0}.mlp.up_proj", "I8", weight_scale="BF16"), **KV_SCALES},
        frozenset(),
    ),
    # ---------------- ModelOpt ----------------
    Scheme(
        "modelopt-fp8",
        "ModelOpt hf_quant_config.json",
        "quantization.quant_algo=FP8, kv_cache_quant_algo=FP8",
        "nvidia/Llama-3.1-8B-Instruct-FP8 hf_quant_config.json",
        _modelopt({"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["x"]}),
        {
            **_bf16(),
            **_linear(f"{L0}.mlp.up_proj", "F8_E4M3", weight_scale="F32", input_scale="F32"),
            **KV_SCALES,
        },
        frozenset({"fp8-weights", "fp8-kv-cache"}),
    ),
    Scheme(
        "modelopt-nvfp4",
        "ModelOpt hf_quant_config.json",
        "quant_algo=NVFP4 (U8 weight, F8_E4M3 weight_scale)",
        "nvidia/DeepSeek-R1-FP4 hf_quant_config.json",
        _modelopt({"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16}),
        {**_bf16(), **NVFP4_TENSORS},
        frozenset({"fp4-weights", "fp8-scales"}),
    ),
    Scheme(
        "modelopt-w4a8-awq",
        "ModelOpt hf_quant_config.json",
        "quant_algo=W4A8_AWQ (int4 weights, FP8 activations)",
        "ModelOpt export (quant_algo W4A8_AWQ, group_size 128, pre_quant_scale)",
        _modelopt(
            {
                "quant_algo": "W4A8_AWQ",
                "group_size": 128,
                "has_zero_point": False,
                "pre_quant_scale": True,
                "kv_cache_quant_algo": None,
                "exclude_modules": ["lm_head"],
            }
        ),
        {**_bf16(), **AWQ_INT4_TENSORS},
        frozenset({"fp8-activations"}),
    ),
    Scheme(
        "modelopt-int4-awq",
        "ModelOpt hf_quant_config.json",
        "quant_algo=W4A16_AWQ: integer only, not FP8",
        "ModelOpt export (quant_algo W4A16_AWQ)",
        _modelopt({"quant_algo": "W4A16_AWQ", "group_size": 128, "kv_cache_quant_algo": None}),
        {**_bf16(), **AWQ_INT4_TENSORS},
        frozenset(),
    ),
    Scheme(
        "modelopt-mixed-hf",
        "ModelOpt hf_quant_config.json",
        "quant_algo=MIXED_PRECISION, quantized_layers.*.quant_algo (FP8 + NVFP4)",
        "nvidia/Qwen3.6-35B-A3B-NVFP4 hf_quant_config.json (shape)",
        _modelopt(
            {
                "quant_algo": "MIXED_PRECISION",
                "kv_cache_quant_algo": "FP8",
                "exclude_modules": ["lm_head"],
                "quantized_layers": {
                    f"{L0}.self_attn.q_proj": {"quant_algo": "FP8"},
                    f"{L0}.mlp.up_proj": {"quant_algo": "NVFP4", "group_size": 16},
                },
            }
        ),
        {
            **_bf16(),
            **_linear(f"{L0}.self_attn.q_proj", "F8_E4M3", weight_scale="F32", input_scale="F32"),
            **NVFP4_TENSORS,
            **KV_SCALES,
        },
        frozenset({"fp8-weights", "fp4-weights", "fp8-kv-cache"}),
    ),
    Scheme(
        "modelopt-mixed-config-groups",
        "ModelOpt config.json quantization_config",
        "quant_method=modelopt, quant_algo=MIXED_PRECISION, config_groups.*.quant_algo",
        "nvidia/Qwen3.6-27B-NVFP4 config.json (shape)",
        {
            "config.json": {
                "model_type": "qwen3",
                "quantization_config": {
                    "quant_method": "modelopt",
                    "quant_algo": "MIXED_PRECISION",
                    "producer": {"name": "modelopt", "version": "0.37.0"},
                    "config_groups": {
                        "group_0": {"quant_algo": "FP8", "targets": [f"{L0}.self_attn.q_proj"]},
                        "group_1": {
                            "quant_algo": "W4A16_NVFP4",
                            "group_size": 16,
                            "targets": [f"{L0}.mlp.up_proj"],
                        },
                    },
                    "ignore": ["lm_head"],
                },
            }
        },
        None,
        frozenset({"fp8-weights", "fp4-weights"}),
    ),
    Scheme(
        "modelopt-kv-int8",
        "ModelOpt hf_quant_config.json",
        "kv_cache_quant_algo=INT8: k/v scales are not an FP8 KV cache",
        "ModelOpt INT8 KV cache export",
        _modelopt({"quant_algo": "W4A16_AWQ", "kv_cache_quant_algo": "INT8", "group_size": 128}),
        {**_bf16(), **AWQ_INT4_TENSORS, **KV_SCALES},
        frozenset(),
    ),
    # ---------------- vLLM / SGLang methods ----------------
    Scheme(
        "w4afp8",
        "vLLM / SGLang W4AFp8Config",
        "quant_method=w4afp8",
        "SGLang W4AFp8Config (int4 MoE experts, FP8 activations)",
        {
            "config.json": {
                "model_type": "deepseek_v3",
                "quantization_config": {
                    "quant_method": "w4afp8",
                    "activation_scheme": "dynamic",
                    "moe_activation_scheme": "static",
                    "weight_block_size": [128, 128],
                    "group_size": 128,
                },
            }
        },
        {
            **_bf16(),
            f"{L0}.mlp.experts.0.up_proj.weight": ("I8", [32, 16]),
            f"{L0}.mlp.experts.0.up_proj.weight_scale_inv": ("F32", [32, 1]),
            f"{L0}.mlp.experts.0.up_proj.input_scale": ("F32", []),
        },
        frozenset({"fp8-activations"}),
    ),
    Scheme(
        "ptpc-fp8-online",
        "vLLM PTPCFp8Config",
        "quant_method=ptpc_fp8 over BF16 tensors: FP8 at load, not a stale config",
        "vLLM ptpc_fp8.py (per-token-per-channel dynamic FP8 on ROCm)",
        {"config.json": {"quantization_config": {"quant_method": "ptpc_fp8"}}},
        {**_bf16(), f"{L0}.mlp.up_proj.weight": ("BF16", [32, 32])},
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "deepspeedfp",
        "vLLM DeepSpeedFPConfig",
        "quant_method=deepspeedfp, bits=8 (FP8) or 6 (FP6)",
        "vLLM deepspeedfp.py (BF16 weights quantised at load)",
        {
            "config.json": {
                "model_type": "llama",
                "quantization_config": {"quant_method": "deepspeedfp", "bits": 6},
            }
        },
        {**_bf16(), f"{L0}.mlp.up_proj.weight": ("BF16", [32, 32])},
        frozenset({"fp4-weights"}),
    ),
    Scheme(
        "sglang-w8a8-fp8",
        "SGLang W8A8Fp8Config",
        "quant_method=w8a8_fp8",
        "SGLang w8a8_fp8 checkpoints",
        {"config.json": {"quantization_config": {"quant_method": "w8a8_fp8"}}},
        {**_bf16(), **_linear(f"{L0}.mlp.up_proj", "F8_E4M3", weight_scale="F32")},
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "lmdeploy-smooth-quant-fp8",
        "LMDeploy lite smooth_quant",
        "quant_dtype=float8_e4m3fn",
        "lmdeploy lite smooth_quant --quant-dtype fp8",
        {
            "config.json": {
                "model_type": "qwen2",
                "quantization_config": {
                    "quant_method": "smooth_quant",
                    "quant_dtype": "float8_e4m3fn",
                },
            }
        },
        {**_bf16(), **_linear(f"{L0}.mlp.up_proj", "F8_E4M3", weight_scale="F32")},
        frozenset({"fp8-weights"}),
    ),
    # ---------------- AMD Quark ----------------
    Scheme(
        "quark-fp8",
        "AMD Quark (vLLM/SGLang QuarkConfig)",
        "global_quant_config.weight.dtype / input_tensors.dtype = fp8_e4m3",
        "amd/Llama-3.1-8B-Instruct-FP8-KV config.json",
        _quark({"weight": _q("fp8_e4m3"), "input_tensors": _q("fp8_e4m3"), "output_tensors": None}),
        {
            **_bf16(),
            **_linear(f"{L0}.mlp.up_proj", "F8_E4M3", weight_scale="F32", input_scale="F32"),
        },
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "quark-kv-cache-group",
        "AMD Quark",
        "export.kv_cache_group + layer_quant_config.*.output_tensors (k/v_proj.output_scale)",
        "amd/Llama-3.1-8B-Instruct-FP8-KV config.json",
        _quark(
            {"weight": _q("int8", "per_channel", ch_axis=0), "input_tensors": _q("int8")},
            {
                "*k_proj": {"weight": _q("int8", "per_channel"), "output_tensors": _q("fp8_e4m3")},
                "*v_proj": {"weight": _q("int8", "per_channel"), "output_tensors": _q("fp8_e4m3")},
            },
            kv_group=["*k_proj", "*v_proj"],
        ),
        {
            **_bf16(),
            **_linear(f"{L0}.self_attn.k_proj", "I8", weight_scale="F32"),
            f"{L0}.self_attn.k_proj.output_scale": ("F32", []),
            f"{L0}.self_attn.v_proj.output_scale": ("F32", []),
        },
        frozenset({"fp8-kv-cache"}),
    ),
    Scheme(
        "quark-w4a8-mxfp4-fp8",
        "AMD Quark (vLLM QuarkW4A8_MXFP4_FP8)",
        "weight.dtype=fp4 scale_format=e8m0, input_tensors.dtype=fp8_e4m3",
        "vLLM QuarkConfig._is_w4a8_mxfp4_fp8",
        _quark(
            {
                "weight": _q("fp4", "per_group", group_size=32, scale_format="e8m0"),
                "input_tensors": _q("fp8_e4m3"),
            }
        ),
        {
            **_bf16(),
            f"{L0}.mlp.up_proj.weight": ("U8", [32, 16]),
            f"{L0}.mlp.up_proj.weight_scale": ("U8", [32, 1]),
            f"{L0}.mlp.up_proj.input_scale": ("F32", []),
        },
        frozenset({"fp4-weights", "fp8-scales"}),
    ),
    # ---------------- Intel auto-round ----------------
    Scheme(
        "autoround-nvfp4",
        "auto-round (scheme NVFP4)",
        "data_type=nv_fp bits=4, act_data_type=nv_fp4_with_static_gs",
        "auto-round NVFP4 scheme, llm_compressor packing",
        _autoround(
            bits=4,
            data_type="nv_fp",
            act_bits=4,
            act_data_type="nv_fp4_with_static_gs",
            group_size=16,
            packing_format="auto_round:llm_compressor",
        ),
        {
            **_bf16(),
            **_packed(
                f"{L0}.mlp.up_proj",
                weight_packed="U8",
                weight_scale="F8_E4M3",
                weight_global_scale="F32",
            ),
        },
        frozenset({"fp4-weights", "fp8-scales"}),
    ),
    Scheme(
        "autoround-mxfp8",
        "auto-round (scheme MXFP8)",
        "data_type=mx_fp bits=8 (U8 E8M0 weight_scale)",
        "auto-round MXFP8 scheme",
        _autoround(bits=8, data_type="mx_fp", act_bits=8, act_data_type="mx_fp", group_size=32),
        {**_bf16(), **_linear(f"{L0}.mlp.up_proj", "F8_E4M3", weight_scale="U8")},
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "autoround-fp8-static",
        "auto-round (scheme FP8_STATIC)",
        "data_type=fp bits=8, act_data_type=fp act_bits=8",
        "auto-round FP8_STATIC scheme",
        _autoround(bits=8, data_type="fp", act_bits=8, act_data_type="fp", group_size=-1),
        {
            **_bf16(),
            **_linear(f"{L0}.mlp.up_proj", "F8_E4M3", weight_scale="F32", input_scale="F32"),
        },
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "autoround-sidecar-mxfp4",
        "auto-round (model-free export)",
        "quantization_config.json sidecar: data_type=mx_fp bits=4",
        "auto-round compressors/model_free.py writes quantization_config.json",
        {
            "config.json": {"model_type": "qwen3"},
            "quantization_config.json": {
                "quant_method": "auto-round",
                "bits": 4,
                "data_type": "mx_fp",
                "act_bits": 4,
                "act_data_type": "mx_fp_rceil",
                "group_size": 32,
            },
        },
        None,
        frozenset({"fp4-weights"}),
    ),
    Scheme(
        "autoround-w4a16-int",
        "auto-round (scheme W4A16)",
        "data_type=int: not FP8",
        "Intel auto-round W4A16 exports",
        _autoround(bits=4, data_type="int", act_bits=16, packing_format="auto_round:auto_gptq"),
        {
            **_bf16(),
            f"{L0}.mlp.up_proj.qweight": ("I32", [4, 32]),
            f"{L0}.mlp.up_proj.qzeros": ("I32", [1, 4]),
            f"{L0}.mlp.up_proj.scales": ("F16", [1, 32]),
        },
        frozenset(),
    ),
    Scheme(
        "autoround-extra-config",
        "auto-round",
        "extra_config.<layer>.data_type=nv_fp (per-layer override of an int scheme)",
        "auto-round export_to_autoround extra_config",
        _autoround(
            bits=4,
            data_type="int",
            act_bits=16,
            extra_config={f"{L0}.mlp.up_proj": {"bits": 4, "data_type": "nv_fp", "act_bits": 16}},
        ),
        None,
        frozenset({"fp4-weights"}),
    ),
    # ---------------- gpt-oss original/, torchao beyond Float8, DeepSeek-V4 ----------------
    Scheme(
        "gpt-oss-original",
        "OpenAI gpt-oss reference layout",
        "original/dtypes.json FP4/UE8; U8 *.blocks / *.scales tensors",
        "openai/gpt-oss-20b original/ (config.json, dtypes.json, model.safetensors)",
        {
            "config.json": {
                "num_hidden_layers": 24,
                "num_experts": 32,
                "experts_per_token": 4,
                "vocab_size": 201088,
                "hidden_size": 2880,
                "intermediate_size": 2880,
                "head_dim": 64,
                "num_attention_heads": 64,
                "num_key_value_heads": 8,
                "sliding_window": 128,
                "rope_theta": 150000,
            },
            "dtypes.json": GPT_OSS_DTYPES,
        },
        {
            "embedding.weight": ("BF16", [64, 32]),
            "block.0.attn.qkv.weight": ("BF16", [32, 32]),
            "block.0.mlp.mlp1_weight.blocks": ("U8", [4, 64, 2, 16]),
            "block.0.mlp.mlp1_weight.scales": ("U8", [4, 64, 2]),
            "block.0.mlp.mlp2_weight.blocks": ("U8", [4, 32, 2, 16]),
            "block.0.mlp.mlp2_weight.scales": ("U8", [4, 32, 2]),
            "unembedding.weight": ("BF16", [64, 32]),
        },
        frozenset({"fp4-weights", "fp8-scales"}),
    ),
    Scheme(
        "gpt-oss-original-dtypes-only",
        "OpenAI gpt-oss reference layout",
        "original/dtypes.json alone (weights not downloaded): FP4 declared",
        "openai/gpt-oss-20b original/dtypes.json",
        {"dtypes.json": GPT_OSS_DTYPES},
        None,
        frozenset({"fp4-weights"}),
    ),
    Scheme(
        "torchao-nvfp4",
        "torchao (prototype mx_formats)",
        "quant_type.*._type = NVFP4DynamicActivationNVFP4WeightConfig (also NVFP4WeightOnlyConfig)",
        "pytorch/ao nvfp4_dynamic_activation_nvfp4_weight example, TorchAoConfig.to_dict",
        _torchao("NVFP4DynamicActivationNVFP4WeightConfig", use_dynamic_per_tensor_scale=True),
        None,
        frozenset({"fp4-weights"}),
    ),
    Scheme(
        "torchao-mxfp4",
        "torchao (prototype mx_formats)",
        "MXDynamicActivationMXWeightConfig with weight_dtype float4_e2m1fn_x2",
        "pytorch/ao mx_formats inference_workflow",
        _torchao(
            "MXDynamicActivationMXWeightConfig",
            activation_dtype=_dtype("float4_e2m1fn_x2"),
            weight_dtype=_dtype("float4_e2m1fn_x2"),
        ),
        None,
        frozenset({"fp4-weights"}),
    ),
    Scheme(
        "torchao-mxfp8",
        "torchao (prototype mx_formats)",
        "MXDynamicActivationMXWeightConfig / MXFPInferenceConfig with float8_e4m3fn",
        "pytorch/ao mxfp8 inference example",
        _torchao(
            "MXDynamicActivationMXWeightConfig",
            activation_dtype=_dtype("float8_e4m3fn"),
            weight_dtype=_dtype("float8_e4m3fn"),
        ),
        None,
        frozenset({"fp8-weights"}),
    ),
    Scheme(
        "torchao-fp8-act-int4",
        "torchao",
        "Float8DynamicActivationInt4WeightConfig: FP8 activations over int4 weights",
        "torchao quant_api config names",
        _torchao("Float8DynamicActivationInt4WeightConfig", int4_packing_format="preshuffled"),
        None,
        frozenset({"fp8-activations"}),
    ),
    Scheme(
        "torchao-int4",
        "torchao",
        "Int4WeightOnlyConfig: not FP8",
        "transformers TorchAoConfig int4 weight-only",
        _torchao("Int4WeightOnlyConfig", group_size=128),
        None,
        frozenset(),
    ),
    Scheme(
        "deepseek-v4-expert-fp4",
        "DeepSeek-V4",
        "top-level expert_dtype: fp4 (experts packed into I8, F8_E8M0 scales) beside FP8 layers",
        "DeepSeek-V4 config.json and checkpoint layout",
        {
            "config.json": {
                "architectures": ["DeepseekV4ForCausalLM"],
                "model_type": "deepseek_v4",
                "expert_dtype": "fp4",
                "torch_dtype": "bfloat16",
                "quantization_config": {**DEEPSEEK_FP8_QC, "scale_fmt": "ue8m0"},
            }
        },
        {
            "embed.weight": ("BF16", [64, 32]),
            "layers.0.attn.wq_a.weight": ("F8_E4M3", [128, 128]),
            "layers.0.attn.wq_a.scale": ("F8_E8M0", [1, 1]),
            "layers.0.ffn.shared_experts.w1.weight": ("F8_E4M3", [128, 128]),
            "layers.0.ffn.shared_experts.w1.scale": ("F8_E8M0", [1, 1]),
            "layers.0.ffn.experts.0.w1.weight": ("I8", [64, 32]),
            "layers.0.ffn.experts.0.w1.scale": ("F8_E8M0", [64, 2]),
        },
        frozenset({"fp8-weights", "fp4-weights"}),
    ),
    # ---------------- evidence from names only ----------------
    Scheme(
        "index-scale-inv-shards-missing",
        "any (index file)",
        "model.safetensors.index.json names *_scale_inv; shards missing",
        "a DeepSeek-V3 download with the shards not fetched",
        {"config.json": {"model_type": "deepseek_v3"}},
        {**_bf16(), **_linear(f"{L0}.mlp.down_proj", "F8_E4M3", weight_scale_inv="F32")},
        frozenset({"fp8-weights"}),
        index_only=True,
    ),
    Scheme(
        "index-weight-scale-shards-missing",
        "any (index file)",
        "index names *.weight_scale, no config, shards missing: unknown (weak hint)",
        "a quantised download with the shards not fetched",
        {"config.json": {"model_type": "llama"}},
        {**_bf16(), **_linear(f"{L0}.mlp.up_proj", "F8_E4M3", weight_scale="F32")},
        frozenset({"fp8-weights"}),
        index_only=True,
    ),
    Scheme(
        "comfy-scaled-fp8",
        "ComfyUI single-file FP8",
        "marker tensor scaled_fp8",
        "ComfyUI/KJ scaled FP8 checkpoints",
        {},
        {
            "scaled_fp8": ("F8_E4M3", [2]),
            "model.diffusion_model.blocks.0.attn.qkv.weight": ("F8_E4M3", [32, 32]),
            "model.diffusion_model.blocks.0.attn.qkv.scale_weight": ("F32", []),
        },
        frozenset({"fp8-weights"}),
    ),
)
