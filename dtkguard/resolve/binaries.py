"""The native code of wheels that are about to be installed or locked, judged before they are.

`wheel_findings` opens one wheel and judges each shared-object member by what it links
(`dtkguard.env.binaries.wheel_problems`, the judgement the pip hook makes from its copy of
`dtkguard.elf`); `fetch_wheel` brings a wheel named by URL to a local file (a ``file:`` URL is
used in place; ``http(s)`` is downloaded, capped, and checked against its sha256 when one is
known). dtkpip and dtkuv call them on their plans, `lock --verify-binaries` on its lock.
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.parse
from pathlib import Path

from dtkguard.errors import InputError
from dtkguard.findings import Finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.policy.compiled import CompiledPolicy

#: a wheel larger than this is not downloaded to be judged
MAX_WHEEL_BYTES = 8 << 30
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


def native(filename: str) -> bool:
    """Can a wheel of this file name hold native code (its tags are not ``none-any``)?"""
    return filename.endswith(".whl") and not filename.endswith("-none-any.whl")


def wheel_findings(
    policy: CompiledPolicy, name: str, wheel: str | os.PathLike[str]
) -> list[Finding]:
    """`Finding` s of the shared objects of ``wheel`` (a local file) of dist ``name``, at the
    severities of the ``binary`` rules; the policy's exceptions are not applied here."""
    from dtkguard.env.binaries import wheel_problems
    from dtkguard.rules.binary import RULES, remediation

    rules = {r.id: r for r in RULES}
    vendor = policy.vendor_build(name)
    out = []
    for p in wheel_problems(policy.decision_json(), name, wheel):
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
