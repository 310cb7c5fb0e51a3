"""Export a lock as pip/uv constraints or as a requirements file with ``--hash``."""

from __future__ import annotations

import posixpath
from pathlib import Path

from dtkguard.lock.read import Lock


def _line(name: str, version: str | None, marker: str | None) -> str:
    text = f"{name}=={version}" if version else name
    return f"{text} ; {marker}" if marker else text


def constraints(lock: Lock) -> str:
    """``name==version`` per locked package (pip ``-c``, ``uv pip install -c``)."""
    lines = [f"# constraints from {lock.path.name} (dtkguard export constraints)"]
    for pkg in sorted(lock.packages, key=lambda p: p.key):
        if pkg.tool.get("dtkguard", {}).get("installed-only"):
            continue
        lines.append(_line(pkg.key, pkg.version, pkg.marker))
    return "\n".join(lines) + "\n"


def requirements(lock: Lock) -> str:
    """Hash-pinned requirements (pip ``--require-hashes``), with the lock's sources."""
    lines = [f"# requirements from {lock.path.name} (dtkguard export requirements)"]
    indexes: list[str] = []
    links: list[str] = []
    body: list[str] = []
    base = lock.path.parent.absolute()
    for pkg in sorted(lock.packages, key=lambda p: p.key):
        if pkg.tool.get("dtkguard", {}).get("installed-only"):
            continue
        if pkg.index and pkg.index not in indexes:
            indexes.append(pkg.index)
        for f in pkg.files:
            if f.path:
                folder = posixpath.dirname(Path(base, f.path).as_posix())
                if folder not in links:
                    links.append(folder)
        hashes = sorted(
            {f"{algo}:{digest}" for f in pkg.files for algo, digest in f.hashes.items()}
        )
        entry = _line(pkg.key, pkg.version, pkg.marker)
        body.append(" \\\n    ".join([entry, *(f"--hash={h}" for h in hashes)]))
    if indexes:
        lines.append(f"--index-url {indexes[0]}")
        lines += [f"--extra-index-url {u}" for u in indexes[1:]]
    else:
        lines.append("--no-index")
    lines += [f"--find-links {d}" for d in links]
    return "\n".join(lines + body) + "\n"
