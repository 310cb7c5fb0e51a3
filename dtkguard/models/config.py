"""Classify the quantisation a model's config files declare (config.json, hf_quant_config.json).

The config is a hint; the tensor dtypes are the ground truth (see ``scan``). A config may nest
its quantisation block under ``text_config`` or ``llm_config`` (VLMs), use the older
``compression_config`` key (compressed-tensors, Hygon slimquant), or live in ModelOpt's
``hf_quant_config.json``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_CONFIG = 16 * 1024 * 1024

FP8_METHODS = frozenset(
    {"fp8", "fbgemm_fp8", "ptpc_fp8", "deepgemm_fp8", "mxfp8", "modelopt_fp8", "w8a8_fp8"}
)
FP4_METHODS = frozenset(
    {"mxfp4", "nvfp4", "fp_quant", "fouroversix", "petit_nvfp4", "modelopt_fp4", "quark_mxfp4"}
)
_QUANT_KEYS = ("quantization_config", "compression_config")
_NESTED = ("text_config", "llm_config", "language_config", "thinker_config")


class ConfigError(ValueError):
    """A config file that is not readable JSON (one line)."""


@dataclass
class QuantConfig:
    """What the config files say. ``weights`` holds ``fp8``/``fp4``; ``kv`` likewise."""

    source: str | None = None
    method: str | None = None
    weights: set[str] = field(default_factory=set)
    kv: set[str] = field(default_factory=set)
    details: list[str] = field(default_factory=list)

    @property
    def declared(self) -> bool:
        return bool(self.weights or self.kv)

    def evidence(self) -> str:
        return " ".join(self.details)


def load_json(path: str | os.PathLike[str], cap: int = MAX_CONFIG) -> dict[str, Any]:
    """A JSON object from ``path``, refusing files larger than ``cap``."""
    from dtkguard.util.safe_read import TooLarge, read_capped
    from dtkguard.util.text import json_loads

    try:
        raw = read_capped(path, cap, what="config")
    except TooLarge as exc:
        raise ConfigError(str(exc)) from None
    try:
        data = json_loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"not JSON: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise ConfigError("not a JSON object")
    return data


def _dicts(obj: Any, depth: int = 0, skip: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    if depth > 12:
        return
    if isinstance(obj, dict):
        yield obj
        for key, value in obj.items():
            if key not in skip:
                yield from _dicts(value, depth + 1, skip)
    elif isinstance(obj, list):
        for value in obj[:1000]:
            yield from _dicts(value, depth + 1, skip)


def _small_float(num_bits: Any, kind: Any) -> str | None:
    if kind == "float" and num_bits == 8:
        return "fp8"
    if kind == "float" and num_bits in (4, 6):
        return "fp4"
    return None


def _dtype_family(text: str) -> str | None:
    t = text.lower()
    if t.startswith(("fp8", "float8", "f8_")) and "e8m0" not in t:
        return "fp8"
    if t.startswith(("fp4", "fp6", "float4", "float6", "mxfp4", "nvfp4")):
        return "fp4"
    return None


def classify_quant(qc: dict[str, Any], out: QuantConfig) -> None:
    """Add what one quantisation block declares to ``out``."""
    method = str(qc.get("quant_method") or qc.get("quant_library") or "").lower() or None
    algo = str(qc.get("quant_algo") or "").upper()
    out.method = out.method or method or (algo.lower() or None)
    if method:
        out.details.append(f"quant_method={method}")
    if method in FP8_METHODS:
        out.weights.add("fp8")
    elif method in FP4_METHODS:
        out.weights.add("fp4")
    if algo:
        out.details.append(f"quant_algo={algo}")
        if "FP4" in algo:
            out.weights.add("fp4")
        elif "FP8" in algo or algo == "W4A8_AWQ":
            out.weights.add("fp8")
    for key in ("fmt", "scale_fmt", "expert_dtype", "quant_dtype"):
        if isinstance(qc.get(key), str):
            out.details.append(f"{key}={qc[key]}")
    block = qc.get("weight_block_size")
    if isinstance(block, list):
        out.details.append("block [" + ",".join(str(b) for b in block[:4]) + "]")
    for d in _dicts(
        qc,
        skip=(
            "kv_cache_scheme",
            "kv_cache_config",
            "ignore",
            "ignored_layers",
            "modules_to_not_convert",
        ),
    ):
        fam = _small_float(d.get("num_bits"), d.get("type"))
        if fam:
            out.weights.add(fam)
        fmt = d.get("format")
        if isinstance(fmt, str):
            f = fmt.lower()
            if any(x in f for x in ("nvfp4", "mxfp4", "mxfp6")):
                out.weights.add("fp4")
            elif "mxfp8" in f:
                out.weights.add("fp8")
            if f"format={f}" not in out.details:
                out.details.append(f"format={f}")
        for key in ("dtype", "quant_dtype", "expert_dtype", "weight_dtype"):
            if isinstance(d.get(key), str):
                fam = _dtype_family(d[key])
                if fam:
                    out.weights.add(fam)
        if isinstance(d.get("_type"), str) and "float8" in d["_type"].lower():
            out.weights.add("fp8")
            out.details.append(f"torchao {d['_type']}")
    _classify_kv(qc, out)


def _classify_kv(qc: dict[str, Any], out: QuantConfig) -> None:
    scheme = qc.get("kv_cache_scheme")
    if isinstance(scheme, dict):
        fam = _small_float(scheme.get("num_bits"), scheme.get("type"))
        if fam:
            out.kv.add(fam)
            out.details.append(f"kv_cache_scheme={fam}")
    elif isinstance(scheme, str) and scheme.upper() in ("FP8", "STATIC"):
        out.kv.add("fp8")
        out.details.append(f"kv_cache_scheme={scheme}")
    algo = qc.get("kv_cache_quant_algo")
    if isinstance(algo, str):
        fam = _dtype_family(algo)
        if fam:
            out.kv.add(fam)
            out.details.append(f"kv_cache_quant_algo={algo}")


def classify_config(config: dict[str, Any], out: QuantConfig | None = None) -> QuantConfig:
    """Classify a parsed config.json (nested VLM configs included)."""
    out = out or QuantConfig()
    blocks: list[dict[str, Any]] = []
    for holder in [config, *(config.get(k) for k in _NESTED)]:
        if isinstance(holder, dict):
            blocks.extend(holder[k] for k in _QUANT_KEYS if isinstance(holder.get(k), dict))
    for qc in blocks:
        out.source = out.source or "config.json"
        classify_quant(qc, out)
    for key in ("torch_dtype", "dtype"):
        value = config.get(key)
        if isinstance(value, str) and _dtype_family(value):
            out.source = out.source or "config.json"
            out.weights.add(_dtype_family(value) or "fp8")
            out.details.append(f"{key}={value}")
    return out


def classify_hf_quant_config(data: dict[str, Any], out: QuantConfig | None = None) -> QuantConfig:
    """Classify ModelOpt's hf_quant_config.json (``{"quantization": {"quant_algo": ...}}``)."""
    out = out or QuantConfig()
    block = data.get("quantization")
    if isinstance(block, dict):
        out.source = out.source or "hf_quant_config.json"
        classify_quant(block, out)
    return out
