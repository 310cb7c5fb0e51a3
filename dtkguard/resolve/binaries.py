"""The native code of wheels that are about to be installed or locked, judged before they are.

`wheel_listing` reads one wheel's zip once for every judgement made before an install (its
members, the few it reads, what its shared objects link), kept for the run by the file's
identity; `wheel_findings` judges each shared-object member by what it links
(`dtkguard.env.binaries.linkage_problems`, the judgement the pip hook makes from its copy of
`dtkguard.elf`); `fetch_wheel` brings a wheel named by URL to a local file (a ``file:`` URL is
used in place; ``http(s)`` is downloaded, capped, and checked against its sha256 when one is
known). dtkpip and dtkuv call them on their plans, `lock --verify-binaries` on its lock.
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.parse
import zipfile
from pathlib import Path

from dtkguard.errors import InputError
from dtkguard.findings import Finding
from dtkguard.lightclass import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.elf import Linkage
    from dtkguard.policy.compiled import CompiledPolicy

#: a wheel larger than this is not downloaded to be judged
MAX_WHEEL_BYTES = 8 << 30
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


def native(filename: str) -> bool:
    """Can a wheel of this file name hold native code (its tags are not ``none-any``)?"""
    return filename.endswith(".whl") and not filename.endswith("-none-any.whl")


#: bytes kept of a member the file judgement reads for its content (a ``.pth``)
HEAD_BYTES = 65536
#: listings kept in one process (the wheels of one plan)
KEPT_LISTINGS = 64


@record(frozen=True)
class WheelListing:
    """One read of a wheel's zip: all the judgements before an install need of it."""

    #: every member's name, in the central directory's order
    names: list[str]
    #: {index in ``names``: its bytes} of the members read for their content: the top-level
    #: ``*.dist-info/WHEEL`` and ``entry_points.txt`` whole, any name holding ``.pth`` (its
    #: first `HEAD_BYTES`: where it lands is the file judgement's to say)
    heads: dict[int, bytes]
    #: `dtkguard.elf.wheel_linkages` of the wheel
    linkages: list[tuple[str, Linkage | None, str]]
    #: why a member of ``heads`` could not be read ("" when all were)
    error: str


_LISTINGS: dict[tuple[int, ...], WheelListing] = {}


def wheel_listing(wheel: str | os.PathLike[str]) -> WheelListing:
    """The `WheelListing` of ``wheel``, read once while the file is the same one (kept by the
    device, inode, size, mtime and ctime of the file it opened; a file replaced or rewritten
    since is read again). Raises `OSError` or `zipfile.BadZipFile` when it is no zip.
    Invariant: a listing is returned only for a file whose stat, taken on the open file now,
    is the one of the file it was read from."""
    from dtkguard.elf import wheel_linkages
    from dtkguard.records import is_info_member

    with open(wheel, "rb") as fh:
        st = os.fstat(fh.fileno())
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        kept = _LISTINGS.get(key)
        if kept is not None:
            return kept
        with zipfile.ZipFile(fh) as zf:
            infos = zf.infolist()
            heads: dict[int, bytes] = {}
            error = ""
            for i, info in enumerate(infos):
                name = info.filename
                whole = is_info_member(name, "WHEEL") or is_info_member(name, "entry_points.txt")
                if not whole and ".pth" not in name:
                    continue
                try:
                    heads[i] = _head(zf, info, whole)
                except Exception as exc:  # a broken member: the file judgement refuses it
                    error = error or f"{name}: {exc}"
            names = [i.filename for i in infos]
            listing = WheelListing(names, heads, wheel_linkages(zf), error)
    while len(_LISTINGS) >= KEPT_LISTINGS:
        del _LISTINGS[next(iter(_LISTINGS))]
    _LISTINGS[key] = listing
    return listing


def _head(zf: zipfile.ZipFile, info: zipfile.ZipInfo, whole: bool) -> bytes:
    """The bytes of a member (its first `HEAD_BYTES` unless ``whole``): read whole, its CRC
    checked, when it is no larger (a ``model.pth`` of weights is not read whole)."""
    if whole or info.file_size <= HEAD_BYTES:
        return zf.read(info)[: None if whole else HEAD_BYTES]
    with zf.open(info) as fh:
        return fh.read(HEAD_BYTES)


def wheel_findings(
    policy: CompiledPolicy, name: str, wheel: str | os.PathLike[str]
) -> list[Finding]:
    """`Finding` s of the shared objects of ``wheel`` (a local file) of dist ``name``, at the
    severities of the ``binary`` rules; the policy's exceptions are not applied here."""
    from dtkguard.env.binaries import linkage_problems, wheel_problems
    from dtkguard.rules.binary import RULES, remediation

    rules = {r.id: r for r in RULES}
    vendor = policy.vendor_build(name)
    try:
        problems = linkage_problems(policy.decision_json(), name, wheel_listing(wheel).linkages)
    except (OSError, zipfile.BadZipFile):  # its words: `wheel_problems` (which fails again)
        problems = wheel_problems(policy.decision_json(), name, wheel)
    out = []
    for p in problems:
        rule = rules[p.rule]
        evidence = {**p.evidence, "wheel": Path(wheel).name}
        where = f"{Path(wheel).name}:{p.evidence.get('file', '')}".rstrip(":")
        out.append(
            Finding(
                rule.id,
                rule.severity,
                p.package,
                p.message,
                remediation(p.rule, name, vendor),
                where,
                evidence,
            )
        )
    return out


def fetch_wheel(url: str, folder: Path, sha256: str | None = None) -> Path:
    """A local file holding the wheel at ``url``; `InputError` when it cannot be had or its
    sha256 is not ``sha256``."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("", "file"):
        path = Path(urllib.parse.unquote(parts.path) if parts.scheme else url)
        if sha256 is not None and _sha256(path) != sha256:
            raise InputError(f"{path}: sha256 differs from {sha256}", field="hashes")
        return path
    if parts.scheme not in ("http", "https"):
        raise InputError(f"cannot fetch {url}: not a file, http or https URL", field="url")
    from urllib.request import urlopen

    name = urllib.parse.unquote(parts.path.rsplit("/", 1)[-1]) or "wheel.whl"
    dest = folder / name
    digest = hashlib.sha256()
    try:
        with urlopen(url, timeout=60) as resp, open(dest, "wb") as out:
            total = 0
            while chunk := resp.read(1 << 20):
                total += len(chunk)
                if total > MAX_WHEEL_BYTES:
                    raise InputError(f"{url}: larger than {MAX_WHEEL_BYTES} bytes", field="url")
                digest.update(chunk)
                out.write(chunk)
    except OSError as exc:
        raise InputError(f"cannot fetch {url}: {exc}", field="url") from None
    if sha256 is not None and digest.hexdigest() != sha256.lower():
        raise InputError(f"{url}: sha256 differs from {sha256}", field="hashes")
    return dest


def _sha256(path: Path) -> str | None:
    from dtkguard.env.filehash import hash_file

    status, digest, _, _ = hash_file(str(path), "sha256", False)
    return digest.hex() if status == "ok" else None


def local_wheels(name: str, version: str, folders: list[str], paths: list[str]) -> list[Path]:
    """Wheels of ``name`` ``version`` among the files ``paths`` and in the ``folders``
    (find-links directories), by their file names."""
    from dtkguard.decision import canonical, same_version

    key = canonical(name)
    found: list[Path] = []
    candidates = [Path(p) for p in paths]
    for folder in folders:
        try:
            candidates += sorted(Path(folder).glob("*.whl"))
        except OSError:
            continue
    for path in candidates:
        m = _WHEEL.match(path.name)
        ours = m and canonical(m["name"]) == key and same_version(m["version"], version)
        if ours and path.is_file() and path not in found:
            found.append(path)
    return found
