"""``model.safetensors.index.json``: tensor names as a cheap pre-filter, and the shard list."""

from __future__ import annotations

import os
from functools import cached_property

from dtkguard.lightclass import field, record
from dtkguard.modelscan.config import ConfigError, read_json
from dtkguard.modelscan.dtypes import KV_SCALE_SUFFIXES
from dtkguard.modelscan.names import Names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: more shards than this in one index is not a real model; names are still counted
MAX_SHARDS = 4096
#: about 100 bytes a tensor name: some 320,000 tensors (and at most `MAX_JSON_VALUES` entries);
#: the worst file of this size peaks under 256 MB (docs/limits.md)
MAX_INDEX = 32 * 1024 * 1024


@record
class IndexInfo:
    path: str
    #: the ``weight_map`` names, in file order (counted on demand: only the names of missing
    #: shards stand in for them)
    names: list[str] = field(default_factory=list, repr=False)
    shards: list[str] = field(default_factory=list)
    shard_count: int = 0
    #: the whole file is read
    bytes_read: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def tensors(self) -> int:
        return len(self.names)

    def _ending(self, suffixes: str | tuple[str, ...]) -> int:
        return self._endings.ending(suffixes)

    @cached_property
    def _endings(self) -> Names:
        return Names(self.names)

    @cached_property
    def scale_inv(self) -> int:
        return self._ending("_scale_inv")

    @cached_property
    def kv_scales(self) -> int:
        return self._ending(KV_SCALE_SUFFIXES)

    @cached_property
    def packed(self) -> int:
        return self._ending(("_blocks", ".blocks", ".weight_packed"))

    @cached_property
    def weight_scales(self) -> int:
        """``*.weight_scale`` names: quantised weights of a format the names alone do not tell"""
        return self._ending(".weight_scale")


def _safe_shard(name: str) -> bool:
    return (
        bool(name)
        and "/" not in name
        and "\\" not in name
        and name not in (".", "..")
        and "\x00" not in name
    )


def _weight_map(path: str | os.PathLike[str]) -> tuple[list[str], list[Any], int]:
    """``(names, shard values, bytes read)`` of an index's ``weight_map``."""
    data, size = read_json(path, cap=MAX_INDEX, what="index")
    weight_map = data.pop("weight_map", None)
    del data
    if not isinstance(weight_map, dict):
        raise ConfigError("no weight_map object")
    return list(weight_map), list(weight_map.values()), size


def read_index(path: str | os.PathLike[str], max_shards: int = MAX_SHARDS) -> IndexInfo:
    """Parse an index; a malformed one raises :class:`ConfigError`."""
    names, values, size = _weight_map(path)
    info = IndexInfo(path=str(path), names=names, bytes_read=size)
    # no copy of the values beyond the list: a hostile index names a million distinct "shards"
    if set(map(type, values)) <= {str}:  # the usual index: one pass in C
        distinct, unsafe = set(values), 0
    else:
        distinct = {v for v in values if type(v) is str}
        unsafe = sum(1 for v in values if type(v) is not str)
    bad = {s for s in distinct if not _safe_shard(s)}
    if bad:
        distinct -= bad
        unsafe += sum(1 for v in values if type(v) is str and v in bad)
    del values
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
