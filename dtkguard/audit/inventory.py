"""What an audit saw, as plain data for the CycloneDX SBOM: dists and their RECORD hashes."""

from __future__ import annotations

from typing import Any

from dtkguard.audit.verify import RECORD_LIMIT
from dtkguard.env.dist import Dist
from dtkguard.records import decode_digest, rows_of
from dtkguard.util.safe_read import read_head


def record_files(dist: Dist) -> list[dict[str, Any]]:
    """RECORD rows with a sha256 (hex) digest: ``{"path", "sha256", "size"}``."""
    path = dist.record
    if path is None:
        return []
    try:
        text = read_head(path, RECORD_LIMIT, follow=False).decode("utf-8", "replace")
    except OSError:
        return []
    out = []
    for row in rows_of(text):
        if row is None or len(row) != 3 or not row[1].startswith("sha256="):
            continue
        decoded = decode_digest("sha256", row[1].partition("=")[2])
        if decoded is None:
            continue
        size = int(row[2]) if row[2].isdigit() else None
        out.append({"path": row[0], "sha256": decoded[0].hex(), "size": size})
    return out


def components(dists: list[Dist], *, files: bool = True) -> list[dict[str, Any]]:
    """One entry per dist; ``metadata_sha256``: hex digest of its METADATA per RECORD."""
    out = []
    for dist in dists:
        rows = record_files(dist) if files else []
        meta = next((r for r in rows if r["path"].endswith(".dist-info/METADATA")), None)
        out.append(
            {
                "name": dist.name,
                "key": dist.key,
                "version": dist.version,
                "location": dist.location,
                "installer": dist.installer,
                "requested": dist.requested,
                "direct_url": (dist.direct_url or {}).get("url"),
                "metadata_sha256": meta["sha256"] if meta else None,
                "files": rows,
            }
        )
    return out
