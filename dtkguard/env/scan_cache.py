"""The parsed METADATA of a host site's ``*.dist-info`` folders, kept between runs: a check
of 169 dists otherwise opens and parses every METADATA each time.

Invariant: an entry is used only while the folder is the same one (device, inode) and its
METADATA is the very file that was parsed, unchanged: the stat it was read at (the fstat of
the descriptor read: device, inode, size, mtime, ctime; `dtkguard.util.stat_cache.stamp`) is
its lstat now. A rewrite in place (even at the same size with the mtime put back) gets a new
ctime, a swapped folder or METADATA a new inode, so the next scan reads it again; a folder
added is read, one removed drops out (the site is listed every run). What was read with a
ctime under two seconds old is not kept (`stat_cache.settled`: it may change again within
its timestamp's granularity). Anything else (a link, no METADATA, unreadable, broken
metadata, an ``.egg-info``) is read the long way (`dtkguard.env.dist.read_dist`) every run,
never kept. A cache file that is corrupt, foreign or unreadable is a miss
(`dtkguard.util.stat_cache.load`); an entry of the wrong shape too.
"""

from __future__ import annotations

import os
import stat
import time

from dtkguard.env import dist
from dtkguard.env.dist import METADATA_LIMIT, Dist, from_headers, parse_headers, read_dist
from dtkguard.util import stat_cache
from dtkguard.util.purepath import join
from dtkguard.util.safe_read import read_head_stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from dtkguard.env.root import Root

#: the layout of a cache file; another is a miss
FORMAT = 1
#: the code that parses what is kept (`stat_cache.cache_file`)
_SOURCES = (dist.__file__, __file__)


class SiteScan:
    """The cache of one site directory of the host: `read` its entries, then `keep`."""

    def __init__(self, site: str | os.PathLike[str]) -> None:
        self._site = os.fspath(site)
        self._file = stat_cache.cache_file("site-scan", [self._site], _SOURCES)
        table = stat_cache.load(self._file)
        old = table.get("dists")
        same = table.get("format") == FORMAT and table.get("site") == self._site
        self._old: dict[str, Any] = old if same and isinstance(old, dict) else {}
        self._new: dict[str, Any] = {}
        self._read_again = False
        self._now = time.time_ns()

    def read(self, root: Root, site: str, entry: str, group: str = "") -> Dist | str:
        """`dtkguard.env.dist.read_dist` of ``entry``, from the cache when it holds it."""
        if not entry.endswith(".dist-info"):
            return read_dist(root, site, entry, group)
        folder = os.path.join(self._site, entry)
        try:
            dst = os.lstat(folder)
            mst = os.lstat(os.path.join(folder, "METADATA")) if stat.S_ISDIR(dst.st_mode) else None
        except OSError:
            mst = None
        if mst is None or not stat.S_ISREG(mst.st_mode):
            return read_dist(root, site, entry, group)
        path = join(site, entry)
        hit = self._old.get(entry)
        if isinstance(hit, list) and len(hit) == 2 and hit[0] == _key(dst, mst):
            headers = _headers(hit[1])
            dist = from_headers(headers, path, site, root, group, site, entry) if headers else ""
            if isinstance(dist, Dist):
                self._new[entry] = hit
                return dist
        self._read_again = True
        try:
            meta = os.path.join(path, "METADATA")
            data, st = read_head_stat(meta, METADATA_LIMIT, follow=False, root=root)
        except OSError:
            return read_dist(root, site, entry, group)
        dist = from_headers(parse_headers(data), path, site, root, group, site, entry)
        if isinstance(dist, Dist) and stat_cache.settled(st, self._now):
            self._new[entry] = [_key(dst, st), dist.headers]
        return dist

    def keep(self) -> None:
        """Write what this scan read, when it differs from what the cache held."""
        if self._read_again or self._new.keys() != self._old.keys():
            table = {"format": FORMAT, "site": self._site, "dists": self._new}
            stat_cache.keep(self._file, table)


def _key(folder: os.stat_result, metadata: os.stat_result) -> list[int]:
    """The folder's identity, then METADATA's stamp."""
    return [folder.st_dev, folder.st_ino, *stat_cache.stamp(metadata)]


def _headers(value: Any) -> dict[str, list[str]] | None:
    """Headers as `dtkguard.env.dist.parse_headers` makes them; None for anything else."""
    if not isinstance(value, dict):
        return None
    for values in value.values():
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            return None
    return value
