"""Where a policy is: a path, a bundled name, or the default lookup order."""

from __future__ import annotations

import os
from pathlib import Path

from dtkguard.errors import PolicyError

DEFAULT_POLICY = "dtk-25.04.1"
SYSTEM_POLICY = Path("/etc/dtkguard/policy.toml")
#: a real policy is a few kilobytes; past this a file is refused before it is parsed
MAX_POLICY_BYTES = 256 << 10


def bundled_dir() -> Path:
    """The folder of the policies shipped inside the package (or of a source checkout)."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "policies"
    if installed.is_dir():
        return installed
    checkout = package.parent  # a source checkout (on PYTHONPATH, or installed editable)
    if (checkout / "pyproject.toml").is_file() and (checkout / "policies").is_dir():
        return checkout / "policies"
    from importlib import resources  # an editable install maps the package elsewhere

    try:
        return Path(str(resources.files("dtkguard.policies")))
    except ModuleNotFoundError:  # a source checkout on PYTHONPATH
        return Path(__file__).resolve().parents[2] / "policies"


def bundled_names() -> list[str]:
    return sorted(p.stem for p in bundled_dir().glob("*.toml"))


def resolve_policy_path(ref: str | None = None, *, base: Path | None = None) -> Path:
    """A policy named by path or bundled name; None: ``$DTKGUARD_POLICY``, else
    ``/etc/dtkguard/policy.toml``, else the bundled default."""
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
    if candidate.exists() and not candidate.is_dir():  # a FIFO or device: refused when read
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
