"""Export a lock as pip/uv constraints or as a requirements file with ``--hash``."""

from __future__ import annotations

import posixpath
from pathlib import Path

from dtkguard.lock.read import Lock, files, version_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from packaging.pylock import Package


def _line(pkg: Package) -> str:
    """``name==version ; marker``, as packaging spells the version and the marker."""
    version = version_of(pkg)
    text = f"{pkg.name}=={version}" if version else pkg.name
    return f"{text} ; {pkg.marker}" if pkg.marker is not None else text


def constraints(lock: Lock) -> str:
    """``name==version`` per locked package (pip ``-c``, ``uv pip install -c``); the
    ``[tool.dtkguard]`` installed entries have no wheel to install and are left out."""
    lines = [f"# constraints from {lock.path.name} (dtkguard export constraints)"]
    for pkg in sorted(lock.pylock.packages, key=lambda p: p.name):
        lines.append(_line(pkg))
    return "\n".join(lines) + "\n"


def requirements(lock: Lock) -> str:
    """Hash-pinned requirements (pip ``--require-hashes``), with the lock's sources."""
    lines = [f"# requirements from {lock.path.name} (dtkguard export requirements)"]
    indexes: list[str] = []
    links: list[str] = []
    body: list[str] = []
    base = lock.path.parent.absolute()
    for pkg in sorted(lock.pylock.packages, key=lambda p: p.name):
        if pkg.index and pkg.index not in indexes:
            indexes.append(pkg.index)
        for f in files(pkg):
            if f.path:
                folder = posixpath.dirname(Path(base, f.path).as_posix())
                if folder not in links:
                    links.append(folder)
        hashes = sorted(
            {f"{algo}:{digest}" for f in files(pkg) for algo, digest in f.hashes.items()}
        )
        entry = _line(pkg)
        body.append(" \\\n    ".join([entry, *(f"--hash={h}" for h in hashes)]))
    if indexes:
        lines.append(f"--index-url {indexes[0]}")
        lines += [f"--extra-index-url {u}" for u in indexes[1:]]
    else:
        lines.append("--no-index")
    lines += [f"--find-links {d}" for d in links]
    return "\n".join(lines + body) + "\n"
