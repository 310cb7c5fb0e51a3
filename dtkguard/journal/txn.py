"""One journalled change on disk: ``txn.json`` (`Transaction`), the path lists ``pre.list`` and
``kept.list`` (`Entry`), the space reserve a rollback needs on a full disk.

``<env's store>/journal/NNNN/`` holds one transaction: ``txn.json`` (who, when, which command,
the distributions before and after, its state) and ``pre/``, the environment's files as they
were before. States: ``open`` (the installer may be changing the environment), ``committed``,
``rolling-back``, ``rolled-back``, ``undone``, ``pruned`` (files dropped); a journal written by
an earlier release may also hold ``preparing`` and ``committing``. While the snapshot is taken
the folder has no ``txn.json`` yet, only the marker (`dtkguard.journal.chain.PREPARING`):
nothing changed, and the next transaction discards it.

Durable writes, in order (each fsync'd before the next is made): ``pre.list``, then the chain
record and ``txn.json`` of ``open``; after the change ``kept.list``, then the chain record and
``txn.json`` of ``committed``, then the chain's head. Invariant: every file a record points to
is on disk before the record, and a state's chain record before its ``txn.json``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path

from dtkguard.errors import DtkguardError
from dtkguard.journal.chain import CHAIN, txn_digest
from dtkguard.lightclass import field, record
from dtkguard.util.atomic import atomic_write_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

JOURNAL_DIR = "journal"


#: after commit: the removed or replaced files ``pre/`` keeps (n, root, kind, path)
KEPT_LIST = "kept.list"


#: states after which a transaction changes nothing by itself (the chain's head is brought
#: up to date when one is recorded)
FINAL = ("committed", "rolled-back", "undone", "pruned")


#: stamped every second while a transaction runs: the end of a killed one's time window
HEARTBEAT = "heartbeat"


class JournalError(DtkguardError):
    """The journal cannot be written or read. Exit 1 (the environment was not changed)."""

    exit_code = 1


@record
class Transaction:
    """One journalled change."""

    dir: Path
    id: int
    tool: str
    argv: list[str]
    time: str
    state: str
    roots: list[str]
    before: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)
    #: names as they are spelled (canonical name -> name)
    names: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    undoes: int | None = None
    kept_files: int = 0
    kept_bytes: int = 0
    note: str = ""
    #: canonical names of the distributions the change will install, upgrade or remove (its
    #: plan); None: unknown (every file is snapshotted, and a deferred rollback keeps what it
    #: cannot account for)
    touches: list[str] | None = None
    #: when the change started (ns since the epoch): a new file created since is the change's
    started_ns: int = 0
    #: paths a rollback found changed but could not account for: kept as they are
    unaccounted: list[str] = field(default_factory=list)
    #: what ``pre.list`` holds: "all" (every path of the roots) or "plan" (the files of the
    #: touched distributions and the top-level entries of each root, `snapshot`)
    scope: str = "all"
    _kept: dict[tuple[int, str], Path] | None = field(default=None, repr=False, compare=False)

    @property
    def file(self) -> Path:
        return self.dir / "txn.json"

    @property
    def pre(self) -> Path:
        return self.dir / "pre"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tool": self.tool,
            "argv": self.argv,
            "time": self.time,
            "state": self.state,
            "roots": self.roots,
            "before": self.before,
            "after": self.after,
            "names": self.names,
            "reason": self.reason,
            "undoes": self.undoes,
            "kept_files": self.kept_files,
            "kept_bytes": self.kept_bytes,
            "note": self.note,
            "touches": self.touches,
            "started_ns": self.started_ns,
            "unaccounted": self.unaccounted,
            "scope": self.scope,
        }

    def save(self) -> None:
        """Write ``txn.json``, its digest first into the journal's chain (`untrusted`; the
        chain's head follows at a final state); on a full disk, free the transaction's reserve
        and try again (a rollback must be able to record itself when the change filled the
        disk)."""
        from dtkguard.env.chain import append

        text = json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n"

        def write() -> None:
            append(
                self.dir.parent / CHAIN,
                {"id": self.id, "state": self.state, "sha256": txn_digest(text)},
                head=self.state in FINAL,
            )
            atomic_write_text(self.file, text)

        try:
            write()
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or not free_reserve(self.dir):
                raise
            write()

    @classmethod
    def load(cls, path: Path) -> Transaction:
        from dtkguard.util.safe_read import read_json

        data = read_json(path / "txn.json", what="journal transaction")
        return cls(
            dir=path,
            id=int(data["id"]),
            tool=str(data.get("tool", "?")),
            argv=list(data.get("argv") or []),
            time=str(data.get("time", "?")),
            state=str(data.get("state", "?")),
            roots=list(data.get("roots") or []),
            before=dict(data.get("before") or {}),
            after=dict(data.get("after") or {}),
            names=dict(data.get("names") or {}),
            reason=str(data.get("reason") or ""),
            undoes=data.get("undoes"),
            kept_files=int(data.get("kept_files") or 0),
            kept_bytes=int(data.get("kept_bytes") or 0),
            note=str(data.get("note") or ""),
            touches=_names(data.get("touches")),
            started_ns=data["started_ns"] if isinstance(data.get("started_ns"), int) else 0,
            unaccounted=_names(data.get("unaccounted")) or [],
            scope="plan" if data.get("scope") == "plan" else "all",
        )

    def changes(self) -> list[tuple[str, str | None, str | None]]:
        """(canonical name, version before or None, version after or None), sorted."""
        keys = sorted(set(self.before) | set(self.after))
        return [
            (k, self.before.get(k), self.after.get(k))
            for k in keys
            if self.before.get(k) != self.after.get(k)
        ]

    def kept(self) -> dict[tuple[int, str], Path]:
        """{(root index, path relative to it): where ``pre/`` keeps that removed file}."""
        if self._kept is None:
            try:
                entries = read_entries(self.dir / KEPT_LIST)
            except OSError:
                entries = []
            self._kept = {(e.root, e.rel): self.pre / str(e.n) for e in entries}
        return self._kept

    def pre_path(self, original: Path) -> Path | None:
        """Where ``pre/`` keeps the file that was at ``original`` (None: not kept)."""
        kept = self.kept()
        for i, root in enumerate(self.roots):
            with contextlib.suppress(ValueError):
                rel = Path(original).relative_to(root).as_posix()
                return kept.get((i, rel))
        return None


#: bytes set aside in every open transaction's folder, freed when a full disk would stop the
#: rollback from recording itself
RESERVE = "reserve"


RESERVE_BYTES = 1 << 20


def reserve(tdir: Path) -> None:
    """Set `RESERVE_BYTES` aside (really allocated, not a sparse file)."""
    fd = os.open(tdir / RESERVE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
            os.write(fd, b"\0" * RESERVE_BYTES)
    finally:
        os.close(fd)


def free_reserve(tdir: Path) -> bool:
    """Delete the reserve; False when there was none."""
    try:
        os.unlink(tdir / RESERVE)
    except OSError:
        return False
    return True


def _names(value: object) -> list[str] | None:
    """A list of strings of ``txn.json``; None when it is not one."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def transactions(journal: Path) -> list[Transaction]:
    """Every readable transaction, oldest first."""
    out: list[Transaction] = []
    try:
        entries = sorted(os.listdir(journal))
    except OSError:
        return out
    for entry in entries:
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                out.append(Transaction.load(journal / entry))
    return out


@record(frozen=True)
class Entry:
    """One path of a root before the change: ``pre/<n>`` holds a file's link."""

    n: int
    root: int
    #: "f" file kept in ``pre/``, "F" file outside the change (only its ``sig`` is kept),
    #: "d" folder, "l" symlink
    kind: str
    rel: str
    link: str = ""
    #: "inode:size:mtime_ns" of an "F" file: a rollback tells it changed
    sig: str = ""


def write_entries(path: Path, entries: list[Entry]) -> None:
    """Write ``path`` in place and fsync it: no reader trusts it before the record that
    points to it is written after it (a list cut short by a kill is written again)."""
    lines = [f"{e.n}\t{e.root}\t{e.kind}\t{e.rel}\t{e.link}\t{e.sig}" for e in entries]
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def read_entries(path: Path) -> list[Entry]:
    out = []
    for line in path.read_text(encoding="utf-8", errors="surrogateescape").splitlines():
        parts = line.split("\t")
        if len(parts) in (5, 6) and parts[0].isdigit() and parts[1].isdigit():
            sig = parts[5] if len(parts) == 6 else ""
            out.append(Entry(int(parts[0]), int(parts[1]), parts[2], parts[3], parts[4], sig))
    return out


def say(text: str) -> None:
    import sys

    sys.stderr.write(text)
    sys.stderr.flush()
