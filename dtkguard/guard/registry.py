"""The interpreters `guard install` guarded, so that dtkpip/dtkuv can find one when none is
active: ``$XDG_STATE_HOME/dtkguard/guarded.json`` (default ``~/.local/state``).

An entry counts only while its guard is still there (its manifest in the guard's store,
`dtkguard.env.store`), so a deleted venv or a `guard remove` never leaves a stale choice behind.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from dtkguard.env.store import env_store
from dtkguard.util.atomic import atomic_write_text


def registry_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "dtkguard" / "guarded.json"


#: a list of a few guarded interpreters is a few KiB
MAX_BYTES = 4 << 20


def _load(path: Path) -> dict[str, str]:
    """The list; empty when it cannot be read (a FIFO or folder, over `MAX_BYTES`, not
    JSON, nested too deeply): then dtkpip asks for ``--python``."""
    from dtkguard.util.safe_read import read_capped
    from dtkguard.util.text import json_loads

    try:
        data = json_loads(read_capped(path, MAX_BYTES, what="guarded-interpreter list"))
    except (OSError, ValueError):
        return {}
    entries = data.get("interpreters") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return {}
    return {str(k): str(v) for k, v in entries.items()}


def _save(path: Path, entries: dict[str, str]) -> None:
    from dtkguard.env.store import ensure_dir

    ensure_dir(path.parent)
    text = json.dumps({"interpreters": dict(sorted(entries.items()))}, indent=1) + "\n"
    atomic_write_text(path, text)


def remember(python: str, prefix: Path) -> None:
    """Record ``python`` (guarded, prefix ``prefix``). Best effort: an unwritable state
    directory only means dtkpip will ask for ``--python``."""
    path = registry_file()
    entries = _load(path)
    entries[str(python)] = str(prefix)
    with contextlib.suppress(OSError):
        _save(path, entries)


def forget(prefix: Path) -> None:
    """Drop every interpreter of ``prefix`` (after `guard remove`)."""
    path = registry_file()
    entries = _load(path)
    kept = {py: p for py, p in entries.items() if os.path.realpath(p) != os.path.realpath(prefix)}
    if kept != entries:
        with contextlib.suppress(OSError):
            _save(path, kept)


def guarded() -> list[str]:
    """Recorded interpreters whose guard is still installed, one per prefix."""
    seen: dict[str, str] = {}
    for python, prefix in _load(registry_file()).items():
        real = os.path.realpath(prefix)
        if real in seen or not Path(python).exists() or not env_store(prefix).manifest.is_file():
            continue
        seen[real] = python
    return sorted(seen.values())
