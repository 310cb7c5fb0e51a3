"""Where dtkguard keeps caches: ``$DTKGUARD_CACHE_DIR``, else ``$XDG_CACHE_HOME/dtkguard``,
else ``~/.cache/dtkguard``. One function, so every cache agrees."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    override = os.environ.get("DTKGUARD_CACHE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dtkguard"


def private_dir(path: Path) -> None:
    """Make the cache folder ``path`` (and the cache root) mode 0700 whatever the umask: an
    entry another user could write would be believed (a compiled policy, an interpreter's
    paths)."""
    from dtkguard.util.trust import make_dir

    make_dir(path, 0o700)


def trusted(path: Path) -> bool:
    """May entries in the cache folder ``path`` be believed (it and its parent are ours and
    writable by no one else)? A missing folder is (nothing to read)."""
    from dtkguard.util.trust import untrusted

    return all(untrusted(p, os.geteuid()) is None for p in (path, path.parent))
