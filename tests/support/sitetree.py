"""Write fake installed distributions (``*.dist-info``) into a folder, as installers lay them out.

For unit tests of the reader and the rules; tests that need real installs use real pip
(tests/support).
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path


def add_dist(
    site: Path,
    name: str,
    version: str,
    *,
    requires: tuple[str, ...] = (),
    files: dict[str, str | bytes] | None = None,
    installer: str | None = "pip",
    record: bool = True,
) -> Path:
    """Create ``name-version.dist-info`` (METADATA, INSTALLER, RECORD) and the given files."""
    site.mkdir(parents=True, exist_ok=True)
    dist_info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (dist_info / "METADATA").write_text("\n".join(lines) + "\n\n")
    if installer:
        (dist_info / "INSTALLER").write_text(installer + "\n")
    rows = []
    for rel, content in (files or {}).items():
        data = content.encode() if isinstance(content, str) else content
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{rel},sha256={digest},{len(data)}")
    if record:
        for meta in ("METADATA", "INSTALLER"):
            if (dist_info / meta).exists():
                rows.append(f"{dist_info.name}/{meta},,")
        rows.append(f"{dist_info.name}/RECORD,,")
        (dist_info / "RECORD").write_text("\n".join(rows) + "\n")
    return dist_info


VENDOR_TORCH_VERSION_PY = (
    "__version__ = '2.4.1'\ndebug = False\ncuda = None\n"
    "git_version = 'abc'\nhip = '6.2.41134-65d174c3e'\n"
)
COMMUNITY_TORCH_VERSION_PY = (
    "from typing import Optional\n__version__ = '2.4.1+cu124'\ndebug = False\n"
    "cuda: Optional[str] = '12.4'\ngit_version = 'abc'\nhip: Optional[str] = None\n"
)


def vendor_site(site: Path) -> Path:
    """A site-packages holding a clean DAS 25.04.1 core: torch, torchvision, triton, vllm."""
    add_dist(
        site,
        "torch",
        "2.4.1+das.opt1.dtk25041",
        files={"torch/__init__.py": "", "torch/version.py": VENDOR_TORCH_VERSION_PY},
    )
    add_dist(
        site,
        "torchvision",
        "0.19.1+das.opt1.dtk25041",
        requires=("torch==2.4.1+das.opt1.dtk25041",),
    )
    add_dist(site, "triton", "3.0.0+das.opt1.dtk25041")
    add_dist(
        site,
        "vllm",
        "0.8.5.post1+das.opt1.dtk25041",
        requires=("torch==2.4.1+das.opt1.dtk25041", "triton==3.0.0+das.opt1.dtk25041"),
    )
    add_dist(site, "grouped-gemm", "0.5.0+das.dtk2504")
    add_dist(site, "accelerate", "1.6.0", requires=("torch>=2.0.0",))
    return site


def add_egg(
    site: Path,
    name: str,
    version: str,
    files: dict[str, str],
    *,
    zipped: bool = False,
    pth: bool = True,
) -> Path:
    """An ``.egg`` as ``setup.py install`` (easy_install) of setuptools < 80 laid it out:
    ``Name-Version-pyX.Y.egg`` (a directory or a zip) holding the modules and ``EGG-INFO``,
    and, with ``pth``, its line in ``easy-install.pth`` between the lines that move eggs in
    front of site-packages on sys.path."""
    import sys
    import zipfile

    egg = site / f"{name}-{version}-py{sys.version_info[0]}.{sys.version_info[1]}.egg"
    top = sorted({rel.split("/")[0].removesuffix(".py") for rel in files})
    content = {
        **files,
        "EGG-INFO/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n",
        "EGG-INFO/SOURCES.txt": "".join(f"{rel}\n" for rel in files),
        "EGG-INFO/top_level.txt": "".join(f"{t}\n" for t in top),
        "EGG-INFO/dependency_links.txt": "\n",
        "EGG-INFO/not-zip-safe": "\n",
    }
    if zipped:
        with zipfile.ZipFile(egg, "w") as zf:
            for rel, text in content.items():
                zf.writestr(rel, text)
    else:
        for rel, text in content.items():
            (egg / rel).parent.mkdir(parents=True, exist_ok=True)
            (egg / rel).write_text(text)
    if pth:
        path = site / "easy-install.pth"
        entries = []
        if path.exists():
            entries = [
                line for line in path.read_text().splitlines() if not line.startswith("import")
            ]
        entries.append(f"./{egg.name}")
        path.write_text(
            "import sys; sys.__plen = len(sys.path)\n"
            + "".join(f"{e}\n" for e in entries)
            + "import sys; new = sys.path[sys.__plen:]; del sys.path[sys.__plen:]; "
            "p = getattr(sys, '__egginsert', 0); sys.path[p:p] = new; "
            "sys.__egginsert = p + len(new)\n"
        )
    return egg
