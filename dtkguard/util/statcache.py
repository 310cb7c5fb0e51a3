"""The file of a stat-keyed cache under the cache root (`dtkguard.util.cache_dir`): a JSON
table of what was read of some files, each entry beside the stat of the files it was read
from (`stamp`). Reading it is never an error: a file that is absent, unreadable, not JSON, no
table, or in a folder another user could write (`dtkguard.util.cache_dir.trusted`) is an
empty table, a miss. Writing it is best effort: a cache that cannot be written only means
reading the files again next run."""

from __future__ import annotations

import contextlib
import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from pathlib import Path
    from typing import Any


def cache_file(namespace: str, key: str) -> Path:
    """``<cache root>/<namespace>/<sha256 of key, 32 hex digits>.json``."""
    from dtkguard.util.cache_dir import cache_root
    from dtkguard.util.sha import sha256_hex

    digest = sha256_hex(key.encode("utf-8", "surrogateescape"))[:32]
    return cache_root() / namespace / f"{digest}.json"


def stamp(st: os.stat_result) -> list[int]:
    """What a stat-keyed entry keeps of a file's stat: device, inode, size, mtime and ctime
    (a rewrite in place with the mtime put back still changes the ctime; nothing sets it
    back)."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def load(path: Path) -> dict[str, Any]:
    """The table at ``path``; {} when it cannot be believed or read."""
    from dtkguard.util.cache_dir import trusted

    try:
        data = json.loads(path.read_bytes()) if trusted(path.parent) else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def keep(path: Path, table: dict[str, Any]) -> None:
    """Write the table at ``path`` (mode 0600 in a 0700 folder); best effort."""
    from dtkguard.util.atomic import atomic_write_text
    from dtkguard.util.cache_dir import private_dir

    with contextlib.suppress(OSError, ValueError, TypeError):
        private_dir(path.parent)
        atomic_write_text(path, json.dumps(table, separators=(",", ":")), 0o600, through=False)
