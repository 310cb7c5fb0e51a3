"""Tensor dtype strings (safetensors, torch, GGUF) sorted into the families dtkguard cares about."""

from __future__ import annotations

#: safetensors dtypes that are 8-bit floats used as values (weights, activations, KV scales)
FP8_VALUE = frozenset({"F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ"})
#: the E8M0 exponent-only format used for microscaling (MX) block scales
FP8_EXPONENT = frozenset({"F8_E8M0"})
#: sub-byte floats
FP4_VALUE = frozenset({"F4", "F6_E2M3", "F6_E3M2"})

#: GGML tensor types with no 8-bit-float equivalent on DCU: FP4 microscaling formats
GGML_TYPES = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    6: "Q5_0",
    7: "Q5_1",
    8: "Q8_0",
    9: "Q8_1",
    10: "Q2_K",
    11: "Q3_K",
    12: "Q4_K",
    13: "Q5_K",
    14: "Q6_K",
    15: "Q8_K",
    16: "IQ2_XXS",
    17: "IQ2_XS",
    18: "IQ3_XXS",
    19: "IQ1_S",
    20: "IQ4_NL",
    21: "IQ3_S",
    22: "IQ2_S",
    23: "IQ4_XS",
    24: "I8",
    25: "I16",
    26: "I32",
    27: "I64",
    28: "F64",
    29: "IQ1_M",
    30: "BF16",
    34: "TQ1_0",
    35: "TQ2_0",
    39: "MXFP4",
    40: "NVFP4",
    41: "Q1_0",
}
GGML_FP4 = frozenset({"MXFP4", "NVFP4"})


def family(dtype: str) -> str:
    """``fp8``, ``e8m0``, ``fp4`` or ``other`` for a safetensors dtype string.

    Strings this table does not know but that look like a newer small float (``F8_*``,
    ``F4*``, ``F6_*``) are treated as FP8/FP4: older readers reject them, and so does a DCU.
    """
    d = dtype.upper()
    if d in FP8_EXPONENT:
        return "e8m0"
    if d in FP8_VALUE or d.startswith("F8"):
        return "fp8"
    if d in FP4_VALUE or d.startswith(("F4", "F6_", "F6")):
        return "fp4"
    return "other"


def torch_family(name: str) -> str:
    """Family of a torch dtype or storage name seen in a pickle (``float8_e4m3fn``...)."""
    n = name.lower()
    if n.startswith("float8_e8m0"):
        return "e8m0"
    if n.startswith("float8"):
        return "fp8"
    if n.startswith(("float4", "float6")):
        return "fp4"
    return "other"


def is_scale_name(name: str) -> bool:
    """A tensor that holds quantisation scales rather than values."""
    leaf = name.rsplit(".", 1)[-1]
    return "scale" in leaf or leaf in {"scale_weight", "scale_input"}


def is_packed_fp4_name(name: str) -> bool:
    """U8 tensors that carry packed FP4 values (compressed-tensors, gpt-oss MXFP4: ``*_blocks``
    in the Hugging Face layout, ``*.blocks`` in its ``original/`` one)."""
    leaf = name.rsplit(".", 1)[-1]
    return leaf in ("weight_packed", "blocks") or leaf.endswith("_blocks")


#: k/v cache scale tensors: compressed-tensors/ModelOpt ``k_scale``/``v_scale`` (``q_scale``),
#: legacy ``kv_scale``, and Quark's ``k_proj.output_scale``/``v_proj.output_scale``
KV_SCALE_SUFFIXES = (
    ".k_scale",
    ".v_scale",
    ".q_scale",
    ".kv_scale",
    ".k_proj.output_scale",
    ".v_proj.output_scale",
)
#: names that only a quantised checkpoint has (scales, zero points, packed values, group index)
QUANT_SUFFIXES = (
    ".weight_scale",
    "_scale_inv",
    ".weight_scale_2",
    "_global_scale",
    ".input_scale",
    ".output_scale",
    ".pre_quant_scale",
    ".scales",
    "_scales",
    ".qweight",
    ".qzeros",
    ".g_idx",
    ".weight_packed",
    ".weight_zero_point",
    ".weight_shape",
    "_blocks",
    ".blocks",
    ".scale_weight",
    ".scale_input",
    ".absmax",
    *KV_SCALE_SUFFIXES,
)
#: integer dtypes: packed sub-byte values (I32/U8 nibbles, GPTQ/AWQ) or INT8 weights
INT_DTYPES = frozenset({"I8", "U8", "I16", "U16", "I32", "U32"})
