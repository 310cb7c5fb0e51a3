"""``model.safetensors.index.json``: tensor names as a cheap pre-filter, and the shard list."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from dtkguard.models.config import ConfigError, load_json
from dtkguard.models.dtypes import is_kv_scale_name, is_packed_fp4_name, is_scale_name

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
    scales: int = 0
    kv_scales: int = 0
    packed: int = 0
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
    seen: dict[str, None] = {}
    unsafe = 0
    for name, shard in weight_map.items():
        if name.endswith("_scale_inv"):
            info.scale_inv += 1
        elif is_kv_scale_name(name):
            info.kv_scales += 1
        elif is_scale_name(name):
            info.scales += 1
        elif is_packed_fp4_name(name):
            info.packed += 1
        if not isinstance(shard, str) or not _safe_shard(shard):
            unsafe += 1
            continue
        seen.setdefault(shard, None)
    info.shard_count = len(seen)
    if unsafe:
        info.problems.append(f"{unsafe} weight_map entries name no plain shard file; ignored")
    if len(seen) > max_shards:
        info.problems.append(
            f"index names {len(seen):,} shard files, more than the cap of {max_shards:,}; "
            "only the shards present in the folder are read"
        )
    else:
        info.shards = list(seen)
    return info
