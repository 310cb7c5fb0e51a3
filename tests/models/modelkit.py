"""Writers for the model formats the tests scan: safetensors, indexes, configs, GGUF.

Shards can be made full size without disk cost: the buffer is a hole (``truncate``).
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

#: test data kept in the repository (hy-smi output, torch checkpoints)
DATA = Path(__file__).resolve().parents[1] / "data"

BITS = {
    "F8_E4M3": 8,
    "F8_E5M2": 8,
    "F8_E8M0": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "BF16": 16,
    "F16": 16,
    "F32": 32,
    "I32": 32,
    "F64": 64,
    "I64": 64,
}


def safetensors_header(
    tensors: dict[str, tuple[str, list[int]]], metadata: dict[str, str] | None = None
) -> tuple[bytes, int]:
    """The padded header bytes and the buffer length for ``tensors`` laid out in order."""
    header: dict[str, object] = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = math.ceil(math.prod(shape) * BITS.get(dtype, 8) / 8)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return raw, offset


def write_safetensors(
    path: Path, tensors: dict[str, tuple[str, list[int]]], metadata: dict[str, str] | None = None
) -> Path:
    """A real safetensors file whose buffer is a sparse hole of the right size."""
    raw, buffer_len = safetensors_header(tensors, metadata or {"format": "pt"})
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)))
        fh.write(raw)
        fh.truncate(8 + len(raw) + buffer_len)
    return path


def write_raw(path: Path, length: int, header: bytes, total: int | None = None) -> Path:
    """A file with an arbitrary length field and header bytes (for hostile inputs)."""
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", length))
        fh.write(header)
        if total is not None:
            fh.truncate(total)
    return path


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, indent=2))
    return path


def write_sharded(
    folder: Path,
    shards: list[dict[str, tuple[str, list[int]]]],
    index_names: dict[str, str] | None = None,
) -> list[Path]:
    """Shards ``model-0000k-of-0000n.safetensors`` plus ``model.safetensors.index.json``."""
    n = len(shards)
    weight_map: dict[str, str] = {}
    paths = []
    for k, tensors in enumerate(shards, 1):
        name = f"model-{k:05d}-of-{n:05d}.safetensors"
        paths.append(write_safetensors(folder / name, tensors))
        weight_map.update({t: name for t in tensors})
    if index_names is not None:
        weight_map = index_names
    write_json(
        folder / "model.safetensors.index.json",
        {"metadata": {"total_size": 0}, "weight_map": weight_map},
    )
    return paths


DEEPSEEK_FP8_QC = {
    "activation_scheme": "dynamic",
    "fmt": "e4m3",
    "quant_method": "fp8",
    "weight_block_size": [128, 128],
}


def deepseek_layer(i: int, fp8: bool = True, experts: int = 2, hidden: int = 256) -> dict:
    """One DeepSeek-V3-shaped decoder layer: FP8 block weights with F32 ``*_scale_inv``."""
    out: dict[str, tuple[str, list[int]]] = {
        f"model.layers.{i}.input_layernorm.weight": ("BF16", [hidden]),
    }
    names = [f"model.layers.{i}.self_attn.q_a_proj", f"model.layers.{i}.self_attn.o_proj"]
    for e in range(experts):
        names += [f"model.layers.{i}.mlp.experts.{e}.{p}_proj" for p in ("gate", "up", "down")]
    blocks = max(1, hidden // 128)
    for name in names:
        if fp8:
            out[f"{name}.weight"] = ("F8_E4M3", [hidden, hidden])
            out[f"{name}.weight_scale_inv"] = ("F32", [blocks, blocks])
        else:
            out[f"{name}.weight"] = ("BF16", [hidden, hidden])
    return out


def deepseek_model(
    folder: Path, layers: int = 4, shards: int = 2, fp8: bool = True, stale_config: bool = False
) -> Path:
    """A DeepSeek-V3-shaped model; ``fp8=False, stale_config=True`` is fp8_cast_bf16 output."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "torch_dtype": "bfloat16",
    }
    if fp8 or stale_config:
        config["quantization_config"] = dict(DEEPSEEK_FP8_QC)
    write_json(folder / "config.json", config)
    per = [dict() for _ in range(shards)]
    per[0]["model.embed_tokens.weight"] = ("BF16", [1024, 256])
    for i in range(layers):
        per[i * shards // layers].update(deepseek_layer(i, fp8=fp8))
    write_sharded(folder, per)
    return folder


def gguf_string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(
    path: Path, tensors: list[tuple[str, list[int], int]], kv: dict[str, str] | None = None
) -> Path:
    """A GGUF v3 header: string key/values, a token array, and tensor infos (no data)."""
    kv = {"general.architecture": "gpt-oss", **(kv or {})}
    body = bytearray()
    for key, value in kv.items():
        body += gguf_string(key) + struct.pack("<I", 8) + gguf_string(value)
    tokens = ["<s>", "</s>", "hello"]
    body += gguf_string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, len(tokens))
    for t in tokens:
        body += gguf_string(t)
    body += gguf_string("general.alignment") + struct.pack("<II", 4, 32)
    offset = 0
    for name, dims, ttype in tensors:
        body += gguf_string(name) + struct.pack("<I", len(dims))
        body += b"".join(struct.pack("<Q", d) for d in dims)
        body += struct.pack("<IQ", ttype, offset)
        offset += 4096
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv) + 2)
    with open(path, "wb") as fh:
        fh.write(head + bytes(body))
        fh.truncate(len(head) + len(body) + offset + 32)
    return path
