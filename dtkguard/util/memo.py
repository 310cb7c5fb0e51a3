"""A cache of pure judgements: the answer of ``compute()`` for exactly these inputs.

An entry is ``<cache root>/<namespace>/<sha256>.json`` (`dtkguard.util.cache_dir`), the digest
of the inputs (as canonical JSON), dtkguard's version and the stat of the source files that
compute the answer (an edited checkout is a miss, not a stale answer). The entry repeats the
digest; one that does not read back, or names another digest, is a miss. Writes are best
effort: a cache that cannot be written only means computing again.
"""

from __future__ import annotations

import contextlib
import os

from dtkguard.util.sha import sha256_hex
from dtkguard.util.text import dumps, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any


def code_stamp(sources: Iterable[str]) -> list[Any]:
    """dtkguard's version and the (size, mtime) of each of ``sources``: the code an answer
    was computed by (an edited checkout or another release is another stamp)."""
    from dtkguard import __version__

    out: list[Any] = [__version__]
    for path in sources:
        try:
            st = os.stat(path)
            out.append([path, st.st_size, st.st_mtime_ns])
        except OSError:
            out.append([path, None])
    return out


def memo(namespace: str, inputs: Any, compute: Callable[[], Any], sources: Iterable[str]) -> Any:
    """``compute()`` (a JSON value) for ``inputs`` (JSON-able), from the cache when an entry
    for these inputs and this code is there; else computed and stored."""
    from dtkguard.util.cache_dir import cache_root_text, private_dir_text, trusted_text
    from dtkguard.util.purepath import join

    text = dumps([inputs, code_stamp(sources)], sort_keys=True, separators=(",", ":"))
    digest = sha256_hex(text.encode("utf-8", "surrogatepass"))
    folder = join(cache_root_text(), namespace)
    path = join(folder, f"{digest}.json")
    try:
        entry = None
        if trusted_text(folder):
            with open(path, encoding="utf-8") as fh:
                entry = loads(fh.read())
        if isinstance(entry, dict) and entry.get("digest") == digest and "value" in entry:
            return entry["value"]
    except (OSError, ValueError):
        pass
    value = compute()
    with contextlib.suppress(OSError, ValueError, TypeError):
        from dtkguard.util.atomic import atomic_write_text

        private_dir_text(folder)
        entry = {"digest": digest, "value": value}
        atomic_write_text(path, dumps(entry), 0o600, through=False, durable=False)
    return value
