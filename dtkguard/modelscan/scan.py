"""Scan model folders and files: config, index, safetensors headers, pickles, GGUF headers.

Only headers are read, never tensor data, and pickles are never unpickled. Unreadable or
hostile files become ``problems`` of the scan (one line each); they never stop it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from itertools import compress, repeat
from operator import contains, itemgetter, methodcaller

from dtkguard.lightclass import field, record
from dtkguard.modelscan import dtypes
from dtkguard.modelscan.config import (
    ConfigError,
    QuantConfig,
    classify_config,
    classify_dtypes_json,
    classify_hf_quant_config,
    classify_sidecar,
    is_mla,
    read_json,
)
from dtkguard.modelscan.index import IndexInfo, read_index
from dtkguard.modelscan.layout import INDEX_SUFFIX, ModelSource, find_models, weight_format
from dtkguard.modelscan.names import Names
from dtkguard.modelscan.safetensors_header import HeaderError, SafetensorsHeader, read_header
from dtkguard.util.safe_read import reason

MARKER_TENSORS = ("scaled_fp8",)


@record
class ModelScan:
    """What one model is made of, as far as dtkguard can tell from headers."""

    path: str
    name: str
    config: QuantConfig = field(default_factory=QuantConfig)
    index: IndexInfo | None = None
    shards: int = 0
    tensors: int = 0
    dtypes: Counter[str] = field(default_factory=Counter)
    #: FP8 (value formats) on tensors that are not scales, by dtype
    fp8_values: Counter[str] = field(default_factory=Counter)
    #: FP8 on scale tensors (NVFP4 block scales), by dtype
    fp8_scales: Counter[str] = field(default_factory=Counter)
    e8m0: int = 0
    fp4_values: Counter[str] = field(default_factory=Counter)
    packed_u8: int = 0
    #: U8 tensors named like values (``*.weight``): packed FP4 when the config or scales say so
    u8_weights: int = 0
    scale_inv: int = 0
    kv_scales: int = 0
    #: tensors only a quantised checkpoint has (scales, zero points, packed values), counted
    #: in shards without FP8/FP4 tensors (it matters only to a model without them)
    quant_tensors: int = 0
    #: U8 scale tensors: E8M0 microscaling exponents stored as bytes (gpt-oss, MXFP4/MXFP8)
    u8_scales: int = 0
    #: shards the index names that are not in the folder
    missing_shards: int = 0
    #: config.json describes multi-head latent attention (DeepSeek, Kimi: ``kv_lora_rank``)
    mla: bool = False
    markers: list[str] = field(default_factory=list)
    pickles: int = 0
    pickle_globals: Counter[str] = field(default_factory=Counter)
    ggufs: int = 0
    gguf_types: Counter[str] = field(default_factory=Counter)
    #: I8 expert weights (``*.experts.*.weight``): packed FP4 when the config says
    #: ``expert_dtype: fp4`` (DeepSeek-V4), INT8 otherwise
    i8_experts: int = 0
    #: bytes read by each reader that produced evidence (`READERS`); a reader that failed
    #: adds a problem instead
    read: Counter[str] = field(default_factory=Counter)
    problems: list[tuple[str, str]] = field(default_factory=list)
    #: what the verdict rests on when the weights are absent (config-only, shards missing)
    notes: list[str] = field(default_factory=list)

    @property
    def weight_files(self) -> int:
        return self.shards + self.pickles + self.ggufs

    @property
    def bytes_read(self) -> int:
        return sum(self.read.values())

    @property
    def weights_read(self) -> bool:
        """A weight file (safetensors header, pickle, GGUF header) was read."""
        return self.weight_files > 0

    def summary(self) -> dict[str, object]:
        """The JSON facts of this model: what was read, by which reader, in bytes."""
        return {
            "path": self.path,
            "name": self.name,
            "shards": self.shards,
            "tensors": self.tensors,
            "bytes_read": self.bytes_read,
            "read": {r: self.read[r] for r in READERS if r in self.read},
            "weights_read": self.weights_read,
            "notes": list(self.notes),
        }


#: every reader of a model, in the order `ModelScan.read` reports them: a model was read when
#: any of them produced evidence (docs/fp8.md says what each reads)
READERS = ("config", "sidecar", "index", "safetensors", "pickle", "gguf")


_INTERESTING = frozenset({"U8", "I8"})


def _add_tensors(scan: ModelScan, header: SafetensorsHeader) -> None:
    """Histogram the dtypes; look at names only where the dtype or suffix calls for it (each
    look is one pass in C over the names: a checkpoint has hundreds of thousands)."""
    names, dts = header.names, header.dtypes
    counts = Counter(dts)
    scan.tensors += len(names)
    scan.dtypes.update(counts)
    endings = Names(names)
    scan.scale_inv += endings.ending("_scale_inv")
    scan.kv_scales += endings.ending(dtypes.KV_SCALE_SUFFIXES)
    for marker in MARKER_TENSORS:
        if marker not in scan.markers and endings.has_leaf(marker):
            scan.markers.append(marker)
    families = {d: dtypes.family(d) for d in counts}
    if not any(f != "other" for f in families.values()):
        # other quantisation matters only to a model without FP8/FP4 tensors (stale config)
        scan.quant_tensors += endings.ending(dtypes.QUANT_SUFFIXES)
    _add_fp8(scan, names, dts, [d for d, f in families.items() if f == "fp8"])
    for dtype, fam in families.items():
        if dtype in _INTERESTING or fam in ("e8m0", "fp4"):
            _add_family(scan, dtype, fam, list(compress(names, map(dtype.__eq__, dts))))


def _add_fp8(scan: ModelScan, names: list[str], dts: list[str], fp8: list[str]) -> None:
    """Count FP8 tensors as scales (`dtypes.is_scale_name`) or values, each dtype entering its
    counter at its first tensor there (the order `_histogram` breaks ties by)."""
    adds = []
    for dtype in fp8:
        chosen = list(map(dtype.__eq__, dts))
        scale = _scale_flags(list(compress(names, chosen)))
        where = list(compress(range(len(dts)), chosen)) if len(fp8) > 1 else None
        for counter, flag in ((scan.fp8_scales, True), (scan.fp8_values, False)):
            if flag in scale:
                first = where[scale.index(flag)] if where else 0
                adds.append((first, counter, dtype, scale.count(flag)))
    for _, counter, dtype, n in sorted(adds, key=itemgetter(0)):
        counter[dtype] += n


def _scale_flags(names: list[str]) -> list[bool]:
    """`dtypes.is_scale_name` of each name: "scale" in the last dotted part (looked for there
    only in names that hold it at all)."""
    flags = list(map(contains, names, repeat("scale")))
    for i in compress(range(len(flags)), flags):
        flags[i] = "scale" in names[i].rpartition(".")[2]
    return flags


def _add_family(scan: ModelScan, dtype: str, fam: str, names: list[str]) -> None:
    """Count the ``names`` of one E8M0, FP4, U8 or I8 ``dtype`` by what they hold."""
    if fam == "e8m0":
        scan.e8m0 += len(names)
    elif fam == "fp4":
        scan.fp4_values[dtype] += len(names)
    elif dtype == "I8":
        experts = filter(methodcaller("__contains__", ".experts."), names)
        scan.i8_experts += sum(map(methodcaller("endswith", ".weight"), experts))
    else:
        for name in names:
            if dtypes.is_scale_name(name):
                scan.u8_scales += 1
            elif dtypes.is_packed_fp4_name(name):
                scan.packed_u8 += 1
            elif name.rpartition(".")[2] == "weight":
                scan.u8_weights += 1


def _read_safetensors(scan: ModelScan, path: str) -> None:
    try:
        header = read_header(path)
    except (HeaderError, OSError) as exc:
        scan.problems.append((path, _why(exc)))
        return
    scan.shards += 1
    scan.read["safetensors"] += header.bytes_read
    _add_tensors(scan, header)


def _read_pickle(scan: ModelScan, path: str) -> None:
    # on first use: pickletools and zipfile (bz2, lzma, shutil, threading) cost a
    # safetensors-only scan its start-up
    from dtkguard.modelscan.pickle_globals import PickleScanError, read_globals

    try:
        found = read_globals(path)
    except (PickleScanError, OSError) as exc:
        scan.problems.append((path, _why(exc)))
        return
    scan.pickles += 1
    scan.read["pickle"] += found.bytes_read
    for dotted, count in found.globals.items():
        module, _, leaf = dotted.rpartition(".")
        if module.startswith("torch") and dtypes.torch_family(leaf) != "other":
            scan.pickle_globals[dotted] += count


def _read_gguf(scan: ModelScan, path: str) -> None:
    from dtkguard.modelscan.gguf import GgufError, read_gguf

    try:
        header = read_gguf(path)
    except (GgufError, OSError) as exc:
        scan.problems.append((path, _why(exc)))
        return
    scan.ggufs += 1
    scan.read["gguf"] += header.bytes_read
    scan.gguf_types.update(header.types)


def _why(exc: Exception) -> str:
    """Why a file could not be read: a format error's text, else the OS's reason."""
    return reason(exc) if isinstance(exc, OSError) else str(exc)


def scan_source(src: ModelSource) -> ModelScan:
    """Scan one model found by :func:`find_models`."""
    scan = ModelScan(path=src.path, name=src.name, problems=list(src.problems))
    for path in src.files:
        try:
            _read_config_file(scan, src, path)
        except (ConfigError, OSError) as exc:
            scan.problems.append((path, _why(exc)))
    readers = {"safetensors": _read_safetensors, "pickle": _read_pickle, "gguf": _read_gguf}
    for path in src.files:
        fmt = weight_format(path)
        if fmt is not None:
            readers[fmt](scan, path)
    _check_index(scan, src)
    if scan.read and not scan.weights_read and not scan.problems:
        judged = [r for r in ("config", "sidecar", "index") if r in scan.read]
        scan.notes.append(
            f"{scan.path}: no weight file read; judged by the {', '.join(judged)} only"
        )
    return scan


def _read_config_file(scan: ModelScan, src: ModelSource, path: str) -> None:
    """Read ``path`` if it is a config, sidecar or index file (each counted in ``scan.read``)."""
    base = os.path.basename(path)
    if base == "config.json" and _top(path, src):
        data, size = read_json(path)
        classify_config(data, scan.config)
        scan.mla = is_mla(data)
        scan.read["config"] += size
    elif base == "hf_quant_config.json":
        data, size = read_json(path)
        classify_hf_quant_config(data, scan.config)
        scan.read["sidecar"] += size
    elif base == "quantization_config.json" and _top(path, src):
        data, size = read_json(path)
        classify_sidecar(data, scan.config)
        scan.read["sidecar"] += size
    elif base == "dtypes.json":
        data, size = read_json(path)
        classify_dtypes_json(data, scan.config)
        scan.read["sidecar"] += size
    elif base.endswith(INDEX_SUFFIX) and scan.index is None:
        scan.index = read_index(path)
        scan.read["index"] += scan.index.bytes_read
        scan.problems.extend((path, p) for p in scan.index.problems)


def _top(path: str, src: ModelSource) -> bool:
    """``path`` lies in the model folder itself (not in ``original/`` or the like), or is the
    file the user named."""
    return path == src.path or os.path.dirname(path) == src.path.rstrip(os.sep)


def _check_index(scan: ModelScan, src: ModelSource) -> None:
    if scan.index is None or not scan.index.shards:
        return
    present = {os.path.basename(p) for p in src.files}
    missing = [s for s in scan.index.shards if s not in present]
    scan.missing_shards = len(missing)
    if missing:  # weights not (all) downloaded: the index names stand in for them
        scan.notes.append(
            f"{scan.index.path}: {len(missing)} shard(s) named in the index are missing, "
            f"e.g. {missing[0]}; their tensor names stand in for them"
        )


def scan(paths: Iterable[str]) -> list[ModelScan]:
    """Scan every model found at ``paths`` (folders, HF cache repos or snapshots, files)."""
    out: list[ModelScan] = []
    for path in paths:
        out.extend(scan_source(src) for src in find_models(path))
    return out


def unread_paths(paths: list[str], scans: list[ModelScan]) -> list[str]:
    """The paths under which no reader produced evidence (`ModelScan.read`): an empty or
    mistyped folder, or one of FIFOs and devices, is not a clean model (unknown is not clean).

    The one gate of ``scan-model``, ``audit --models`` and ``exec``: a config-only folder, a
    pickle or a GGUF file is read as surely as a safetensors header.
    """

    def read_under(top: str) -> bool:
        top = os.path.abspath(top)
        return any(
            s.read
            and (os.path.abspath(s.path) == top or os.path.abspath(s.path).startswith(top + os.sep))
            for s in scans
        )

    return [p for p in paths if not read_under(p)]
