"""The offline wheel cache (``.cache/wheels/`` at the repository root) and the uv binary.

``python tests/prepare.py`` fills the cache once, with network; tests then only read it.
Set ``DTKGUARD_TEST_WHEELS`` to use another directory.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = [
    "BUILD_REQUIREMENTS",
    "IMAGE_PLATFORMS",
    "IMAGE_PYTHONS",
    "MATRIX_PIP_VERSIONS",
    "PIP_VERSIONS",
    "REPO_ROOT",
    "CacheMissing",
    "cache_path",
    "find_wheel",
    "floor_requirements",
    "floor_wheels",
    "image_wheels",
    "pip_wheel",
    "uv_binary",
    "wheel_dir",
]

REPO_ROOT = Path(__file__).resolve().parents[2]

PIP_VERSIONS: tuple[str, ...] = ("22.2.2", "26.3")
"""The pips the guard supports at both ends (oldest, newest); ``tests/prepare.py`` fetches them."""

MATRIX_PIP_VERSIONS: tuple[str, ...] = ("22.2.2", "23.3.2", "24.3.1", "25.3", "26.3")
"""One pip per major release 22 -> 26 for ``pytest -m pip_matrix``; prepare.py fetches them."""

BUILD_REQUIREMENTS: tuple[str, ...] = ("setuptools", "wheel")
"""What build isolation of :func:`tests.support.wheels.build_sdist` projects needs."""

IMAGE_PYTHONS: tuple[str, ...] = ("3.10", "3.11")
"""Image Pythons of the Docker recipe: 3.10 (the DAS images), 3.11 (Debian bookworm, the base of
the ``docker`` tests). prepare.py fetches dtkguard's dependencies as wheels for each."""

IMAGE_PLATFORMS: tuple[str, ...] = ("manylinux_2_17_x86_64", "manylinux2014_x86_64")
"""The ``--platform`` values of the README's Docker recipe."""

_HINT = "run `python tests/prepare.py` (needs network once) to fill it"


class CacheMissing(RuntimeError):
    """The offline wheel cache lacks what a test needs."""


def cache_path() -> Path:
    """Where the wheel cache lives (it may not exist yet)."""
    override = os.environ.get("DTKGUARD_TEST_WHEELS")
    return Path(override) if override else REPO_ROOT / ".cache" / "wheels"


def wheel_dir() -> Path:
    """The wheel cache directory; raises :class:`CacheMissing` if it does not exist."""
    path = cache_path()
    if not path.is_dir() or not any(path.glob("*.whl")):
        raise CacheMissing(f"the test wheel cache {path} is missing or empty: {_HINT}")
    return path


def pip_wheel(version: str) -> Path:
    """The cached ``pip-{version}-*.whl``; raises :class:`CacheMissing` if absent."""
    found = sorted(wheel_dir().glob(f"pip-{version}-*.whl"))
    if not found:
        raise CacheMissing(f"pip {version} is not in the test wheel cache: {_HINT}")
    return found[-1]


def find_wheel(name: str) -> Path:
    """The newest cached wheel of project ``name`` (e.g. ``setuptools``)."""
    from packaging.utils import canonicalize_name, parse_wheel_filename

    want = canonicalize_name(name)
    found = [
        (parse_wheel_filename(p.name)[1], p)
        for p in wheel_dir().glob("*.whl")
        if parse_wheel_filename(p.name)[0] == want
    ]
    if not found:
        raise CacheMissing(f"no {name} wheel in the test wheel cache: {_HINT}")
    return max(found)[1]


def uv_binary() -> str:
    """Path of the uv executable from the ``uv`` package (the ``test`` extra), else PATH."""
    try:
        import uv  # type: ignore[import-not-found]

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise CacheMissing("uv is not installed: run `pip install -e '.[test]'` (installs uv)")


def floor_requirements() -> list[str]:
    """dtkguard's runtime dependencies pinned at their declared floors: ``packaging==26.1``."""
    import re

    import tomlkit

    doc = tomlkit.parse((REPO_ROOT / "pyproject.toml").read_text())
    out = []
    for dep in doc["project"]["dependencies"]:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([^,;\s]+)", dep.strip())
        if m is None:
            raise ValueError(f"pyproject.toml: a dependency without a plain floor: {dep!r}")
        out.append(f"{m.group(1)}=={m.group(2)}")
    return out


def floor_wheels() -> Path:
    """The wheels of `floor_requirements` and what they need (``tests/prepare.py``)."""
    path = cache_path() / "floors"
    if not (path / ".complete").exists():
        raise CacheMissing(f"no wheels of dtkguard's declared floors: {_HINT}")
    return path


def image_wheels() -> Path:
    """dtkguard's runtime dependencies as wheels for every `IMAGE_PYTHONS` (a flat directory,
    apart from the main cache so that no other test finds them); raises :class:`CacheMissing`."""
    path = cache_path() / "image"
    missing = [py for py in IMAGE_PYTHONS if not (path / f".complete-{py}").exists()]
    if missing:
        raise CacheMissing(f"no dependency wheels for Python {', '.join(missing)}: {_HINT}")
    return path
