"""``model.safetensors.index.json``: tensor names as a cheap pre-filter, and the shard list."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from operator import methodcaller

from dtkguard.modelscan.config import ConfigError, read_json
from dtkguard.modelscan.dtypes import KV_SCALE_SUFFIXES

#: more shards than this in one index is not a real model; names are still counted
MAX_SHARDS = 4096
#: about 100 bytes a tensor name: some 320,000 tensors (and at most `MAX_JSON_VALUES` entries);
#: the worst file of this size peaks under 256 MB (docs/limits.md)
MAX_INDEX = 32 * 1024 * 1024


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
    #: the whole file is read
    bytes_read: int = 0
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
    data, size = read_json(path, cap=MAX_INDEX, what="index")
    weight_map = data.pop("weight_map", None)
    del data
    if not isinstance(weight_map, dict):
        raise ConfigError("no weight_map object")
    info = IndexInfo(path=str(path), tensors=len(weight_map), bytes_read=size)
    names = weight_map.keys()
    info.scale_inv = sum(map(methodcaller("endswith", "_scale_inv"), names))
    info.kv_scales = sum(map(methodcaller("endswith", KV_SCALE_SUFFIXES), names))
    info.weight_scales = sum(map(methodcaller("endswith", ".weight_scale"), names))
    packed = ("_blocks", ".blocks", ".weight_packed")
    info.packed = sum(map(methodcaller("endswith", packed), names))
    # one pass, no copy of the values: a hostile index names a million distinct "shards"
    distinct: set[str] = set()
    unsafe = 0
    for value in weight_map.values():
        if type(value) is str:
            distinct.add(value)
        else:
            unsafe += 1
    bad = {s for s in distinct if not _safe_shard(s)}
    if bad:
        distinct -= bad
        unsafe += sum(1 for v in weight_map.values() if type(v) is str and v in bad)
    del weight_map
    info.shard_count = len(distinct)
    if unsafe:
        info.problems.append(f"{unsafe} weight_map entries name no plain shard file; ignored")
    if len(distinct) > max_shards:
        info.problems.append(
            f"index names {len(distinct):,} shard files, more than the cap of {max_shards:,}; "
            "only the shards present in the folder are read"
        )
    else:
        info.shards = sorted(distinct)
    return info
