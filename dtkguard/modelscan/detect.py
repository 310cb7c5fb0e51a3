"""Turn a :class:`ModelScan` into named detections with evidence and remediation.

The tensors are the ground truth and the config a hint: FP8 tensors make FP8 weights whatever
the config says. A model needs FP8 when its weights, its activations (W4AFP8, ``W4A8_AWQ``: int4
weights, FP8 compute) or its KV cache are FP8. A config whose declared scheme the tensors
contradict entirely (plain float tensors, not one scale or packed tensor) is a stale config:
DeepSeek's ``fp8_cast_bf16.py`` rewrites the weights but leaves ``quant_method: fp8``.

``detect`` runs a table of small detectors over facts gathered once (:class:`Evidence`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from dtkguard.lightclass import field, record
from dtkguard.modelscan import dtypes
from dtkguard.modelscan.scan import ModelScan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: detection -> the Fp8Rule kind its severity comes from
KIND = {
    "fp8-weights": "weights",
    "fp8-scales": "weights",
    "fp4-weights": "weights",
    "fp8-activations": "weights",
    "fp8-kv-cache": "kv_cache",
    "stale-config": "weights",
    "config-mismatch": "weights",
}
#: detection -> rule id of its finding
RULE = {"stale-config": "fp8-weights", "config-mismatch": "fp8-weights"}

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
    "fp8-activations": (
        "The weights are integers but the scheme computes with FP8 activations (W4AFP8, "
        "W4A8_AWQ): the card needs FP8 matmuls. Keep quantization_config (the int4 weights need "
        "it) and use an integer-activation variant instead (W4A16 such as AWQ/GPTQ, or W8A8 "
        "INT8), or the BF16 model. FP8 needs a BW1100 card."
    ),
    "fp8-kv-cache": (
        "Serve with the KV cache in the model dtype: vLLM/SGLang/TGI --kv-cache-dtype auto, "
        "LMDeploy --quant-policy 0 (or 8 for INT8); drop kv_cache_scheme / "
        "kv_cache_quant_algo from the config if the serving stack applies it by default."
    ),
    "config-mismatch": (
        "The config declares FP8/FP4 weights but the tensors hold another quantisation: make "
        "quantization_config describe what the tensors hold (re-export with the quantiser that "
        "wrote them); do not delete it, the quantised weights need it."
    ),
}

_STALE = (
    "The tensors are plain {dtypes} with no scale, zero-point or packed tensor: the "
    "quantisation was undone by a converter. Remove {where} so that transformers and vLLM load "
    "the model as {dtypes}."
)


@record
class Detection:
    """One thing found in one model. ``weak``: a hint only (severity capped at low)."""

    kind: str
    message: str
    evidence: str
    facts: dict[str, Any] = field(default_factory=dict)
    weak: bool = False
    fix: str | None = None

    @property
    def remediation(self) -> str:
        return self.fix or REMEDIATION[self.kind]

    @property
    def rule(self) -> str:
        return RULE.get(self.kind, self.kind)


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
    cfg = scan.config
    if cfg.declared or cfg.method or cfg.int_weights or cfg.kv_int:
        facts["config"] = {
            "source": cfg.source,
            "quant_method": cfg.method,
            "weights": cfg.families("weights"),
            "activations": cfg.families("activations"),
            "kv_cache": cfg.families("kv"),
            "details": cfg.details,
        }
    if scan.pickle_globals:
        facts["pickle_globals"] = dict(scan.pickle_globals)
    if scan.gguf_types:
        facts["gguf_types"] = dict(scan.gguf_types)
    counts = {
        "scale_inv_tensors": scan.scale_inv,
        "kv_scale_tensors": scan.kv_scales,
        "u8_scales": scan.u8_scales,
        "quant_tensors": scan.quant_tensors,
        "missing_shards": scan.missing_shards,
    }
    facts.update({k: n for k, n in counts.items() if n})
    return facts


@record
class Evidence:
    """What every detector needs, computed once per model."""

    scan: ModelScan
    facts: dict[str, Any]
    read_tensors: bool
    fp8_pickle: Counter[str]
    fp4_pickle: Counter[str]
    gguf_fp4: Counter[str]
    fp8_n: int
    fp4_n: int
    u8_fp4: int
    #: U8 ``weight_packed``/``*_blocks`` taken as packed FP4
    packed_fp4: int
    #: I8 expert weights that ``expert_dtype: fp4`` says are packed FP4 (DeepSeek-V4)
    i8_fp4: int
    #: U8 scale tensors that are E8M0 exponents (beside FP4/FP8 values or an MX config)
    e8m0_u8: int
    #: index tensor names standing in for shards that are missing
    index_scale_inv: int
    index_packed: int
    index_weight_scales: int

    @classmethod
    def of(cls, scan: ModelScan) -> Evidence:
        cfg = scan.config
        fp8_pickle = Counter(
            {
                g: n
                for g, n in scan.pickle_globals.items()
                if dtypes.torch_family(g.rsplit(".", 1)[-1]) == "fp8"
            }
        )
        fp4_pickle = Counter(
            {
                g: n
                for g, n in scan.pickle_globals.items()
                if dtypes.torch_family(g.rsplit(".", 1)[-1]) == "fp4"
            }
        )
        gguf_fp4 = Counter({t: n for t, n in scan.gguf_types.items() if t in dtypes.GGML_FP4})
        fp8_n = sum(scan.fp8_values.values()) + sum(fp8_pickle.values())
        # ModelOpt NVFP4 keeps packed FP4 in U8 ``weight`` tensors next to F8_E4M3 block scales
        u8_fp4 = scan.u8_weights if ("fp4" in cfg.weights or scan.fp8_scales) else 0
        # U8 ``weight_packed``/``*_blocks`` are FP4 unless the config says integer weights only
        packed = 0 if cfg.int_weights and "fp4" not in cfg.weights else scan.packed_u8
        i8_fp4 = scan.i8_experts if cfg.fp4_experts else 0
        fp4_n = (
            sum(scan.fp4_values.values())
            + packed
            + i8_fp4
            + u8_fp4
            + sum(fp4_pickle.values())
            + sum(gguf_fp4.values())
        )
        mx_context = fp8_n or fp4_n or cfg.weights or scan.e8m0
        index = scan.index if scan.missing_shards else None
        return cls(
            scan=scan,
            facts=_facts(scan),
            read_tensors=scan.tensors > 0 or scan.pickles > 0 or scan.ggufs > 0,
            fp8_pickle=fp8_pickle,
            fp4_pickle=fp4_pickle,
            gguf_fp4=gguf_fp4,
            fp8_n=fp8_n,
            fp4_n=fp4_n,
            u8_fp4=u8_fp4,
            packed_fp4=packed,
            i8_fp4=i8_fp4,
            e8m0_u8=scan.u8_scales if mx_context else 0,
            index_scale_inv=max(0, index.scale_inv - scan.scale_inv) if index else 0,
            index_packed=index.packed if index else 0,
            index_weight_scales=index.weight_scales if index else 0,
        )

    @property
    def name(self) -> str:
        return self.scan.name

    @property
    def float_tensors(self) -> bool:
        """Tensors were read and they carry FP8/FP4 values or scales."""
        s = self.scan
        return bool(self.fp8_n or self.fp4_n or s.fp8_scales or s.e8m0 or self.e8m0_u8 or s.markers)

    @property
    def quantised_otherwise(self) -> bool:
        """Tensors of another quantisation: scales, zero points, packed integers."""
        s = self.scan
        ints = sum(n for d, n in s.dtypes.items() if d in dtypes.INT_DTYPES)
        return bool(s.quant_tensors or ints or s.pickle_globals or s.gguf_types)

    def made(self, kind: str, message: str, part: str, **kw: Any) -> Detection:
        return Detection(kind, message, evidence(self.scan, part), self.facts, **kw)


def _suffix(ev: Evidence) -> str:
    if ev.scan.config.online:
        return " (quantised at load by the engine)"
    if ev.read_tensors:
        return ""
    if ev.scan.missing_shards:
        return f" (from the index; {ev.scan.missing_shards:,} shards missing)"
    return " (declared by the config; no weight files read)"


def _fp4_weights(ev: Evidence) -> Detection | None:
    cfg = ev.scan.config
    declared = "fp4" in cfg.weights and (not ev.read_tensors or cfg.online)
    if not (ev.fp4_n or ev.index_packed or declared):
        return None
    hist = ev.scan.fp4_values + ev.gguf_fp4
    if ev.packed_fp4 + ev.u8_fp4:
        hist["U8 (packed FP4)"] = ev.packed_fp4 + ev.u8_fp4
    if ev.i8_fp4:
        hist["I8 (packed FP4 experts)"] = ev.i8_fp4
    part = _histogram(hist) + "".join(f"; pickle global {g}" for g in ev.fp4_pickle)
    if ev.index_packed and not ev.fp4_n:
        hint = f"index names {ev.index_packed:,} packed FP4 tensors (*_blocks, weight_packed)"
        part = ", ".join(p for p in (part, hint) if p)
    return ev.made("fp4-weights", f"{ev.name}: FP4 weights{_suffix(ev)}", part)


def _fp8_weights(ev: Evidence) -> Detection | None:
    s, cfg = ev.scan, ev.scan.config
    declared = "fp8" in cfg.weights and (not ev.read_tensors or cfg.online) and not ev.fp4_n
    if not (ev.fp8_n or s.markers or declared or ev.index_scale_inv):
        return None
    part = _histogram(s.fp8_values)
    if s.scale_inv:
        part += f", {s.scale_inv:,} *_scale_inv"
    if ev.index_scale_inv:
        part += f", index names {ev.index_scale_inv:,} *_scale_inv in missing shards"
    part += "".join(f"; pickle global {g}" for g in ev.fp8_pickle)
    part += "".join(f"; marker tensor {m}" for m in s.markers)
    return ev.made("fp8-weights", f"{ev.name}: FP8 weights{_suffix(ev)}", part.strip(", "))


def _fp8_scales(ev: Evidence) -> Detection | None:
    s = ev.scan
    if ev.fp8_n or s.markers or not (s.fp8_scales or s.e8m0 or ev.e8m0_u8):
        return None
    hist = Counter(s.fp8_scales)
    if s.e8m0:
        hist["F8_E8M0"] = s.e8m0
    if ev.e8m0_u8:
        hist["U8 (E8M0 scales)"] = ev.e8m0_u8
    return ev.made(
        "fp8-scales", f"{ev.name}: FP8 block scales (weights are not FP8)", _histogram(hist)
    )


def _fp8_activations(ev: Evidence) -> Detection | None:
    """FP8 activations over weights that are not FP8/FP4 (int4 W4AFP8, W4A8_AWQ)."""
    cfg = ev.scan.config
    if not cfg.activations or cfg.weights or ev.fp8_n or ev.fp4_n or ev.index_scale_inv:
        return None  # FP8/FP4 weights: their detection already says the card needs FP8
    if ev.read_tensors and not ev.float_tensors and not ev.quantised_otherwise:
        return None  # plain tensors: the stale-config detector speaks
    fam = "/".join(sorted(cfg.activations)).upper()
    weights = "integer" if cfg.int_weights else "non-FP8"
    part = _histogram(Counter({d: n for d, n in ev.scan.dtypes.items() if d in dtypes.INT_DTYPES}))
    return ev.made(
        "fp8-activations",
        f"{ev.name}: {fam} activations over {weights} weights: needs {fam} compute{_suffix(ev)}",
        part,
    )


def _stale_config(ev: Evidence) -> Detection | None:
    """Declared FP8/FP4 (weights or activations), but every tensor read is plain float."""
    cfg = ev.scan.config
    if not (cfg.weights or cfg.activations) or not ev.read_tensors or cfg.online:
        return None
    if ev.float_tensors or ev.quantised_otherwise or ev.scan.missing_shards:
        return None
    fam = "/".join(sorted(cfg.weights | cfg.activations)).upper()
    plain = "/".join(d for d, _ in ev.scan.dtypes.most_common()) or "float"
    where = {
        "hf_quant_config.json": "hf_quant_config.json",
        "quantization_config.json": "quantization_config.json",
        "dtypes.json": "the FP4/UE8 entries of dtypes.json",
    }.get(cfg.source or "", "quantization_config from config.json")
    return ev.made(
        "stale-config",
        f"{ev.name}: stale config: config declares {fam} ({cfg.evidence()}) but the tensors are "
        f"plain {plain}; not an FP8 model, yet loaders will treat it as one",
        _histogram(ev.scan.dtypes),
        fix=_STALE.format(dtypes=plain, where=where),
    )


def _config_mismatch(ev: Evidence) -> Detection | None:
    """Declared FP8/FP4 weights over tensors of another (integer) quantisation."""
    cfg = ev.scan.config
    if not cfg.weights or not ev.read_tensors or ev.float_tensors:
        return None
    if not ev.quantised_otherwise:
        return None
    fam = "/".join(sorted(cfg.weights)).upper()
    ints = Counter({d: n for d, n in ev.scan.dtypes.items() if d in dtypes.INT_DTYPES})
    return ev.made(
        "config-mismatch",
        f"{ev.name}: config declares {fam} weights ({cfg.evidence()}) but the tensors hold "
        "another quantisation; loaders will pick FP8/FP4 kernels from the config",
        _histogram(ints) or f"{ev.scan.quant_tensors:,} scale/packed tensors",
    )


def _kv_part(scan: ModelScan) -> str:
    return f"{scan.kv_scales:,} k/v scale tensors" if scan.kv_scales else ""


def _kv_cache(ev: Evidence) -> Detection | None:
    s = ev.scan
    if s.config.kv:
        return ev.made(
            "fp8-kv-cache", f"{ev.name}: checkpoint declares an FP8 KV cache", _kv_part(s)
        )
    if s.kv_scales and not s.config.kv_int:
        return ev.made(
            "fp8-kv-cache",
            f"{ev.name}: FP8 KV-cache scales (used only when served with an FP8 KV cache)",
            _kv_part(s),
            weak=True,
        )
    return None


def _index_hint(ev: Evidence) -> Detection | None:
    """Quantised weights named by the index in shards that are missing: format unknown."""
    if not ev.index_weight_scales or ev.float_tensors or ev.scan.config.declared:
        return None
    if ev.index_scale_inv or ev.index_packed:
        return None
    return ev.made(
        "fp8-weights",
        f"{ev.name}: quantised weights of unknown format (FP8 possible){_suffix(ev)}",
        f"index names {ev.index_weight_scales:,} *.weight_scale tensors",
        weak=True,
    )


#: the detectors, in report order; each looks at one question
DETECTORS: tuple[Callable[[Evidence], Detection | None], ...] = (
    _fp4_weights,
    _fp8_weights,
    _fp8_scales,
    _fp8_activations,
    _stale_config,
    _config_mismatch,
    _index_hint,
    _kv_cache,
)


def detect(scan: ModelScan) -> list[Detection]:
    """Every FP8/FP4 detection for one scanned model (empty for a clean model)."""
    ev = Evidence.of(scan)
    return [d for d in (detector(ev) for detector in DETECTORS) if d is not None]
