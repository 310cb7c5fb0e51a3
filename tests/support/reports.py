"""Real dependency metadata (trimmed pip reports) and wheelhouses of tiny wheels built from it.

``tests/data/pip-reports/*.json`` is pip 26.3 ``install --dry-run --report`` output for a clean
Python 3.10 manylinux x86_64 environment. :func:`make_wheelhouse` turns such metadata into
payload-free wheels (one small module each) that real pip and uv resolve exactly like the real ones.
Vendor (DAS) builds are modelled on the community metadata: the version gains the local label, pins
on torch/torchvision/torchaudio/triton point at the vendor builds and CUDA-only requirements go.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from .wheels import build_wheel, import_name

__all__ = [
    "DAS_25041",
    "DAS_LABEL",
    "DATA_DIR",
    "REPORTS_DIR",
    "VENDOR_PINS",
    "PackageMeta",
    "community_torch_241",
    "community_torch_241_packages",
    "das_25041_packages",
    "is_cuda_only",
    "load_report",
    "make_wheelhouse",
    "py310_backports_packages",
    "report_names",
    "vendorise",
]

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
REPORTS_DIR = DATA_DIR / "pip-reports"

DAS_LABEL = "das.opt1.dtk25041"
"""The local label of the DAS 25.04.1 image's main vendor builds."""

DAS_25041: dict[str, str] = dict(
    line.split() for line in (DATA_DIR / "das-25.04.1-pip-list.txt").read_text().splitlines()
)
"""The 23 vendor builds of the DAS 25.04.1 image (``pip list | grep dtk``), name as listed."""

VENDOR_PINS: dict[str, str] = {
    n: DAS_25041[n] for n in ("torch", "torchvision", "torchaudio", "triton")
}
"""Requirements on these names are rewritten to ``==`` the vendor build by :func:`vendorise`."""

VENDOR_HIP = "6.2.41134-65d174c3e"
"""A plausible ``torch.version.hip`` for a DTK 25.04.1 torch (the real string is unverified)."""


@dataclass(frozen=True)
class PackageMeta:
    """Core metadata of one distribution, plus the real wheel it came from (if any)."""

    name: str
    version: str
    requires_dist: tuple[str, ...] = ()
    requires_python: str | None = None
    provides_extra: tuple[str, ...] = ()
    summary: str = ""
    requested: bool = False
    filename: str = ""
    """The real wheel's file name (empty for synthetic packages)."""
    sha256: str = ""
    """The real wheel's sha256 hex digest (empty for synthetic packages)."""

    @property
    def key(self) -> str:
        """PEP 503 normalised name (``flash-attn``)."""
        return canonicalize_name(self.name)

    @property
    def tag(self) -> str | None:
        """The real wheel's compressed tag (``cp38-abi3-manylinux1_x86_64``), if known."""
        if not self.filename:
            return None
        return "-".join(self.filename[: -len(".whl")].split("-")[-3:])

    def replace(self, **changes: object) -> PackageMeta:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def report_names() -> list[str]:
    """Names of the bundled reports (``hfstack``, ``lmdeploy``, ``vllm073``, ...)."""
    return sorted(p.stem for p in REPORTS_DIR.glob("*.json"))


def load_report(name: str | Path) -> list[PackageMeta]:
    """Load a bundled report by name (``"vllm085"``) or any pip ``--report`` JSON by path."""
    path = Path(name) if str(name).endswith(".json") else REPORTS_DIR / f"{name}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for item in data["install"]:
        meta = item["metadata"]
        file = item.get("file") or {}
        if not file and "download_info" in item:  # an untrimmed pip report
            url = item["download_info"]["url"]
            file = {
                "filename": url.rsplit("/", 1)[-1],
                "hashes": {"sha256": item["download_info"]["archive_info"]["hash"].split("=")[-1]},
            }
        out.append(
            PackageMeta(
                name=meta["name"],
                version=meta["version"],
                requires_dist=tuple(meta.get("requires_dist") or ()),
                requires_python=meta.get("requires_python"),
                provides_extra=tuple(meta.get("provides_extra") or ()),
                summary=meta.get("summary") or "",
                requested=bool(item.get("requested", False)),
                filename=file.get("filename", ""),
                sha256=(file.get("hashes") or {}).get("sha256", ""),
            )
        )
    return out


def is_cuda_only(requirement: str) -> bool:
    """True for requirements a DAS build drops: ``nvidia-*``, ``cupy-cuda12x``, ``xformers``."""
    name = canonicalize_name(Requirement(requirement).name)
    return name.startswith("nvidia-") or name.startswith("cupy-cuda") or name == "xformers"


def _rewrite(requirement: str, pins: Mapping[str, str]) -> str:
    req = Requirement(requirement)
    pinned = {canonicalize_name(k): v for k, v in pins.items()}
    version = pinned.get(canonicalize_name(req.name))
    if version is None:
        return requirement
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    marker = f"; {req.marker}" if req.marker else ""
    return f"{req.name}{extras}=={version}{marker}"


def vendorise(
    pkg: PackageMeta,
    *,
    label: str = DAS_LABEL,
    pins: Mapping[str, str] = VENDOR_PINS,
    version: str | None = None,
) -> PackageMeta:
    """The vendor build of ``pkg``: version ``{public}+{label}`` (or ``version``), every
    requirement on a name in ``pins`` rewritten to ``==`` that build (extras and markers kept),
    CUDA-only requirements dropped. The real-wheel fields are cleared."""
    reqs = tuple(_rewrite(r, pins) for r in pkg.requires_dist if not is_cuda_only(r))
    return pkg.replace(
        version=version or f"{Version(pkg.version).public}+{label}",
        requires_dist=reqs,
        filename="",
        sha256="",
    )


_TORCH241_NVIDIA = {
    "nvidia-cuda-nvrtc-cu12": "12.1.105",
    "nvidia-cuda-runtime-cu12": "12.1.105",
    "nvidia-cuda-cupti-cu12": "12.1.105",
    "nvidia-cudnn-cu12": "9.1.0.70",
    "nvidia-cublas-cu12": "12.1.3.1",
    "nvidia-cufft-cu12": "11.0.2.54",
    "nvidia-curand-cu12": "10.3.2.106",
    "nvidia-cusolver-cu12": "11.4.5.107",
    "nvidia-cusparse-cu12": "12.1.0.106",
    "nvidia-nccl-cu12": "2.20.5",
    "nvidia-nvtx-cu12": "12.1.105",
}
_NVIDIA_DEPS = {
    "nvidia-cudnn-cu12": ("nvidia-cublas-cu12",),
    "nvidia-cusolver-cu12": ("nvidia-cublas-cu12", "nvidia-nvjitlink-cu12", "nvidia-cusparse-cu12"),
    "nvidia-cusparse-cu12": ("nvidia-nvjitlink-cu12",),
}
_LINUX_X86 = 'platform_system == "Linux" and platform_machine == "x86_64"'


def community_torch_241_packages() -> list[PackageMeta]:
    """The community ``torch 2.4.1`` a public index serves (CUDA 12.1: eleven ``nvidia-*-cu12``
    pins and ``triton==3.0.0``), its nvidia wheels and triton, and ``torchvision 0.19.1`` /
    ``torchaudio 2.4.1`` built against it. Requires-Dist as in the real wheels."""
    torch_reqs = (
        "filelock",
        "typing-extensions>=4.8.0",
        "sympy",
        "networkx",
        "jinja2",
        "fsspec",
        *(f"{n}=={v}; {_LINUX_X86}" for n, v in _TORCH241_NVIDIA.items()),
        f'triton==3.0.0; {_LINUX_X86} and python_version < "3.13"',
        'opt-einsum>=3.3; extra == "opt-einsum"',
        'optree>=0.11.0; extra == "optree"',
    )
    pkgs = [
        PackageMeta(
            "torch",
            "2.4.1",
            torch_reqs,
            ">=3.8.0",
            ("opt-einsum", "optree"),
            "Tensors and Dynamic neural networks in Python with strong GPU acceleration",
        ),
        PackageMeta(
            "triton",
            "3.0.0",
            ("filelock",),
            None,
            (),
            "A language and compiler for custom Deep Learning operations",
        ),
        PackageMeta(
            "torchvision",
            "0.19.1",
            ("numpy", "torch==2.4.1", "pillow!=8.3.*,>=5.3.0", 'scipy; extra == "scipy"'),
            ">=3.8",
            ("scipy",),
            "image and video datasets and models for torch deep learning",
        ),
        PackageMeta(
            "torchaudio", "2.4.1", ("torch==2.4.1",), None, (), "An audio package for PyTorch"
        ),
        PackageMeta("nvidia-nvjitlink-cu12", "12.1.105", (), ">=3", (), "Nvidia JIT LTO Library"),
    ]
    for name, version in _TORCH241_NVIDIA.items():
        pkgs.append(PackageMeta(name, version, _NVIDIA_DEPS.get(name, ()), ">=3", (), name))
    return pkgs


def py310_backports_packages() -> list[PackageMeta]:
    """``async-timeout``, ``exceptiongroup`` and ``tomli``: required on Python < 3.11 but missing
    from the bundled reports; add them to any wheelhouse that must resolve on Python 3.10."""
    return [
        PackageMeta(
            "async-timeout", "5.0.1", (), ">=3.8", (), "Timeout context manager for asyncio"
        ),
        PackageMeta(
            "exceptiongroup",
            "1.3.0",
            ('typing-extensions>=4.6.0; python_version < "3.13"', 'pytest>=6; extra == "test"'),
            ">=3.7",
            ("test",),
            "Backport of PEP 654 (exception groups)",
        ),
        PackageMeta("tomli", "2.2.1", (), ">=3.8", (), "A lil' TOML parser"),
    ]


def community_torch_241(dest: Path, *, tag: str = "py3-none-any") -> list[Path]:
    """Write :func:`community_torch_241_packages` as wheels into ``dest``."""
    return make_wheelhouse(dest, community_torch_241_packages(), tag=tag)


_DAS_SYNTHETIC: dict[str, tuple[str, ...]] = {
    "apex": ("packaging>20.6", "torch"),
    "deepspeed": ("ninja", "numpy", "packaging>=20.0", "psutil", "py-cpuinfo", "pydantic", "torch"),
    "dgl": ("numpy>=1.14.0", "scipy>=1.1.0", "networkx>=2.1", "requests>=2.19.0", "tqdm", "torch"),
    "flash_attn": ("torch", "einops"),
    "mmcv": ("numpy", "packaging", "pillow", "pyyaml", "torch"),
    "onnxruntime": ("numpy>=1.21.6", "packaging", "protobuf", "sympy"),
    "transformer-engine": ("torch", "pydantic", "importlib-metadata>=1.0", "packaging"),
}


def das_25041_packages() -> list[PackageMeta]:
    """Metadata of the 23 DAS 25.04.1 vendor builds (:data:`DAS_25041`).

    vllm comes from the real ``vllm085`` report; torch, torchvision, torchaudio and triton from
    :func:`community_torch_241_packages`; all vendorised. The kernel packages (flash_attn,
    lmslim, lightop, ...) are synthetic: they require ``torch==<vendor>`` and at most a few
    packages that the community reports also carry.
    """
    base = {p.key: p for p in community_torch_241_packages()}
    base.update({p.key: p for p in load_report("vllm085") if p.key == "vllm"})
    out = []
    for name, version in DAS_25041.items():
        pkg = base.get(canonicalize_name(name))
        if pkg is None:
            reqs = _DAS_SYNTHETIC.get(name, ("torch",))
            pkg = PackageMeta(name, Version(version).public, reqs, ">=3.8", (), f"{name} (DAS)")
        else:
            pkg = pkg.replace(name=name)
        out.append(vendorise(pkg, version=version))
    return out


def _payload(pkg: PackageMeta) -> dict[str, str]:
    module = import_name(pkg.name)
    version = str(Version(pkg.version))
    files = {f"{module}/__init__.py": f"__version__ = {version!r}\n"}
    if pkg.key == "torch":
        vendor = any(t in (Version(version).local or "") for t in ("das", "dtk"))
        cuda, hip = (None, VENDOR_HIP) if vendor else ("12.4", None)
        files["torch/__init__.py"] = (
            f"from .version import __version__\n\n__version__ = {version!r}\n"
        )
        files["torch/version.py"] = (
            "from typing import Optional\n\n"
            "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
            f"__version__ = {version!r}\n"
            "debug = False\n"
            f"cuda: Optional[str] = {cuda!r}\n"
            "git_version = '0000000000000000000000000000000000000000'\n"
            f"hip: Optional[str] = {hip!r}\n"
        )
    return files


def make_wheelhouse(
    dest: Path,
    packages: Iterable[PackageMeta],
    *,
    vendor: bool = False,
    label: str = DAS_LABEL,
    vendor_names: Iterable[str] | None = None,
    pins: Mapping[str, str] = VENDOR_PINS,
    tag: str | None = "py3-none-any",
) -> list[Path]:
    """Write one tiny wheel per package into ``dest`` and return the paths (sorted).

    Each wheel carries the package's real metadata and one module ``{import_name}/__init__.py``;
    a torch wheel also has ``torch/version.py`` (community: ``cuda='12.4'``, ``hip=None``; a
    ``das``/``dtk`` build: ``cuda=None``, ``hip=VENDOR_HIP``). Duplicates (same name and version)
    are written once, first wins.

    ``vendor=True`` writes only packages named in ``vendor_names`` (default: the 23 of
    :data:`DAS_25041`), each through :func:`vendorise` with ``label`` and ``pins``. ``tag=None``
    keeps the real wheel's tag (``py3-none-any`` for synthetic packages).
    """
    wanted = {
        canonicalize_name(n) for n in (vendor_names if vendor_names is not None else DAS_25041)
    }
    seen: set[tuple[str, str]] = set()
    out: list[Path] = []
    for pkg in packages:
        if vendor:
            if pkg.key not in wanted:
                continue
            pkg = vendorise(pkg, label=label, pins=pins)
        ident = (pkg.key, str(Version(pkg.version)))
        if ident in seen:
            continue
        seen.add(ident)
        wheel_tag = tag or pkg.tag or "py3-none-any"
        if pkg.filename and tag is None:
            parse_wheel_filename(pkg.filename)  # fail loudly on a malformed real file name
        out.append(
            build_wheel(
                Path(dest),
                pkg.name,
                pkg.version,
                requires_dist=pkg.requires_dist,
                requires_python=pkg.requires_python,
                provides_extra=pkg.provides_extra,
                summary=pkg.summary,
                files=_payload(pkg),
                tag=wheel_tag,
            )
        )
    return sorted(out)
