"""The resolution cache: a lock made before from exactly these inputs is written again.

An entry is keyed by every input of ``lock``: the requirements as given, the policy's digest,
today's date (policy exceptions expire), the target, every option that reaches the lock or its
messages, the sources in order (a find-links folder with every file's name, size, mtime, ctime,
inode and device), the running Python's version, and the code of dtkguard and of the libraries
that shape a lock (the name, size and mtime of each of their modules). It also records the
sha256 of every index page the resolution read; on use each page is asked for again (through
the page cache: a conditional request, or nothing while ``Cache-Control`` says it is fresh)
and must have the same status and sha256, or the entry is a miss. So a hit is the
answer a fresh resolution gives: the same lock, byte for byte, and the same messages.

Not cached: a resolution that read something its index pages do not pin by a sha256 (a
metadata file or wheel listed without one), that built an sdist (the build's own tools are
not among the inputs), or whose answer the clock shaped (a time limit passed). Entries live in
``<cache root>/resolutions-v1/`` in the checked store of :mod:`dtkguard.resolve.metacache`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from dtkguard.lightclass import field, record
from dtkguard.resolve.metacache import MetadataCache

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1


class ResolutionStore(MetadataCache):
    """Whole resolutions: the lock's bytes and messages, by the digest of their inputs."""

    FOLDER = "resolutions-v1"


@record
class Outcome:
    """What a lock run produced: exit code, lock bytes (None: nothing written), messages."""

    code: int
    packages: int = 0
    lock: bytes | None = None
    messages: list[str] = field(default_factory=list)
    #: the summary line without its last part (how the answer was found and how long it took)
    summary: str = ""


#: the libraries whose code shapes a lock (parsing, resolving, writing, reading -r files)
LIBRARIES = ("packaging", "resolvelib", "tomlkit", "pip_api")


def code_digest() -> str:
    """sha256 over the name, size and mtime of every module of dtkguard and of the libraries
    that shape a lock (an edit or an upgrade is a miss), and the running Python's version."""
    rows = [sys.version]
    for root in (Path(__file__).resolve().parents[1], *map(_library_root, LIBRARIES)):
        rows.append(str(root))
        if root is not None:
            _tree_rows(rows, str(root))
    return hashlib.sha256("\n".join(rows).encode("utf-8", "surrogateescape")).hexdigest()


def _library_root(name: str) -> Path | None:
    """The folder of the top-level package ``name``, found without importing it."""
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _tree_rows(rows: list[str], folder: str) -> None:
    """``path size mtime`` of every module under ``folder`` (sorted, ``__pycache__`` skipped)."""
    with os.scandir(folder) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        if entry.name.endswith((".py", ".json", ".toml")) and entry.is_file():
            st = entry.stat()
            rows.append(f"{entry.path}\0{st.st_size}\0{st.st_mtime_ns}")
        elif entry.name != "__pycache__" and entry.is_dir(follow_symlinks=False):
            _tree_rows(rows, entry.path)


def source_keys(sources: Any) -> list[Any] | None:
    """Each source as it enters the key (None: a source this cache cannot check)."""
    from dtkguard.resolve.auth import split_userinfo
    from dtkguard.resolve.sources import FindLinks, SimpleIndex

    out: list[Any] = []
    for source in sources:
        if isinstance(source, FindLinks):
            out.append(["find-links", str(source.path.absolute()), source.vendor,
                        source.fingerprint()])  # fmt: skip
        elif isinstance(source, SimpleIndex):
            out.append(["index", split_userinfo(source.url)[0], source.vendor])
        else:
            return None
    return out


def key_of(inputs: dict[str, Any], sources: Any) -> str | None:
    """The entry's key: sha256 of ``inputs`` (the lock's own) with the code, the date and the
    sources added; None when a source cannot be checked."""
    from dtkguard import __version__

    keys = source_keys(sources)
    if keys is None:
        return None
    doc = {
        "format": FORMAT,
        "dtkguard": __version__,
        "code": code_digest(),
        "today": time.strftime("%Y-%m-%d"),  # date.today().isoformat(), without datetime
        "inputs": inputs,
        "sources": keys,
    }
    blob = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return "resolution\0" + hashlib.sha256(blob.encode()).hexdigest()


def pages_of(sources: Any) -> list[list[Any]] | None:
    """[source number, project, status, sha256] of every page read; None when a source read
    something its pages do not pin."""
    from dtkguard.resolve.sources import SimpleIndex

    out: list[list[Any]] = []
    for i, source in enumerate(sources):
        if isinstance(source, SimpleIndex):
            if source.unpinned:
                return None
            out += [[i, p, st, sha] for p, (st, sha) in sorted(source.pages_read.items())]
    return out


def lookup(store: ResolutionStore, key: str, sources: Any) -> Outcome | None:
    """The stored outcome for ``key`` if every page it read is unchanged, else None."""
    raw = store.get(key)
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
        pages = [(int(i), str(p), int(st), str(sha)) for i, p, st, sha in doc["pages"]]
        lock = doc["lock"]
        outcome = Outcome(int(doc["code"]), int(doc["packages"]),
                          None if lock is None else lock.encode("utf-8"),
                          [str(m) for m in doc["messages"]], str(doc["summary"]))  # fmt: skip
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return outcome if _pages_unchanged(pages, sources) else None


def _pages_unchanged(pages: list[tuple[int, str, int, str]], sources: Any) -> bool:
    from dtkguard.errors import DtkguardError
    from dtkguard.resolve.sources import SimpleIndex

    by_source: dict[int, list[str]] = {}
    for i, project, _st, _sha in pages:
        if i >= len(sources) or not isinstance(sources[i], SimpleIndex):
            return False
        by_source.setdefault(i, []).append(project)
    for i, projects in by_source.items():
        sources[i].prefetch_pages(projects)
    try:
        return all(sources[i].page_state(p) == (st, sha) for i, p, st, sha in pages)
    except DtkguardError:
        return False


def save(store: ResolutionStore, key: str, sources: Any, outcome: Outcome) -> None:
    """Keep ``outcome`` under ``key`` with the pages it was made from (if they pin it)."""
    pages = pages_of(sources)
    if pages is None:
        return
    doc = {
        "code": outcome.code,
        "packages": outcome.packages,
        "lock": None if outcome.lock is None else outcome.lock.decode("utf-8"),
        "messages": outcome.messages,
        "summary": outcome.summary,
        "pages": pages,
    }
    store.put(key, json.dumps(doc, sort_keys=True).encode())
