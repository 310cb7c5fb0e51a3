"""What a wheel holds, hashed from its bytes, and whether it is the build a target names.

`file_digests` hashes every member of the zip itself (never trusting the wheel's own RECORD);
`matches_baseline` compares them with the per-file hashes the baseline recorded for the vendor
build (through `baseline.is_baseline_build`, the one definition of "the same build");
`matches_lock` compares the wheel file's hash with the lock's hashes.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path
from typing import Any


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file (the resolver's reader: one way to hash a wheel)."""
    from dtkguard.resolve.sources import sha256_file

    return sha256_file(Path(path))


def file_digests(wheel: Path) -> dict[str, str]:
    """{member path as RECORD writes it once installed: hex sha256} of every wheel member.

    Members under ``<name>.data/purelib|platlib/`` land in site-packages: their path is the
    part after that folder. Other ``.data`` members (scripts, data) are left out: the baseline
    compares importable files.
    """
    out: dict[str, str] = {}
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            name = info.filename
            head, _, rest = name.partition("/")
            if head.endswith(".data"):
                kind, _, inner = rest.partition("/")
                if kind not in ("purelib", "platlib"):
                    continue
                name = inner
            h = hashlib.sha256()
            with zf.open(info) as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            out[name] = h.hexdigest()
    return out


def matches_baseline(baseline: dict[str, Any], name: str, version: str, wheel: Path) -> bool:
    """Every importable file of ``wheel`` is the baseline's vendor build's, no more, no fewer."""
    from dtkguard.env.baseline import is_baseline_build

    try:
        files = file_digests(wheel)
    except (OSError, zipfile.BadZipFile, ValueError):
        return False
    return bool(is_baseline_build(baseline, name, version, files=files))


def matches_lock(hashes: dict[str, str], wheel: Path) -> bool:
    """The wheel file's sha256 is one the lock names (a lock without sha256: no match)."""
    want = (hashes or {}).get("sha256")
    if not want:
        return False
    return sha256_of(wheel) == want.lower()


def dist_info_name(wheel: Path) -> str:
    """The ``NAME-VERSION.dist-info`` folder a wheel holds (the one pip installs as is);
    ``ValueError`` when it holds none or several."""
    with zipfile.ZipFile(wheel) as zf:
        found = {n.split("/", 1)[0] for n in zf.namelist() if n.count("/") == 1}
    infos = [n for n in found if n.endswith(".dist-info")]
    if len(infos) != 1:
        raise ValueError(f"{wheel.name}: {len(infos)} .dist-info folders")
    return infos[0]
