"""Which files of an environment a journalled change may touch, and which it did.

A change's plan names the distributions it installs, upgrades or removes; their files are
what their RECORD (``installed-files.txt`` of an ``.egg-info``) lists and what their metadata
folder holds. The journal snapshots only those (`dtkguard.guard.journal`), and a rollback
removes a file that was not there before only when it is one of them now, or was created
while the transaction ran (between its start and its last heartbeat): anything else (a
package plain pip installed after a killed dtkpip, a file a user dropped) is kept and
reported.
"""

from __future__ import annotations

import os

from dtkguard.lightclass import record
from dtkguard.util.safe_read import read_capped

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

#: the RECORD of torch is about 2 MiB
MAX_RECORD = 16 << 20
#: how often a running transaction stamps its heartbeat file (seconds)
HEARTBEAT = 1.0


@record(frozen=True)
class Owned:
    """Files (normalised absolute paths) and metadata folders of some distributions."""

    files: frozenset[str]
    dirs: tuple[str, ...]

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        path = os.path.normpath(path)
        return path in self.files or any(
            path == d or path.startswith(d + os.sep) for d in self.dirs
        )


def _listed(meta: str) -> list[str]:
    """Paths (relative to the site folder) a metadata folder lists as its distribution's."""
    from dtkguard.records import paths_of

    if meta.endswith(".dist-info"):
        try:
            text = read_capped(os.path.join(meta, "RECORD"), MAX_RECORD).decode("utf-8", "replace")
        except OSError:
            return []
        return paths_of(text)
    try:
        listed = read_capped(os.path.join(meta, "installed-files.txt"), MAX_RECORD)
    except OSError:
        return []
    base = os.path.basename(meta)
    return [os.path.join(base, line) for line in listed.decode("utf-8", "replace").splitlines()]


def dist_key(entry: str) -> str | None:
    """The canonical name of a ``name-version.dist-info`` / ``.egg-info`` folder name."""
    from dtkguard.decision import canonical

    if not entry.endswith((".dist-info", ".egg-info")):
        return None
    return canonical(entry.rsplit(".", 1)[0].split("-", 1)[0])


def owned(roots: Iterable[str], names: Iterable[str]) -> Owned:
    """The files of the distributions ``names`` (canonical) installed in ``roots`` now."""
    want = set(names)
    files: set[str] = set()
    dirs: list[str] = []
    for root in roots:
        try:
            entries = sorted(os.listdir(root))
        except OSError:
            continue
        for entry in entries:
            if dist_key(entry) not in want:
                continue
            meta = os.path.join(root, entry)
            dirs.append(os.path.normpath(meta))
            files.update(os.path.normpath(os.path.join(root, rel)) for rel in _listed(meta))
    return Owned(frozenset(files), tuple(dirs))


def beat(path: str) -> None:
    """Stamp the heartbeat file (its mtime is the transaction's last sign of life)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        os.utime(path)
    except OSError:
        pass


def last_beat_ns(path: str) -> int | None:
    """The heartbeat's mtime in ns plus the slack of one beat; None when there is none."""
    try:
        return os.stat(path).st_mtime_ns + int(2 * HEARTBEAT * 1e9)
    except OSError:
        return None
