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
