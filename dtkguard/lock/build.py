"""From a resolution (or an installed environment) to lock entries and ``[tool.dtkguard]``."""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from packaging.version import Version

from dtkguard.decision import canonical
from dtkguard.lock.write import LockEntry
from dtkguard.records import RECORD, info_member, rows_of
from dtkguard.resolve.sources import FileLink, FindLinks, Source


def _location(link: FileLink, lock_dir: Path) -> tuple[str | None, str | None]:
    """(url, path): a find-links wheel is recorded by its path relative to the lock file."""
    if link.path is not None:
        rel = os.path.relpath(Path(link.path).absolute(), lock_dir.absolute())
        return None, Path(rel).as_posix()
    return link.url, None


def entry_for(link: FileLink, policy: Any, lock_dir: Path, **fields: Any) -> LockEntry:
    link.source.complete(link)
    url, path = _location(link, lock_dir)
    name = canonical(link.project)
    tool: dict[str, Any] = {"source": "vendor" if link.vendor else "public"}
    if policy is not None and policy.vendor_build(name) is not None:
        tool["vendor-build"] = True
    if link.yanked:  # PEP 592: taken for an exact pin; the lock says so
        tool["yanked"] = link.yank_reason or True
    return LockEntry(
        name=name,
        version=str(link.version),
        wheel_name=link.filename,
        url=url,
        path=path,
        size=link.size,
        sha256=link.hashes.get("sha256"),
        upload_time=link.upload_time,
        index=link.source.index_url,
        tool=tool,
        sdist=link.is_sdist,
        **fields,
    )


# -- --from-env: match installed dists to wheels by RECORD ----------------------------------


def _record_entries(text: str) -> set[tuple[str, str]]:
    """(path, hash field) of every RECORD row with a hash."""
    return {(row[0], row[1]) for row in rows_of(text) if row and len(row) == 3 and row[1]}


def _wheel_record(source: Source, link: FileLink) -> set[tuple[str, str]] | None:
    if isinstance(source, FindLinks) and link.path is not None:
        data: bytes | Path = link.path
    else:
        getter = getattr(source, "wheel_bytes", None)
        if getter is None:
            return None
        data = getter(link)
    import zipfile  # --from-env only: a resolved lock needs no zip (nor shutil, bz2, lzma)

    src = io.BytesIO(data) if isinstance(data, bytes) else data
    with zipfile.ZipFile(src) as zf:
        record = info_member(zf.namelist(), RECORD)
        if record is None:
            return None
        entries = _record_entries(zf.read(record).decode("utf-8", "replace"))
    return {(p, h) for p, h in entries if ".data/" not in p.split("/", 1)[0] + "/"}


def match_installed(
    dist: Any, sources: Sequence[Source], target: Any
) -> tuple[FileLink | None, str]:
    """The wheel a dist was installed from (RECORD equal), or None and the reason."""
    record_path = dist.record
    if record_path is None:
        return None, "no RECORD"
    installed = _record_entries(record_path.read_text(encoding="utf-8", errors="replace"))
    name = canonical(dist.name)
    try:
        version = Version(dist.version)
    except ValueError:
        return None, f"version {dist.version!r} is not PEP 440"
    tried = []
    for source in sorted(sources, key=lambda s: not s.vendor):
        for link in source.links(name):
            if link.version != version or target.wheel_rank(link.tags) is None:
                continue
            wheel = _wheel_record(source, link)
            if wheel is not None and wheel <= installed:
                return link, "record"
            tried.append(link.filename)
    if tried:
        return None, f"installed files differ from {', '.join(sorted(set(tried)))}"
    return None, "no wheel of this version in the given sources"


def record_digest(dist: Any) -> str | None:
    path = dist.record
    if path is None:
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()
