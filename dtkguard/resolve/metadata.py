"""Core metadata as the resolver needs it: name, version, Requires-Dist, Requires-Python, extras."""

from __future__ import annotations

import re

from packaging.markers import InvalidMarker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from dtkguard.decision import canonical
from dtkguard.env.dist import parse_headers
from dtkguard.errors import InputError
from dtkguard.resolve.sources import FileLink

_EXTRA_IN_MARKER = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")

#: parsed ``Requires-Dist`` values by their text: the versions of one project mostly repeat
#: the same lines (nothing changes a parsed `Requirement`; a line that does not parse is not
#: kept and raises again)
_PARSED: dict[str, Requirement] = {}


def _requirement(text: str) -> Requirement:
    hit = _PARSED.get(text)
    if hit is None:
        hit = _PARSED[text] = Requirement(text)
    return hit


class BadMetadata(InputError):
    """A wheel's core metadata is unusable (wrong name, unparsable requirement): like pip and
    uv, the resolver skips that candidate and says so; it is never used."""


class Metadata:
    """What the resolver needs from core metadata."""

    __slots__ = ("name", "provides_extra", "requires_dist", "requires_python", "version")

    def __init__(self, raw: bytes, link: FileLink) -> None:
        headers = parse_headers(raw)
        self.name = (headers.get("name") or [link.project])[0]
        self.version = (headers.get("version") or [str(link.version)])[0]
        if canonical(self.name) != link.project:
            raise BadMetadata(
                f"metadata names {self.name!r}, the file name says {link.project!r}",
                link.url or str(link.path),
            )
        try:
            self.requires_dist = [_requirement(r) for r in headers.get("requires-dist", [])]
            self.provides_extra = frozenset(
                canonical(e) for e in headers.get("provides-extra", [])
            ) | frozenset(
                canonical(m)
                for r in self.requires_dist
                if r.marker is not None
                for m in _EXTRA_IN_MARKER.findall(str(r.marker))
            )
            rp = (headers.get("requires-python") or [""])[0].strip()
            self.requires_python = SpecifierSet(rp) if rp else None
        except (InvalidRequirement, InvalidSpecifier, InvalidMarker) as exc:
            raise BadMetadata(
                f"bad metadata in {link.filename}: {exc}", link.url or str(link.path)
            ) from None
