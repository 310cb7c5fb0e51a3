"""Installed distributions, read from ``*.dist-info`` / ``*.egg-info`` without importing them."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from dtkguard.env.root import Root, child
from dtkguard.policy.compiled import canonical
from dtkguard.util.safe_read import read_head

#: METADATA larger than this is read only this far (headers come first)
METADATA_LIMIT = 1 << 20
SMALL_FILE_LIMIT = 1 << 16


@dataclass
class Dist:
    """One installed distribution."""

    name: str
    version: str
    #: host path of the .dist-info / .egg-info directory (or .egg-info file)
    path: Path
    #: host path of the site directory that holds it
    site: Path
    root: Root = field(repr=False, default_factory=Root)
    #: which interpreter prefix it belongs to (several under an image root)
    group: str = ""
    headers: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @cached_property
    def key(self) -> str:
        return canonical(self.name)

    @property
    def location(self) -> str:
        """The dist-info path as the target sees it."""
        return self.root.inner(self.path)

    def _small(self, name: str) -> str | None:
        if not self.path.is_dir():
            return None
        try:
            return read_head(
                child(self.root, self.path, name), SMALL_FILE_LIMIT, follow=False
            ).decode("utf-8", "replace")
        except OSError:
            return None

    @cached_property
    def installer(self) -> str | None:
        text = self._small("INSTALLER")
        return text.strip() or None if text is not None else None

    @cached_property
    def requested(self) -> bool:
        return self.path.is_dir() and os.path.lexists(self.path / "REQUESTED")

    @cached_property
    def direct_url(self) -> dict | None:
        text = self._small("direct_url.json")
        try:
            data = json.loads(text) if text else None
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    @property
    def record(self) -> Path | None:
        """Host path of RECORD, None when there is none."""
        if not self.path.is_dir():
            return None
        path = child(self.root, self.path, "RECORD")
        return path if path.is_file() else None

    @property
    def requires_dist(self) -> list[str]:
        return self.headers.get("requires-dist", [])

    @property
    def requires_python(self) -> str | None:
        values = self.headers.get("requires-python")
        return values[0] if values else None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "version": self.version,
            "location": self.location,
            "installer": self.installer,
            "requested": self.requested,
            "direct_url": self.direct_url,
        }


def parse_headers(data: bytes) -> dict[str, list[str]]:
    """RFC 822 headers of METADATA/PKG-INFO, lower-cased keys, continuation lines joined."""
    end = data.find(b"\n\n")
    text = (data if end < 0 else data[:end]).decode("utf-8", "replace")
    headers: dict[str, list[str]] = {}
    last: list[str] | None = None
    for line in text.splitlines():
        if line[:1] in (" ", "\t") and last is not None:
            last[-1] += "\n" + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        last = headers.setdefault(key.strip().lower(), [])
        last.append(value.strip())
    return headers


def read_dist(root: Root, site: Path, entry: str, group: str = "") -> Dist | str:
    """Read one ``*.dist-info`` / ``*.egg-info`` entry; a string describes why it could not be."""
    try:  # a symlink loop or a link that cannot be resolved inside the root is a warning
        path = child(root, site, entry)
        if path.is_dir():
            meta = child(root, path, "METADATA" if entry.endswith(".dist-info") else "PKG-INFO")
        else:
            meta = path  # an .egg-info file is the PKG-INFO itself
        data = read_head(meta, METADATA_LIMIT, follow=False)
    except OSError as exc:
        return f"{root.inner(site / entry)}: cannot read metadata: {exc.strerror or exc}"
    headers = parse_headers(data)
    name = (headers.get("name") or [""])[0]
    version = (headers.get("version") or [""])[0]
    if not name or not version:
        return f"{root.inner(site / entry)}: broken metadata (no Name or Version)"
    return Dist(name, version, path, site, root, group, headers)


def scan_site(root: Root, site: Path, group: str = "") -> tuple[list[Dist], list[str]]:
    """All distributions in one site directory, and warnings for what could not be read."""
    dists: list[Dist] = []
    warnings: list[str] = []
    try:
        entries = sorted(os.listdir(site))
    except OSError as exc:
        return [], [f"{root.inner(site)}: cannot list: {exc.strerror or exc}"]
    for entry in entries:
        if not entry.endswith((".dist-info", ".egg-info")):
            continue
        result = read_dist(root, site, entry, group)
        (dists if isinstance(result, Dist) else warnings).append(result)  # type: ignore[arg-type]
    return dists, warnings
