"""Where a policy is: a path, a bundled name, or the default lookup order."""

from __future__ import annotations

import os

from dtkguard.errors import PolicyError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_POLICY = "dtk-25.04.1"
SYSTEM_POLICY_TEXT = "/etc/dtkguard/policy.toml"
#: a real policy is a few kilobytes; past this a file is refused before it is parsed
MAX_POLICY_BYTES = 256 << 10


def __getattr__(name: str) -> object:
    if name == "SYSTEM_POLICY":  # a Path, made when asked for (pathlib is not imported else)
        from pathlib import Path

        return Path(SYSTEM_POLICY_TEXT)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def bundled_dir() -> Path:
    """The folder of the policies shipped inside the package (or of a source checkout)."""
    from pathlib import Path

    return Path(bundled_dir_text())


def bundled_dir_text() -> str:
    """`bundled_dir` as text (``str(bundled_dir())``), without importing pathlib."""
    from dtkguard.util.purepath import is_dir, is_file, resolve

    package = os.path.dirname(os.path.dirname(resolve(__file__)))
    installed = os.path.join(package, "policies")
    if is_dir(installed):
        return installed
    checkout = os.path.dirname(package)  # a source checkout (on PYTHONPATH, or installed editable)
    if is_file(os.path.join(checkout, "pyproject.toml")) and is_dir(
        os.path.join(checkout, "policies")
    ):
        return os.path.join(checkout, "policies")
    from importlib import resources  # an editable install maps the package elsewhere

    from dtkguard.util.purepath import pure_path

    try:
        return pure_path(str(resources.files("dtkguard.policies")))
    except ModuleNotFoundError:  # a source checkout on PYTHONPATH
        return os.path.join(checkout, "policies")


def bundled_names() -> list[str]:
    return sorted(p.stem for p in bundled_dir().glob("*.toml"))


def resolve_policy_path(ref: str | None = None, *, base: Path | None = None) -> Path:
    """A policy named by path or bundled name; None: ``$DTKGUARD_POLICY``, else
    ``/etc/dtkguard/policy.toml``, else the bundled default."""
    from pathlib import Path

    return Path(resolve_policy_text(ref, base=None if base is None else str(base)))


def resolve_policy_text(ref: str | None = None, *, base: str | None = None) -> str:
    """`resolve_policy_path` as text (``str(resolve_policy_path(...))``), without pathlib."""
    import stat

    from dtkguard.util.purepath import is_file, join, path_mode, pure_path

    if ref is None:
        ref = os.environ.get("DTKGUARD_POLICY") or None
        if ref is None:
            return (
                SYSTEM_POLICY_TEXT
                if is_file(SYSTEM_POLICY_TEXT)
                else os.path.join(bundled_dir_text(), f"{DEFAULT_POLICY}.toml")
            )
    looks_like_path = ref.endswith(".toml") or os.sep in ref or ref.startswith(".")
    candidate = pure_path(ref) if base is None or ref.startswith("/") else join(base, ref)
    mode = path_mode(candidate)
    if mode is not None and not stat.S_ISDIR(mode):  # a FIFO or device: refused when read
        return candidate
    if not looks_like_path:
        named = join(bundled_dir_text(), f"{ref}.toml")
        if is_file(named):
            return named
        import difflib

        close = difflib.get_close_matches(ref, bundled_names(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise PolicyError(f"no policy file or bundled policy named {ref!r}{hint}")
    raise PolicyError(f"policy file not found: {candidate}")
