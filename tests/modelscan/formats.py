"""Every model format and layout a user points dtkguard at, each FP8, FP4 and clean.

A `Row` builds one model with the real writers (`modelkit`: safetensors, gguf's GGUFWriter, CPU
``torch.save``) and names the detections the library must make. The weight-file layouts carry
no config.json, so that their own reader is the only evidence: a gate that stops counting that
reader turns the row's verdict into "nothing to scan". GGUF has no FP8 tensor type, so its rows
are FP4 and clean only.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from modelkit import DEEPSEEK_FP8_QC, write_gguf, write_json, write_safetensors, write_sharded

L0 = "model.layers.0"
VARIANTS = ("fp8", "fp4", "clean")

#: the config.json of each variant: DeepSeek-V3 FP8, gpt-oss MXFP4, and a GPTQ int4 model
CONFIGS: dict[str, dict] = {
    "fp8": {"model_type": "deepseek_v3", "quantization_config": DEEPSEEK_FP8_QC},
    "fp4": {
        "model_type": "gpt_oss",
        "quantization_config": {
            "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"],
            "quant_method": "mxfp4",
        },
    },
    "clean": {
        "model_type": "llama",
        "torch_dtype": "float16",
        "quantization_config": {
            "bits": 4,
            "group_size": 128,
            "desc_act": False,
            "sym": True,
            "quant_method": "gptq",
            "checkpoint_format": "gptq",
        },
    },
}
#: ModelOpt's hf_quant_config.json beside a config.json that declares nothing
SIDECARS: dict[str, dict] = {
    v: {
        "producer": {"name": "modelopt", "version": "0.33.0"},
        "quantization": {"quant_algo": algo, "kv_cache_quant_algo": None, "group_size": 16},
    }
    for v, algo in (("fp8", "FP8"), ("fp4", "NVFP4"), ("clean", "INT4_AWQ"))
}
_BF16 = {
    "model.embed_tokens.weight": ("BF16", [64, 32]),
    f"{L0}.input_layernorm.weight": ("BF16", [32]),
}
#: the tensors of each variant (FP8 block weights, gpt-oss MXFP4 experts, BF16)
TENSORS: dict[str, dict[str, tuple[str, list[int]]]] = {
    "fp8": {
        **_BF16,
        f"{L0}.mlp.down_proj.weight": ("F8_E4M3", [32, 32]),
        f"{L0}.mlp.down_proj.weight_scale_inv": ("F32", [1, 1]),
    },
    "fp4": {
        **_BF16,
        f"{L0}.mlp.experts.gate_up_proj_blocks": ("U8", [4, 64, 2, 16]),
        f"{L0}.mlp.experts.gate_up_proj_scales": ("U8", [4, 64, 2]),
    },
    "clean": {**_BF16, f"{L0}.mlp.down_proj.weight": ("BF16", [32, 32])},
}
#: GGML types: MXFP4 experts, and a Q4_K_M-style clean file
GGUF_TENSORS = {
    "fp4": [("blk.0.ffn_gate_exps.weight", [4, 64, 64], 39), ("output_norm.weight", [64], 0)],
    "clean": [("blk.0.ffn_gate.weight", [64, 256], 12), ("output_norm.weight", [64], 0)],
}
#: what the library must find, by (kind of evidence, variant)
WITH_TENSORS = {"fp8": {"fp8-weights"}, "fp4": {"fp4-weights", "fp8-scales"}, "clean": set()}
DECLARED = {"fp8": {"fp8-weights"}, "fp4": {"fp4-weights"}, "clean": set()}


def torch_state(variant: str) -> dict:
    """A state dict with 64 KiB of tensor data: never read by the scan."""
    import torch

    big = torch.zeros(128, 256, dtype=torch.bfloat16)
    if variant == "fp8":
        return {"w": torch.zeros(128, 512).to(torch.float8_e4m3fn), "scale_inv": torch.ones(1)}
    if variant == "fp4":
        w4 = torch.zeros(128, 512, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
        return {"w": w4, "norm": big}
    return {"w": big, "norm": torch.ones(256, dtype=torch.bfloat16)}


def _config_only(d: Path, v: str) -> Path:
    write_json(d / "config.json", CONFIGS[v])
    return d


def _sidecar(d: Path, v: str) -> Path:
    write_json(d / "config.json", {"model_type": "llama", "torch_dtype": "bfloat16"})
    write_json(d / "hf_quant_config.json", SIDECARS[v])
    return d


def _index_only(d: Path, v: str) -> Path:
    write_json(d / "config.json", CONFIGS[v] if v != "clean" else {"model_type": "llama"})
    shard = "model-00001-of-00002.safetensors"
    write_json(
        d / "model.safetensors.index.json",
        {"metadata": {"total_size": 0}, "weight_map": dict.fromkeys(TENSORS[v], shard)},
    )
    return d


def _safetensors(d: Path, v: str) -> Path:
    write_safetensors(d / "model.safetensors", TENSORS[v])
    return d


def _sharded(d: Path, v: str) -> Path:
    names = list(TENSORS[v])
    write_sharded(d, [{n: TENSORS[v][n] for n in names[:2]}, {n: TENSORS[v][n] for n in names[2:]}])
    return d


def _pickle(zipped: bool, name: str = "pytorch_model.bin") -> Callable[[Path, str], Path]:
    def build(d: Path, v: str) -> Path:
        import torch

        torch.save(torch_state(v), d / name, _use_new_zipfile_serialization=zipped)
        return d

    return build


def _gguf(d: Path, v: str) -> Path:
    write_gguf(d / f"model-{v}.gguf", GGUF_TENSORS[v])
    return d


def _file(build: Callable[[Path, str], Path], pattern: str) -> Callable[[Path, str], Path]:
    """The weight file itself as the path (not its folder)."""

    def single(d: Path, v: str) -> Path:
        build(d, v)
        return next(d.glob(pattern))

    return single


def symlinked(inner: Callable[[Path, str], Path]) -> Callable[[Path, str], Path]:
    """A symlink to the model folder, as the path given (another alias of the same model)."""

    def build(d: Path, v: str) -> Path:
        real = d / "real"
        real.mkdir()
        inner(real, v)
        link = d / "current"
        link.symlink_to(real, target_is_directory=True)
        return link

    return build


def hf_cache(inner: Callable[[Path, str], Path]) -> Callable[[Path, str], Path]:
    """``models--org--NAME`` of a hub cache: blobs, a snapshot of symlinks, ``refs/main``."""

    def build(d: Path, v: str) -> Path:
        staged = d / "staged"
        staged.mkdir()
        inner(staged, v)
        repo = d / "hub" / f"models--org--{v}"
        rev = "0123456789abcdef0123456789abcdef01234567"
        (repo / "blobs").mkdir(parents=True)
        snap = repo / "snapshots" / rev
        snap.mkdir(parents=True)
        for i, path in enumerate(sorted(staged.iterdir())):
            blob = repo / "blobs" / f"{i:064x}"
            shutil.move(path, blob)
            os.symlink(f"../../blobs/{blob.name}", snap / path.name)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(rev)
        staged.rmdir()
        return repo

    return build


def _config_and(weights: Callable[[Path, str], Path]) -> Callable[[Path, str], Path]:
    def build(d: Path, v: str) -> Path:
        write_json(d / "config.json", CONFIGS[v] if v != "clean" else {"model_type": "llama"})
        return weights(d, v)

    return build


@dataclass(frozen=True)
class Row:
    layout: str
    variant: str
    build: Callable[[Path, str], Path]
    expect: frozenset[str]
    #: the readers that must have produced evidence (`ModelScan.read`)
    readers: frozenset[str]
    #: a hub cache repo: ``exec`` names it by its id (org/VARIANT) through HF_HUB_CACHE
    hub: bool = False
    torch: bool = False

    @property
    def id(self) -> str:
        return f"{self.layout}-{self.variant}"


def _rows() -> list[Row]:
    pickle_zip, pickle_legacy = _pickle(True), _pickle(False)
    one_pt = _file(_pickle(True, "model.pt"), "*.pt")
    one_st = _file(_safetensors, "*.safetensors")
    one_pth = _file(_pickle(False, "model.pth"), "*.pth")
    one_ckpt = _file(_pickle(True, "last.ckpt"), "*.ckpt")
    cache = hf_cache(_config_and(_safetensors))
    torch, hub = {"torch": True}, {"hub": True}
    table: list[tuple[str, Callable[[Path, str], Path], dict, set[str], dict]] = [
        ("config-only", _config_only, DECLARED, {"config"}, {}),
        ("config-sidecar", _sidecar, DECLARED, {"config", "sidecar"}, {}),
        ("index-no-shards", _index_only, DECLARED, {"config", "index"}, {}),
        ("safetensors", _safetensors, WITH_TENSORS, {"safetensors"}, {}),
        ("sharded", _sharded, WITH_TENSORS, {"index", "safetensors"}, {}),
        ("pickle-zip", pickle_zip, DECLARED, {"pickle"}, torch),
        ("pickle-legacy", pickle_legacy, DECLARED, {"pickle"}, torch),
        ("gguf", _gguf, DECLARED, {"gguf"}, {}),
        ("file-safetensors", one_st, WITH_TENSORS, {"safetensors"}, {}),
        ("file-pickle", one_pt, DECLARED, {"pickle"}, torch),
        ("file-pth-legacy", one_pth, DECLARED, {"pickle"}, torch),
        ("file-ckpt", one_ckpt, DECLARED, {"pickle"}, torch),
        ("file-gguf", _file(_gguf, "*.gguf"), DECLARED, {"gguf"}, {}),
        ("file-config", _file(_config_only, "config.json"), DECLARED, {"config"}, {}),
        ("symlinked-folder", symlinked(_sharded), WITH_TENSORS, {"index", "safetensors"}, {}),
        ("hf-cache", cache, WITH_TENSORS, {"config", "safetensors"}, hub),
        ("hf-cache-config-only", hf_cache(_config_only), DECLARED, {"config"}, hub),
    ]  # fmt: skip
    rows = []
    for layout, build, expect, readers, extra in table:
        for v in VARIANTS:
            if "gguf" in layout and v == "fp8":
                continue  # GGML has no FP8 tensor type
            rows.append(Row(layout, v, build, frozenset(expect[v]), frozenset(readers), **extra))
    return rows


ROWS: tuple[Row, ...] = tuple(_rows())
