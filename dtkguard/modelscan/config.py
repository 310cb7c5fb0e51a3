"""Classify the quantisation a model's config files declare.

Read: ``config.json`` (``quantization_config``/``compression_config``, also nested under
``text_config`` and the like for VLMs), ModelOpt's ``hf_quant_config.json`` and auto-round's
``quantization_config.json`` sidecar. Every dict of a quantisation block is visited with the role
its position gives it (weights, activations, KV cache), so that an int4-weight, FP8-activation
scheme (compressed-tensors W4AFP8, ModelOpt ``W4A8_AWQ``) is told apart from FP8 weights. The
config is a hint; the tensor dtypes are the ground truth (see ``scan`` and ``detect``). The
fields read, per producer, are listed in docs/fp8.md.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator

from dtkguard.lightclass import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_CONFIG = 16 * 1024 * 1024
#: JSON values (strings, numbers, lists, objects) in one config or index: each costs about 100
#: bytes parsed, so that a file of ``[[],[],...]`` stays far below 256 MB (docs/limits.md)
MAX_JSON_VALUES = 500_000
#: evidence notes kept per model (a per-layer config can name thousands of layers)
MAX_DETAILS = 64

FP8_METHODS = frozenset(
    {"fp8", "fbgemm_fp8", "ptpc_fp8", "deepgemm_fp8", "mxfp8", "modelopt_fp8", "w8a8_fp8"}
)
FP4_METHODS = frozenset(
    {"mxfp4", "nvfp4", "fp_quant", "fouroversix", "petit_nvfp4", "modelopt_fp4", "quark_mxfp4"}
)
#: methods that quantise BF16/FP16 weights at load (vLLM ``PTPCFp8Config``, ``DeepSpeedFPConfig``)
ONLINE_METHODS = frozenset({"ptpc_fp8", "deepspeedfp"})
#: methods whose weights are integers but whose activations are FP8 (vLLM and SGLang ``w4afp8``)
FP8_ACT_METHODS = frozenset({"w4afp8", "mxfp_w4a8", "quark_int4fp8_moe"})
_QUANT_KEYS = ("quantization_config", "compression_config")
_NESTED = ("text_config", "llm_config", "language_config", "thinker_config")
#: keys whose values are exclusions or the KV cache (read on their own), never walked for roles
_SKIP = frozenset(
    {
        "kv_cache_scheme",
        "kv_cache_config",
        "ignore",
        "ignored_layers",
        "modules_to_not_convert",
        "exclude",
        "exclude_modules",
        "export",
    }
)
_WEIGHT_KEYS = frozenset({"weights", "weight"})
_ACT_KEYS = frozenset(
    {"input_activations", "output_activations", "input_tensors", "output_tensors", "activations"}
)


class ConfigError(ValueError):
    """A config file that is not readable JSON (one line)."""


@record
class QuantConfig:
    """What the config files say: each set holds ``fp8``/``fp4`` (``int`` for integer weights)."""

    source: str | None = None
    method: str | None = None
    weights: set[str] = field(default_factory=set)
    activations: set[str] = field(default_factory=set)
    kv: set[str] = field(default_factory=set)
    #: the config names an integer KV cache (``kv_cache_scheme.type = "int"``, ``INT8``)
    kv_int: bool = False
    #: the config names integer weights (``type: int``, ``W4A8_AWQ``, ``data_type: int``)
    int_weights: bool = False
    #: the method quantises at load: FP8/FP4 compute whatever the tensors hold
    online: bool = False
    #: ``expert_dtype: fp4`` (DeepSeek-V4): the MoE experts are FP4, packed into I8 tensors
    fp4_experts: bool = False
    details: list[str] = field(default_factory=list)
    _noted: set[str] = field(default_factory=set, repr=False, compare=False)

    @property
    def declared(self) -> bool:
        return bool(self.weights or self.activations or self.kv)

    def evidence(self) -> str:
        return " ".join(self.details)

    def families(self, role: str) -> list[str]:
        """Families declared for ``role`` (``weights``, ``activations``, ``kv``), ``int`` too."""
        found = {"weights": self.weights, "activations": self.activations, "kv": self.kv}[role]
        integer = {"weights": self.int_weights, "kv": self.kv_int}.get(role, False)
        return sorted(found | ({"int"} if integer else set()))

    def note(self, text: str) -> None:
        """Add ``text`` to the evidence once; at most ``MAX_DETAILS`` notes are kept."""
        if text not in self._noted and len(self._noted) < MAX_DETAILS:
            self._noted.add(text)
            self.details.append(text)


def load_json(
    path: str | os.PathLike[str], cap: int = MAX_CONFIG, what: str = "config"
) -> dict[str, Any]:
    """A JSON object from ``path``, refusing files larger than ``cap`` (``what`` names it)."""
    return read_json(path, cap, what)[0]


def read_json(
    path: str | os.PathLike[str], cap: int = MAX_CONFIG, what: str = "config"
) -> tuple[dict[str, Any], int]:
    """`load_json` and the number of bytes read (the whole file)."""
    from dtkguard.util.safe_read import TooLarge, read_capped
    from dtkguard.util.text import json_loads

    try:
        raw = read_capped(path, cap, what=what)
    except TooLarge as exc:
        raise ConfigError(str(exc)) from None
    # every value but the first follows a comma or opens a container (commas in strings count
    # too: an upper bound, counted before anything is parsed)
    if raw.count(b",") + raw.count(b"[") + raw.count(b"{") >= MAX_JSON_VALUES:
        raise ConfigError(f"{what} with more than the limit of {MAX_JSON_VALUES:,} JSON values")
    try:
        data = json_loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"not JSON: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise ConfigError("not a JSON object")
    return data, len(raw)


def _walk(obj: Any, role: str, depth: int = 0) -> Iterator[tuple[dict[str, Any], str]]:
    """Every dict under ``obj`` with its role: ``weights`` or ``activations``."""
    if depth > 12:
        return
    if isinstance(obj, dict):
        yield obj, role
        for key, value in obj.items():
            if key in _SKIP:
                continue
            sub = "weights" if key in _WEIGHT_KEYS else "activations" if key in _ACT_KEYS else role
            yield from _walk(value, sub, depth + 1)
    elif isinstance(obj, list):
        for value in obj[:1000]:
            yield from _walk(value, role, depth + 1)


def _small_float(num_bits: Any, kind: Any) -> str | None:
    if kind == "float" and num_bits == 8:
        return "fp8"
    if kind == "float" and num_bits in (4, 6):
        return "fp4"
    return None


def dtype_family(text: str) -> str | None:
    """``fp8``/``fp4``/``int`` for a dtype name in a config (``fp8_e4m3``, ``float8_e4m3fn``...)."""
    t = text.lower()
    if t.startswith(("fp8", "float8", "f8_", "e4m3", "e5m2")) and "e8m0" not in t:
        return "fp8"
    if t.startswith(("fp4", "fp6", "float4", "float6", "mxfp4", "mxfp6", "nvfp4", "e2m1")):
        return "fp4"
    if t.startswith(("int", "uint", "i4", "i8", "u4", "u8")):
        return "int"
    return None


def autoround_family(data_type: Any, bits: Any) -> str | None:
    """auto-round ``data_type`` (``nv_fp``, ``mx_fp``, ``fp``, ``mx_fp8e4m3``, ``int``) + bits."""
    if not isinstance(data_type, str):
        return None
    t = data_type.lower()
    if "int" in t:
        return "int"
    if "fp" not in t:
        return None
    digits = re.search(r"fp(\d+)", t)
    width = int(digits.group(1)) if digits else bits
    if not isinstance(width, int) or width >= 16:
        return None
    return "fp8" if width == 8 else "fp4" if width in (4, 6) else None


#: ModelOpt ``quant_algo`` -> (weights, activations); vLLM ``modelopt.py`` and ModelOpt's export
#: constants. Names not listed fall back to their spelling (``FP4``/``FP8``/``INT``).
MODELOPT_ALGOS: dict[str, tuple[str | None, str | None]] = {
    "FP8": ("fp8", "fp8"),
    "FP8_PER_CHANNEL_PER_TOKEN": ("fp8", "fp8"),
    "FP8_PB_WO": ("fp8", None),
    "FP8_PB_REAL": ("fp8", "fp8"),
    "FP8_BLOCK_SCALES": ("fp8", "fp8"),
    "MXFP8": ("fp8", "fp8"),
    "NVFP4": ("fp4", "fp4"),
    "NVFP4_AWQ": ("fp4", "fp4"),
    "W4A16_NVFP4": ("fp4", None),
    "W4A8_NVFP4_FP8": ("fp4", "fp8"),
    "MXFP4": ("fp4", "fp4"),
    "W4A8_MXFP4_FP8": ("fp4", "fp8"),
    "W4A8_AWQ": ("int", "fp8"),
    "INT4_AWQ": ("int", None),
    "W4A16_AWQ": ("int", None),
    "INT8_SQ": ("int", None),
    "W8A8_SQ_PER_CHANNEL": ("int", None),
    "INT8_WO": ("int", None),
    "INT4_WO": ("int", None),
    "MIXED_PRECISION": (None, None),
    "UNQUANTIZED": (None, None),
    "NONE": (None, None),
}


def algo_families(algo: str) -> tuple[str | None, str | None]:
    """(weights, activations) family of a ModelOpt ``quant_algo`` (upper case)."""
    if algo in MODELOPT_ALGOS:
        return MODELOPT_ALGOS[algo]
    if "FP4" in algo:
        return "fp4", None
    if "FP8" in algo:
        return "fp8", None
    if algo.startswith(("INT", "W4", "W8")):
        return "int", None
    return None, None


def _add(out: QuantConfig, role: str, fam: str | None) -> None:
    if fam is None:
        return
    if fam == "int":
        if role == "weights":
            out.int_weights = True
        return
    (out.weights if role == "weights" else out.activations).add(fam)


def _bits_and_type(d: dict[str, Any], role: str, out: QuantConfig, algos: Counter[str]) -> None:
    """compressed-tensors: ``num_bits`` and ``type`` of a weights or activations entry."""
    fam = _small_float(d.get("num_bits"), d.get("type"))
    if fam:
        _add(out, role, fam)
    elif d.get("type") == "int" and isinstance(d.get("num_bits"), int):
        _add(out, role, "int")


def _format(d: dict[str, Any], role: str, out: QuantConfig, algos: Counter[str]) -> None:
    """A ``format`` string naming an MX or NV float format."""
    fmt = d.get("format")
    if isinstance(fmt, str):
        f = fmt.lower()
        if any(x in f for x in ("nvfp4", "mxfp4", "mxfp6")):
            out.weights.add("fp4")
        elif "mxfp8" in f:
            out.weights.add("fp8")
        out.note(f"format={f}")


def _dtypes(d: dict[str, Any], role: str, out: QuantConfig, algos: Counter[str]) -> None:
    for key in ("dtype", "quant_dtype", "weight_dtype"):
        if isinstance(d.get(key), str):
            _add(out, role, dtype_family(d[key]))
    _expert_dtype(d, out)


def _quanto(d: dict[str, Any], role: str, out: QuantConfig, algos: Counter[str]) -> None:
    """quanto: ``weights: "float8"``, ``activations: ...``."""
    for key in ("weights", "activations"):
        if isinstance(d.get(key), str):
            _add(out, key, dtype_family(d[key]))
            out.note(f"{key}={d[key]}")


def _autoround(d: dict[str, Any], role: str, out: QuantConfig, algos: Counter[str]) -> None:
    """auto-round, top level and per layer (``extra_config``)."""
    if "data_type" in d:
        _add(out, "weights", autoround_family(d.get("data_type"), d.get("bits")))
        if isinstance(d["data_type"], str):
            out.note(f"data_type={d['data_type']}")
    act_bits = d.get("act_bits", 16)
    if "act_data_type" in d and isinstance(act_bits, int) and act_bits < 16:
        _add(out, "activations", autoround_family(d.get("act_data_type"), act_bits))
        if isinstance(d["act_data_type"], str):
            out.note(f"act_data_type={d['act_data_type']}")


def _torchao_entry(d: dict[str, Any], role: str, out: QuantConfig, algos: Counter[str]) -> None:
    if isinstance(d.get("_type"), str) and d["_type"].endswith("Config"):
        _torchao(d, out)


def _quant_algo(d: dict[str, Any], role: str, out: QuantConfig, algos: Counter[str]) -> None:
    """ModelOpt: a per-layer ``quant_algo`` (counted: the block notes those not its own)."""
    algo = d.get("quant_algo")
    if isinstance(algo, str) and algo:
        up = algo.upper()
        algos[up] += 1
        w, a = algo_families(up)
        _add(out, "weights", w)
        _add(out, "activations", a)


#: what each producer writes into a dict of a quantisation block, read in this order
_PRODUCER_READERS: tuple[Callable[[dict[str, Any], str, QuantConfig, Counter[str]], None], ...] = (
    _bits_and_type,
    _format,
    _dtypes,
    _quanto,
    _autoround,
    _torchao_entry,
    _quant_algo,
)


def _visit(d: dict[str, Any], role: str, out: QuantConfig, algos: Counter[str]) -> None:
    """One dict of a quantisation block, in its role, through every producer's reader."""
    for read in _PRODUCER_READERS:
        read(d, role, out, algos)


def _expert_dtype(d: dict[str, Any], out: QuantConfig) -> None:
    """DeepSeek-V4's ``expert_dtype`` (in config.json itself or its quantisation block)."""
    value = d.get("expert_dtype")
    if not isinstance(value, str):
        return
    fam = dtype_family(value)
    _add(out, "weights", fam)
    if fam == "fp4":
        out.fp4_experts = True
    out.note(f"expert_dtype={value}")


#: torchao config class names, by the part naming a format -> family (``Float8``, ``NVFP4``...)
_TORCHAO_PARTS = (
    ("float8", "fp8"),
    ("mxfp8", "fp8"),
    ("fp8", "fp8"),
    ("nvfp4", "fp4"),
    ("mxfp4", "fp4"),
    ("mxfp6", "fp4"),
    ("float4", "fp4"),
    ("fp4", "fp4"),
    ("uint", "int"),
    ("int", "int"),
    ("mx", "fp8"),  # an MX config whose dtypes are not serialised: MXFP8 is torchao's default
)


def _torchao_part(text: str) -> str | None:
    low = text.lower()
    return next((fam for part, fam in _TORCHAO_PARTS if part in low), None)


def _torch_dtype(value: Any) -> str | None:
    """The family of a serialised ``{"_type": "torch.dtype", "_data": "float8_e4m3fn"}``."""
    if isinstance(value, dict) and value.get("_type") == "torch.dtype":
        data = value.get("_data")
        return dtype_family(data) if isinstance(data, str) else None
    return None


def _torchao(d: dict[str, Any], out: QuantConfig) -> None:
    """A torchao config (``TorchAoConfig.quant_type``): the class name says the scheme
    (``Float8DynamicActivationInt4WeightConfig``: FP8 activations over int4 weights), the
    serialised ``weight_dtype``/``activation_dtype`` say it for the MX configs."""
    name = d["_type"]
    split = re.match(r"(.*?)(?:Dynamic|Static)Activation(.*)", name)
    act_part, weight_part = split.groups() if split else ("", name)
    weights, acts = _torchao_part(weight_part), _torchao_part(act_part)
    data = d.get("_data")
    if isinstance(data, dict):
        weights = _torch_dtype(data.get("weight_dtype")) or weights
        acts = _torch_dtype(data.get("activation_dtype")) or acts
    if weights is None and acts is None:
        return
    _add(out, "weights", weights)
    _add(out, "activations", acts)
    out.note(f"torchao {name}")


def _fp8_weights(qc: dict[str, Any], out: QuantConfig) -> None:
    out.weights.add("fp8")


def _fp4_weights(qc: dict[str, Any], out: QuantConfig) -> None:
    out.weights.add("fp4")


def _fp8_activations(qc: dict[str, Any], out: QuantConfig) -> None:
    out.activations.add("fp8")
    out.int_weights = True


def _deepspeed_fp(qc: dict[str, Any], out: QuantConfig) -> None:
    """vLLM ``DeepSpeedFPConfig``: FP8 or FP6 weights by ``bits``."""
    bits = qc.get("bits")
    _add(out, "weights", "fp8" if bits == 8 else "fp4" if bits == 6 else None)


#: what a producer's ``quant_method`` declares, method by method (the rest: nothing by name)
_METHOD_DECLARES: dict[str, Callable[[dict[str, Any], QuantConfig], None]] = {
    **dict.fromkeys(FP8_METHODS, _fp8_weights),
    **dict.fromkeys(FP4_METHODS, _fp4_weights),
    **dict.fromkeys(FP8_ACT_METHODS, _fp8_activations),
    "deepspeedfp": _deepspeed_fp,
}
#: keys of a quantisation block noted as they are (the producer's own words for its format)
_NOTED_KEYS = ("fmt", "scale_fmt", "quant_dtype", "packing_format")


def classify_quant(qc: dict[str, Any], out: QuantConfig) -> None:
    """Add what one quantisation block declares to ``out``: its method, its format notes, what
    its per-layer entries hold, its KV cache."""
    algo = _method(qc, out)
    _format_notes(qc, out)
    _per_layer(qc, out, algo)
    _classify_kv(qc, out)


def _method(qc: dict[str, Any], out: QuantConfig) -> str:
    """The block's ``quant_method`` (or ``quant_library``) through `_METHOD_DECLARES`; its
    ``quant_algo``, upper case ("" none)."""
    method = str(qc.get("quant_method") or qc.get("quant_library") or "").lower() or None
    algo = str(qc.get("quant_algo") or "").upper()
    out.method = out.method or method or (algo.lower() or None)
    if method:
        out.note(f"quant_method={method}")
    out.online = out.online or method in ONLINE_METHODS
    declares = _METHOD_DECLARES.get(method or "")
    if declares is not None:
        declares(qc, out)
    if algo:
        out.note(f"quant_algo={algo}")
    return algo


def _format_notes(qc: dict[str, Any], out: QuantConfig) -> None:
    for key in _NOTED_KEYS:
        if isinstance(qc.get(key), str):
            out.note(f"{key}={qc[key]}")
    block = qc.get("weight_block_size")
    if isinstance(block, list):
        out.note("block [" + ",".join(str(b) for b in block[:4]) + "]")


def _per_layer(qc: dict[str, Any], out: QuantConfig, algo: str) -> None:
    """Roles of the block's nested entries (Quark's KV cache tensors apart); a note of the
    per-layer ``quant_algo`` values other than the block's own."""
    kv_tensors = _classify_quark_kv(qc, out)
    algos: Counter[str] = Counter()
    for d, role in _walk(qc, "weights"):
        if id(d) not in kv_tensors:
            _visit(d, role, out, algos)
    per_layer = Counter({k: n for k, n in algos.items() if k != algo})
    if per_layer:
        shown = [f"{n}x {k}" for k, n in per_layer.most_common(8)]
        if len(per_layer) > 8:
            shown.append(f"{len(per_layer) - 8} more")
        out.note("per-layer quant_algo " + ", ".join(shown))


def _classify_kv(qc: dict[str, Any], out: QuantConfig) -> None:
    scheme = qc.get("kv_cache_scheme")
    if isinstance(scheme, dict):
        fam = _small_float(scheme.get("num_bits"), scheme.get("type"))
        if fam:
            out.kv.add(fam)
            out.note(f"kv_cache_scheme={fam}")
        elif scheme.get("type") == "int":
            out.kv_int = True
            out.note(f"kv_cache_scheme=int{scheme.get('num_bits', '')}")
    elif isinstance(scheme, str) and scheme.upper() in ("FP8", "STATIC"):
        out.kv.add("fp8")
        out.note(f"kv_cache_scheme={scheme}")
    algo = qc.get("kv_cache_quant_algo")
    if isinstance(algo, str):
        fam = dtype_family(algo)
        if fam == "int":
            out.kv_int = True
        elif fam:
            out.kv.add(fam)
        if fam:
            out.note(f"kv_cache_quant_algo={algo}")


def _classify_quark_kv(qc: dict[str, Any], out: QuantConfig) -> set[int]:
    """Quark: ``export.kv_cache_group`` names layers whose ``output_tensors`` are the KV cache.

    Returns the ids of those ``output_tensors`` dicts (they are not activations).
    """
    seen: set[int] = set()
    export = qc.get("export")
    group = export.get("kv_cache_group") if isinstance(export, dict) else None
    layers = qc.get("layer_quant_config")
    if not isinstance(group, list) or not group or not isinstance(layers, dict):
        return seen
    patterns = [p for p in group[:64] if isinstance(p, str)]
    for name, cfg in layers.items():
        if not isinstance(cfg, dict) or not any(fnmatch.fnmatchcase(name, p) for p in patterns):
            continue
        tensors = cfg.get("output_tensors")
        if not isinstance(tensors, dict):
            continue
        seen.add(id(tensors))
        dtype = tensors.get("dtype")
        fam = dtype_family(dtype) if isinstance(dtype, str) else None
        if fam == "int":
            out.kv_int = True
        elif fam:
            out.kv.add(fam)
        if fam:
            out.note(f"kv_cache_group {name} output_tensors={dtype}")
    return seen


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
    for holder in [config, *(config.get(k) for k in _NESTED)]:
        if isinstance(holder, dict) and isinstance(holder.get("expert_dtype"), str):
            out.source = out.source or "config.json"
            _expert_dtype(holder, out)
    for key in ("torch_dtype", "dtype"):
        value = config.get(key)
        fam = dtype_family(value) if isinstance(value, str) else None
        if fam in ("fp8", "fp4"):
            out.source = out.source or "config.json"
            out.weights.add(fam)
            out.note(f"{key}={value}")
    return out


def is_mla(config: dict[str, Any]) -> bool:
    """The model uses multi-head latent attention (``kv_lora_rank``, nested VLM configs too)."""
    holders = [config, *(config.get(k) for k in _NESTED)]
    return any(isinstance(h, dict) and h.get("kv_lora_rank") for h in holders)


def classify_hf_quant_config(data: dict[str, Any], out: QuantConfig | None = None) -> QuantConfig:
    """Classify ModelOpt's hf_quant_config.json (``{"quantization": {"quant_algo": ...}}``)."""
    out = out or QuantConfig()
    block = data.get("quantization")
    if isinstance(block, dict):
        out.source = out.source or "hf_quant_config.json"
        classify_quant(block, out)
    return out


def classify_sidecar(data: dict[str, Any], out: QuantConfig | None = None) -> QuantConfig:
    """Classify auto-round's ``quantization_config.json`` (the quantisation block itself)."""
    out = out or QuantConfig()
    out.source = out.source or "quantization_config.json"
    classify_quant(data, out)
    return out


#: gpt-oss ``original/dtypes.json`` tags: ``FP4`` packed values, ``UE8`` E8M0 block scales
_DTYPES_JSON = {"FP4": "fp4", "UE8": "e8m0", "FP8": "fp8"}


def classify_dtypes_json(data: dict[str, Any], out: QuantConfig | None = None) -> QuantConfig:
    """Classify gpt-oss's ``original/dtypes.json`` (tensor name -> ``BF16``/``FP4``/``UE8``)."""
    out = out or QuantConfig()
    counts: Counter[str] = Counter()
    for value in data.values():
        if isinstance(value, str):
            tag = value.upper()
            fam = _DTYPES_JSON.get(tag) or dtype_family(value)
            if fam in ("fp4", "fp8", "e8m0"):
                counts[tag] += 1
                if fam != "e8m0":
                    out.weights.add(fam)
    if counts:
        out.source = out.source or "dtypes.json"
        out.note("dtypes.json " + ", ".join(f"{n} {t}" for t, n in counts.most_common()))
    return out
