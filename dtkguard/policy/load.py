"""Read, validate, merge (``extends``) and cache policies (found by `dtkguard.policy.locate`).

The first read of a policy validates it with pydantic and writes the compiled JSON to a cache
file named by the sha256 of the policy's path. An entry records the path and the sha256 of the
exact bytes compiled of every file of the ``extends`` chain; a later read uses it only when the
path matches and every file still hashes the same (size and mtime are not trusted: ``cp -p``,
rsync and tar keep them across a content change).
"""

from __future__ import annotations

import os

from dtkguard import __version__
from dtkguard.policy.compiled import CompiledPolicy
from dtkguard.policy.locate import MAX_POLICY_BYTES, resolve_policy_text
from dtkguard.util.text import dumps, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.policy.compile import KnownRule


def load_policy(
    ref: str | None = None, *, known_rule: KnownRule, cache: bool = True
) -> CompiledPolicy:
    """Load a policy by path or bundled name, with ``extends`` merged, from cache when valid;
    its exceptions name rules ``known_rule`` knows (`dtkguard.rules.catalog.is_known`: a cache
    entry was checked when it was compiled, by the same dtkguard version)."""
    from dtkguard.util.console import info
    from dtkguard.util.purepath import resolve

    path = resolve(resolve_policy_text(ref))
    cached = _read_cache(path) if cache else None
    if cached is not None:
        info(f"policy {cached.name} from {path} (compiled, cached)")
        return cached
    from dtkguard.policy.precompiled import read_shipped

    shipped = read_shipped(path) if cache else None
    if shipped is not None:
        info(f"policy {shipped.name} from {path} (compiled when it was shipped)")
        return shipped
    from pathlib import Path  # a miss compiles: pathlib with pydantic and tomlkit

    from dtkguard.policy.compile import compile_with_sources

    policy, sources = compile_with_sources(Path(path), known_rule)
    if cache:
        _write_cache(path, policy, sources)
    info(f"policy {policy.name} from {path} (compiled now)")
    return policy


#: a cache entry is the compiled form of at most a few policies of `MAX_POLICY_BYTES` each
MAX_CACHE_BYTES = 16 << 20


def _cache_dir() -> str:
    from dtkguard.util.cache_dir import cache_root_text

    return os.path.join(cache_root_text(), "policies")


def _cache_file(path: str) -> str:
    """One file per policy path: the sha256 of the path, so two paths never share a file."""
    from dtkguard.util.sha import sha256_hex

    key = sha256_hex(os.fsencode(path))
    return os.path.join(_cache_dir(), f"{key}.json")


def _digest(path: str) -> str:
    from dtkguard.util.safe_read import read_capped
    from dtkguard.util.sha import sha256_hex

    return sha256_hex(read_capped(path, MAX_POLICY_BYTES, what="policy"))


def _policy_digest(policy: object) -> str:
    """sha256 of the compiled policy's canonical JSON, as it reads back from the entry."""
    from dtkguard.util.sha import sha256_hex

    return sha256_hex(dumps(policy, sort_keys=True).encode())


def _read_cache(path: str) -> CompiledPolicy | None:
    """The cached policy of ``path`` when the entry is for exactly this path and every file of
    its ``extends`` chain still has the content it was compiled from; None (a miss) otherwise,
    including for an entry that is corrupt, hostile or typed wrong."""
    from dtkguard.util.cache_dir import trusted_text
    from dtkguard.util.safe_read import read_capped
    from dtkguard.util.text import json_loads

    try:
        if not trusted_text(_cache_dir()):
            return None  # another user could have written the entry
        data = json_loads(read_capped(_cache_file(path), MAX_CACHE_BYTES))
        if not isinstance(data, dict) or data.get("tool") != __version__:
            return None
        if data.get("source") != str(path):
            return None
        files = data.get("files")
        if not isinstance(files, list) or not files or files[0] != [str(path), files[0][1]]:
            return None
        for entry in files:
            if not (isinstance(entry, list) and len(entry) == 2):
                return None
            file, digest = entry
            if not isinstance(file, str) or _digest(file) != digest:
                return None
        if data.get("policy-sha256") != _policy_digest(data.get("policy")):
            return None  # a corrupt entry (a torn write, a flipped byte): its sources are fine
        policy = CompiledPolicy.from_json(data.get("policy"))
        if list(policy.files) != [f for f, _ in files]:
            return None
        return policy
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return None


def _write_cache(path: str, policy: CompiledPolicy, sources: list[tuple[str, str]]) -> None:
    """Cache ``policy``, stamped with the digests of the bytes it was compiled from."""
    try:
        from dtkguard.util.atomic import atomic_write_text

        data = {
            "tool": __version__,
            "source": str(path),
            "files": [list(s) for s in sources],
            "policy": policy.to_json(),
        }
        data["policy-sha256"] = _policy_digest(loads(dumps(data["policy"])))
        target = _cache_file(path)
        from dtkguard.util.cache_dir import private_dir_text

        private_dir_text(os.path.dirname(target))
        atomic_write_text(target, dumps(data), 0o600, through=False, durable=False)
    except (OSError, ValueError):
        pass  # a read-only home is no reason to fail
