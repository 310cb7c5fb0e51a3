"""Wheelhouses of the DAS 25.04.1 vLLM image, for lock tests, the benchmark and ``lockfiles/``.

``community``: tiny wheels with the real metadata of the pip reports (vLLM 0.8.5.post1, 0.9.2 and
0.7.3 closures, community torch 2.4.1 with its nvidia-* wheels) under their real wheel tags, plus
the few Python-3.10-only dependencies the reports lack (they were trimmed on a newer Python:
``async-timeout``, ``exceptiongroup``, ``tomli``). ``vendor``: the 23 DAS 25.04.1 builds.
Both are deterministic: same inputs, same bytes, same sha256.
"""

from __future__ import annotations

from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .reports import (
    PackageMeta,
    community_torch_241_packages,
    das_25041_packages,
    load_report,
    make_wheelhouse,
)

__all__ = ["PY310_BACKPORTS", "build_community", "build_vendor", "real_tag"]

PY310_BACKPORTS: tuple[PackageMeta, ...] = (
    PackageMeta("async-timeout", "5.0.1", (), ">=3.8", (), "Timeout context manager for asyncio"),
    PackageMeta(
        "exceptiongroup",
        "1.3.0",
        ('typing-extensions>=4.6.0; python_version < "3.13"',),
        ">=3.7",
        ("test",),
        "Backport of PEP 654 (exception groups)",
    ),
    PackageMeta("tomli", "2.2.1", (), ">=3.8", (), "A lil' TOML parser"),
)
"""Dependencies that Python 3.10 needs (``python_version < "3.11"``) and the reports lack."""


def real_tag(pkg: PackageMeta) -> str:
    """The compressed tag of the real wheel (``cp38-abi3-manylinux1_x86_64``)."""
    if not pkg.filename:
        return "py3-none-any"
    return "-".join(pkg.filename[: -len(".whl")].split("-")[-3:])


def build_community(
    dest: Path, reports: tuple[str, ...] = ("vllm085",), *, tag: str | None = None
) -> list[Path]:
    """The public side: the reports' packages, community torch 2.4.1 and the backports.

    Wheels carry their real tags (CPython 3.10, manylinux x86_64); ``tag="py3-none-any"``
    gives wheels any interpreter here can install."""
    pkgs: list[PackageMeta] = []
    for name in reports:
        pkgs += load_report(name)
    pkgs += community_torch_241_packages()
    pkgs += PY310_BACKPORTS
    out: list[Path] = []
    seen: set[tuple[str, str]] = set()
    for pkg in pkgs:
        if (pkg.key, pkg.version) in seen:
            continue
        seen.add((pkg.key, pkg.version))
        out += make_wheelhouse(dest, [pkg], tag=tag or real_tag(pkg))
    return sorted(out)


def _drop_cuda_extras(pkg: PackageMeta) -> PackageMeta:
    """``ray[cgraph]`` exists only to pull ``cupy-cuda12x`` (CUDA compiled graphs): a DAS build
    requires plain ``ray``, as it drops every other CUDA-only requirement."""
    reqs = []
    for text in pkg.requires_dist:
        req = Requirement(text)
        if canonicalize_name(req.name) == "ray" and "cgraph" in req.extras:
            req.extras = req.extras - {"cgraph"}
            text = str(req)
        reqs.append(text)
    return pkg.replace(requires_dist=tuple(reqs))


def build_vendor(dest: Path) -> list[Path]:
    """The 23 DAS 25.04.1 vendor builds (``py3-none-any``)."""
    return make_wheelhouse(dest, [_drop_cuda_extras(p) for p in das_25041_packages()])
