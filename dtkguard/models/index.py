"""``model.safetensors.index.json``: tensor names as a cheap pre-filter, and the shard list."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from operator import methodcaller

from dtkguard.models.config import ConfigError, load_json
from dtkguard.models.dtypes import KV_SCALE_SUFFIXES

#: more shards than this in one index is not a real model; names are still counted
MAX_SHARDS = 4096
MAX_INDEX = 64 * 1024 * 1024


@dataclass
class IndexInfo:
    path: str
    tensors: int = 0
    shards: list[str] = field(default_factory=list)
    shard_count: int = 0
    scale_inv: int = 0
    kv_scales: int = 0
    packed: int = 0
    #: ``*.weight_scale`` names: quantised weights of a format the names alone do not tell
    weight_scales: int = 0
    problems: list[str] = field(default_factory=list)


def _safe_shard(name: str) -> bool:
    return (
        bool(name)
        and "/" not in name
        and "\\" not in name
        and name not in (".", "..")
        and "\x00" not in name
    )


def read_index(path: str | os.PathLike[str], max_shards: int = MAX_SHARDS) -> IndexInfo:
    """Parse an index; a malformed one raises :class:`ConfigError`."""
    data = load_json(path, cap=MAX_INDEX)
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict):
        raise ConfigError("no weight_map object")
    info = IndexInfo(path=str(path), tensors=len(weight_map))
    names = list(weight_map)
    info.scale_inv = sum(map(methodcaller("endswith", "_scale_inv"), names))
    info.kv_scales = sum(map(methodcaller("endswith", KV_SCALE_SUFFIXES), names))
    info.weight_scales = sum(map(methodcaller("endswith", ".weight_scale"), names))
    info.packed = sum(map(methodcaller("endswith", ("_blocks", ".weight_packed")), names))
    values = list(weight_map.values())
    strings = [v for v in values if type(v) is str]
    distinct = set(strings)
    seen = {s: None for s in distinct if _safe_shard(s)}
    unsafe = len(values) - len(strings)
    if len(seen) != len(distinct):
        unsafe += sum(1 for v in strings if v not in seen)
    info.shard_count = len(seen)
    if unsafe:
        info.problems.append(f"{unsafe} weight_map entries name no plain shard file; ignored")
    if len(seen) > max_shards:
        info.problems.append(
            f"index names {len(seen):,} shard files, more than the cap of {max_shards:,}; "
            "only the shards present in the folder are read"
        )
    else:
        info.shards = sorted(seen)
    return info
