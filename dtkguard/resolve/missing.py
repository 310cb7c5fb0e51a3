"""Every project of the likely graph that has no usable file for the target, found at once.

resolvelib stops at the first conflict, so a request whose closure lacks wheels for three
backports would otherwise be told about one per run (tomli, then exceptiongroup, then
async-timeout). After a failed resolution this walks the graph the prefetch already read, the
newest candidate of each project and its dependencies for the target, and names each project
that has no candidate at all, with the reason and who needs it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from dtkguard.decision import canonical
from dtkguard.resolve.candidates import PYTHON
from dtkguard.resolve.metadata import BadMetadata

#: at most this many projects are looked at
MAX_PROJECTS = 2000


def without_files(provider: Any, roots: Sequence[Any], deadline: float) -> list[tuple[str, str]]:
    """``[(project, needed by)]`` for every project reached from ``roots`` (resolver
    requirements) through newest candidates that has no candidate for the target."""
    queue: list[tuple[str, frozenset[str], str]] = [
        (r.name, r.extras, "the request") for r in roots
    ]
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    while queue and len(seen) < MAX_PROJECTS and time.monotonic() < deadline:
        name, extras, who = queue.pop(0)
        if name in seen or name == PYTHON:
            continue
        seen.add(name)
        cands = provider.candidates_for(name)
        if not cands:
            out.append((name, who))
            continue
        version, link = cands[0]
        try:
            meta = provider.metadata(link)
        except BadMetadata:
            continue
        deps = []
        envs = ["", *sorted(extras)]
        for req in meta.requires_dist:
            if req.marker is None or any(provider.marker_ok(req.marker, e) for e in envs):
                deps.append((canonical(req.name), frozenset(canonical(e) for e in req.extras)))
        provider.warm(d for d, _ in deps)
        queue += [(d, x, f"{name} {version}") for d, x in deps if d not in seen]
    return out
