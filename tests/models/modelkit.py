"""Writers for the model formats the tests scan: safetensors, indexes, configs, GGUF.

Tensors are written by the real writers: ``safetensors.numpy.save_file`` (FP8/E8M0/BF16 through
``ml_dtypes``; F4 through ``safetensors.torch`` and torch's ``float4_e2m1fn_x2``) and the
``gguf`` package's ``GGUFWriter``. Only dtypes no writer knows (F6_*, made-up F8_*) and hostile
files use the hand-made header of :func:`write_header_only`, whose buffer is a sparse hole.
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


TORCH_DTYPES = {
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz",
    "F8_E8M0": "float8_e8m0fnu",
    "BF16": "bfloat16",
    "F16": "float16",
    "F32": "float32",
    "F64": "float64",
    "U8": "uint8",
    "I8": "int8",
    "I16": "int16",
    "U16": "uint16",
    "I32": "int32",
    "U32": "uint32",
    "I64": "int64",
    "BOOL": "bool",
}


def _numpy_dtypes() -> dict[str, object]:
    import ml_dtypes
    import numpy as np

    return {
        "F8_E4M3": ml_dtypes.float8_e4m3fn,
        "F8_E5M2": ml_dtypes.float8_e5m2,
        "F8_E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
        "F8_E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
        "F8_E8M0": ml_dtypes.float8_e8m0fnu,
        "BF16": ml_dtypes.bfloat16,
        "F16": np.float16,
        "F32": np.float32,
        "F64": np.float64,
        "U8": np.uint8,
        "I8": np.int8,
        "I16": np.int16,
        "U16": np.uint16,
        "I32": np.int32,
        "U32": np.uint32,
        "I64": np.int64,
        "BOOL": np.bool_,
    }


def write_safetensors(
    path: Path, tensors: dict[str, tuple[str, list[int]]], metadata: dict[str, str] | None = None
) -> Path:
    """A safetensors file written by the safetensors library (zero-filled tensors)."""
    import numpy as np

    meta = metadata or {"format": "pt"}
    wanted = {dtype for dtype, _ in tensors.values()}
    known = _numpy_dtypes()
    if wanted <= set(known):
        from safetensors.numpy import save_file

        arrays = {n: np.zeros(shape, dtype=known[d]) for n, (d, shape) in tensors.items()}
        save_file(arrays, str(path), metadata=meta)
        return path
    if wanted <= {*known, "F4"} and _has_torch():
        import torch
        from safetensors.torch import save_file as save_torch

        def make(dtype: str, shape: list[int]) -> torch.Tensor:
            if dtype == "F4":  # two E2M1 values a byte: the last dimension is halved
                packed = torch.zeros([*shape[:-1], shape[-1] // 2], dtype=torch.uint8)
                return packed.view(torch.float4_e2m1fn_x2)
            return torch.zeros(shape, dtype=getattr(torch, TORCH_DTYPES[dtype]))

        save_torch({n: make(d, s) for n, (d, s) in tensors.items()}, str(path), metadata=meta)
        return path
    return write_header_only(path, tensors, metadata)


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def write_header_only(
    path: Path, tensors: dict[str, tuple[str, list[int]]], metadata: dict[str, str] | None = None
) -> Path:
    """A safetensors header written by hand, the buffer a sparse hole of the right size.

    For dtypes no writer supports (F6_*, unknown F8_*) and for full-size shards.
    """
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


def write_gguf(
    path: Path, tensors: list[tuple[str, list[int], int]], kv: dict[str, str] | None = None
) -> Path:
    """A GGUF file written by the ``gguf`` package's GGUFWriter (zero-filled tensor data).

    ``tensors``: (name, shape in numpy order, GGML type number).
    """
    import gguf
    import numpy as np

    kv = {"general.architecture": "gpt-oss", **(kv or {})}
    writer = gguf.GGUFWriter(str(path), arch=kv.pop("general.architecture"))
    for key, value in kv.items():
        writer.add_string(key, value)
    writer.add_token_list(["<s>", "</s>", "hello"])
    for name, shape, ttype in tensors:
        qtype = gguf.GGMLQuantizationType(ttype)
        byte_shape = gguf.quant_shape_to_byte_shape(tuple(shape), qtype)
        writer.add_tensor(name, np.zeros(byte_shape, dtype=np.uint8), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
