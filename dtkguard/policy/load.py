"""Find, read, validate, merge (``extends``) and cache policies.

The first read of a policy validates it with pydantic and writes the compiled JSON to a cache
keyed by the files' paths, sizes and mtimes; later reads load that JSON only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from dtkguard import __version__
from dtkguard.errors import PolicyError
from dtkguard.policy.compiled import CompiledPolicy

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from typing import Any

DEFAULT_POLICY = "dtk-25.04.1"
SYSTEM_POLICY = Path("/etc/dtkguard/policy.toml")


def bundled_dir() -> Path:
    """The folder of the policies shipped inside the package (or of a source checkout)."""
    installed = Path(__file__).resolve().parents[1] / "policies"
    if installed.is_dir():
        return installed
    from importlib import resources  # an editable install maps the package elsewhere

    try:
        return Path(str(resources.files("dtkguard.policies")))
    except ModuleNotFoundError:  # a source checkout on PYTHONPATH
        return Path(__file__).resolve().parents[2] / "policies"


def bundled_names() -> list[str]:
    return sorted(p.stem for p in bundled_dir().glob("*.toml"))


def resolve_policy_path(ref: str | None = None, *, base: Path | None = None) -> Path:
    """A policy named by path or bundled name; None follows PRODUCT §2's lookup order."""
    if ref is None:
        ref = os.environ.get("DTKGUARD_POLICY") or None
        if ref is None:
            return (
                SYSTEM_POLICY
                if SYSTEM_POLICY.is_file()
                else bundled_dir() / f"{DEFAULT_POLICY}.toml"
            )
    looks_like_path = ref.endswith(".toml") or os.sep in ref or ref.startswith(".")
    candidate = Path(ref) if base is None or Path(ref).is_absolute() else base / ref
    if candidate.is_file():
        return candidate
    if not looks_like_path:
        named = bundled_dir() / f"{ref}.toml"
        if named.is_file():
            return named
        import difflib

        close = difflib.get_close_matches(ref, bundled_names(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise PolicyError(f"no policy file or bundled policy named {ref!r}{hint}")
    raise PolicyError(f"policy file not found: {candidate}")


def load_policy(ref: str | None = None, *, cache: bool = True) -> CompiledPolicy:
    """Load a policy by path or bundled name, with ``extends`` merged, from cache when fresh."""
    path = resolve_policy_path(ref).resolve()
    cached = _read_cache(path) if cache else None
    if cached is not None:
        return cached
    from dtkguard.policy.compile import compile_policy  # pydantic + tomlkit: only on a miss

    policy = compile_policy(path)
    if cache:
        _write_cache(path, policy)
    return policy


def _cache_dir() -> Path:
    from dtkguard.util.cache_dir import cache_root

    return cache_root() / "policies"


def _stamp(path: str) -> list[Any]:
    st = os.stat(path)
    return [path, st.st_size, st.st_mtime_ns]


def _cache_file(path: Path) -> Path:
    return _cache_dir() / (str(path).strip(os.sep).replace(os.sep, "%") + ".json")


def _read_cache(path: Path) -> CompiledPolicy | None:
    try:
        data = json.loads(_cache_file(path).read_text())
        if data["tool"] != __version__ or any(_stamp(f[0]) != f for f in data["files"]):
            return None
        return CompiledPolicy.from_json(data["policy"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(path: Path, policy: CompiledPolicy) -> None:
    try:
        from dtkguard.util.atomic import atomic_write_text

        data = {
            "tool": __version__,
            "files": [_stamp(f) for f in policy.files],
            "policy": policy.to_json(),
        }
        target = _cache_file(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, json.dumps(data))
    except OSError:
        pass  # a read-only home is no reason to fail
