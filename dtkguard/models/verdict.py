"""Turn a :class:`ModelScan` into named detections with evidence and remediation.

The tensors are the ground truth and the config a hint: FP8 tensors make FP8 weights whatever
the config says; a config that declares FP8 over BF16 tensors is a stale config (DeepSeek's
``fp8_cast_bf16.py`` rewrites the weights but leaves ``quant_method: fp8`` in config.json).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from dtkguard.models.scan import ModelScan

#: detection -> the Fp8Rule kind its severity comes from
KIND = {
    "fp8-weights": "weights",
    "fp8-scales": "weights",
    "fp4-weights": "weights",
    "fp8-kv-cache": "kv_cache",
    "stale-config": "weights",
}

REMEDIATION = {
    "fp8-weights": (
        "Use the BF16 variant of this model; or load it with transformers "
        "quantization_config=FineGrainedFP8Config(dequantize=True); or convert it offline to "
        "BF16 (e.g. DeepSeek's inference/fp8_cast_bf16.py, then drop quantization_config from "
        "config.json). FP8 needs a BW1100 card."
    ),
    "fp4-weights": (
        "Use the BF16 variant of this model; for MXFP4 (gpt-oss) load with transformers "
        "quantization_config=Mxfp4Config(dequantize=True); or dequantize offline to BF16. "
        "DCU cards have no FP4 kernels."
    ),
    "fp8-scales": (
        "The weights are not FP8 but their block scales are (NVFP4/MX); the card must still cast "
        "FP8. Use the BF16 variant of this model or dequantize it offline."
    ),
    "fp8-kv-cache": (
        "Serve with the KV cache in the model dtype: vLLM/SGLang/TGI --kv-cache-dtype auto, "
        "LMDeploy --quant-policy 0 (or 8 for INT8); drop kv_cache_scheme / "
        "kv_cache_quant_algo from the config if the serving stack applies it by default."
    ),
    "stale-config": (
        "The weights are already BF16: remove quantization_config from config.json (a converter "
        "left it behind) so that transformers and vLLM load the model as BF16."
    ),
}


@dataclass
class Detection:
    """One thing found in one model. ``weak``: a hint only (severity capped at low)."""

    kind: str
    message: str
    evidence: str
    facts: dict[str, Any] = field(default_factory=dict)
    weak: bool = False

    @property
    def remediation(self) -> str:
        return REMEDIATION[self.kind]


def _histogram(counts: Counter[str]) -> str:
    return ", ".join(f"{n:,} tensors {d}" for d, n in counts.most_common())


def _files(scan: ModelScan) -> str:
    parts = []
    if scan.shards:
        parts.append(f"{scan.shards:,} shard" + ("s" if scan.shards != 1 else ""))
    if scan.pickles:
        parts.append(f"{scan.pickles} pickle checkpoint" + ("s" if scan.pickles != 1 else ""))
    if scan.ggufs:
        parts.append(f"{scan.ggufs} GGUF file" + ("s" if scan.ggufs != 1 else ""))
    return ", ".join(parts)


def evidence(scan: ModelScan, tensor_part: str) -> str:
    """``config quant_method=fp8 fmt=e4m3 block [128,128]; 61 shards, 1,834 tensors F8_E4M3``."""
    parts = []
    if scan.config.details:
        source = scan.config.source or "config"
        parts.append(f"{'config' if source == 'config.json' else source} {scan.config.evidence()}")
    tail = ", ".join(p for p in (_files(scan), tensor_part) if p)
    if tail:
        parts.append(tail)
    return "; ".join(parts)


def _facts(scan: ModelScan) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "model": scan.name,
        "shards": scan.shards,
        "tensors": scan.tensors,
        "dtypes": dict(scan.dtypes.most_common()),
    }
    if scan.config.declared or scan.config.method:
        facts["config"] = {
            "source": scan.config.source,
            "quant_method": scan.config.method,
            "weights": sorted(scan.config.weights),
            "kv_cache": sorted(scan.config.kv),
            "details": scan.config.details,
        }
    if scan.pickle_globals:
        facts["pickle_globals"] = dict(scan.pickle_globals)
    if scan.gguf_types:
        facts["gguf_types"] = dict(scan.gguf_types)
    if scan.scale_inv:
        facts["scale_inv_tensors"] = scan.scale_inv
    if scan.kv_scales:
        facts["kv_scale_tensors"] = scan.kv_scales
    return facts


def detect(scan: ModelScan) -> list[Detection]:
    """Every FP8/FP4 detection for one scanned model (empty for a clean model)."""
    cfg = scan.config
    facts = _facts(scan)
    read_tensors = scan.tensors > 0 or scan.pickles > 0 or scan.ggufs > 0
    fp8_pickle = Counter(
        {
            g: n
            for g, n in scan.pickle_globals.items()
            if "float8" in g.lower() and "e8m0" not in g.lower()
        }
    )
    fp4_pickle = Counter(
        {
            g: n
            for g, n in scan.pickle_globals.items()
            if g.lower().rsplit(".", 1)[-1].startswith(("float4", "float6"))
        }
    )
    gguf_fp4 = Counter({t: n for t, n in scan.gguf_types.items() if t in ("MXFP4", "NVFP4")})
    fp8_n = sum(scan.fp8_values.values()) + sum(fp8_pickle.values())
    # ModelOpt NVFP4 keeps packed FP4 in U8 ``weight`` tensors next to F8_E4M3 block scales
    u8_fp4 = scan.u8_weights if ("fp4" in cfg.weights or scan.fp8_scales) else 0
    fp4_n = (
        sum(scan.fp4_values.values())
        + scan.packed_u8
        + u8_fp4
        + sum(fp4_pickle.values())
        + sum(gguf_fp4.values())
    )
    out: list[Detection] = []
    name = scan.name

    if fp4_n or ("fp4" in cfg.weights and not read_tensors):
        hist = scan.fp4_values + gguf_fp4
        if scan.packed_u8 + u8_fp4:
            hist["U8 (packed FP4)"] = scan.packed_u8 + u8_fp4
        part = _histogram(hist) + "".join(f"; pickle global {g}" for g in fp4_pickle)
        out.append(
            Detection(
                "fp4-weights",
                f"{name}: FP4 weights"
                + ("" if read_tensors else " (declared by the config; no weight files read)"),
                evidence(scan, part),
                facts,
                weak=False,
            )
        )
    if fp8_n or scan.markers or ("fp8" in cfg.weights and not read_tensors and not fp4_n):
        part = _histogram(scan.fp8_values)
        if scan.scale_inv:
            part += f", {scan.scale_inv:,} *_scale_inv"
        part += "".join(f"; pickle global {g}" for g in fp8_pickle)
        part += "".join(f"; marker tensor {m}" for m in scan.markers)
        out.append(
            Detection(
                "fp8-weights",
                f"{name}: FP8 weights"
                + ("" if read_tensors else " (declared by the config; no weight files read)"),
                evidence(scan, part.strip(", ")),
                facts,
            )
        )
    if not fp8_n and (scan.fp8_scales or scan.e8m0):
        hist = Counter(scan.fp8_scales)
        if scan.e8m0:
            hist["F8_E8M0"] = scan.e8m0
        out.append(
            Detection(
                "fp8-scales",
                f"{name}: FP8 block scales (weights are not FP8)",
                evidence(scan, _histogram(hist)),
                facts,
            )
        )
    if (
        cfg.weights
        and read_tensors
        and not (fp8_n or fp4_n or scan.fp8_scales or scan.e8m0 or scan.markers)
    ):
        fam = "/".join(sorted(cfg.weights)).upper()
        out.append(
            Detection(
                "stale-config",
                f"{name}: stale config: config declares {fam} ({cfg.evidence()}) but the weights "
                "are not FP8/FP4; not an FP8 model, yet loaders will treat it as one",
                evidence(scan, _histogram(scan.dtypes)),
                facts,
            )
        )
    if cfg.kv:
        out.append(
            Detection(
                "fp8-kv-cache",
                f"{name}: checkpoint declares an FP8 KV cache",
                evidence(scan, _kv_part(scan)),
                facts,
            )
        )
    elif scan.kv_scales:
        out.append(
            Detection(
                "fp8-kv-cache",
                f"{name}: FP8 KV-cache scales (used only when served with an FP8 KV cache)",
                evidence(scan, _kv_part(scan)),
                facts,
                weak=True,
            )
        )
    return out


def _kv_part(scan: ModelScan) -> str:
    return f"{scan.kv_scales:,} k/v scale tensors" if scan.kv_scales else ""
