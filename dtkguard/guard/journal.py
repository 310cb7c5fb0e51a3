"""The transaction journal: every change to an environment, with the files it removed.

``<prefix>/dtkguard/journal/NNNN/`` holds one transaction: ``txn.json`` (who, when, which
command, the distributions before and after, its state) and ``pre/``, the environment's files
as they were before. ``pre/`` starts as hard links of every file under the environment's
install roots (site-packages and the scripts folder: cheap, no data is copied); when the
transaction commits, links whose original is still the same inode are dropped, so what stays
is exactly the files the change removed or replaced. They are kept until ``prune``.

States: ``preparing`` (the snapshot is being taken: nothing changed yet), ``open`` (pip may be
changing the environment), ``committed``, ``rolled-back``, ``pruned`` (files dropped). A
transaction left ``open`` (the process was killed) is rolled back by the next one that starts
(`recover_open`), so the environment is never left between two states.

Rollback is the one place that writes into site-packages without pip: it puts every file of
``pre/`` back (by link, so bytes and metadata are the originals) and deletes files that were not
there before.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from dtkguard.env.journal_chain import CHAIN, txn_digest
from dtkguard.errors import DtkguardError
from dtkguard.lightclass import field, record
from dtkguard.util.atomic import atomic_write_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.guard.owned import Owned

JOURNAL_DIR = "journal"
#: after commit: the removed or replaced files ``pre/`` keeps (n, root, kind, path)
KEPT_LIST = "kept.list"
#: stamped every second while a transaction runs: the end of a killed one's time window
HEARTBEAT = "heartbeat"


class JournalError(DtkguardError):
    """The journal cannot be written or read. Exit 1 (the environment was not changed)."""

    exit_code = 1


@record
class Layout:
    """Where an interpreter keeps its journal and which folders a transaction covers."""

    prefix: Path
    roots: list[Path]
    scripts: Path
    purelib: Path

    @property
    def journal(self) -> Path:
        """In the guard's store (`dtkguard.env.store`), never inside the env."""
        from dtkguard.env.store import env_store

        return env_store(self.prefix).journal


def layout(python: str, *, adopt: bool = False) -> Layout:
    """``python``'s prefix and the install roots (purelib, platlib, scripts) a transaction
    covers: the ones the guard's store recorded for the env, never what a file inside the env
    says. An env the store does not know yet is recorded now. An interpreter that reports other
    roots than the record is refused (the env is not the one recorded), unless ``adopt``
    (`restore` rebuilding it: the record follows the env)."""
    from dtkguard.env import store
    from dtkguard.env.interpreter import interpreter
    from dtkguard.errors import InputError

    interp = interpreter(python)
    es = store.env_store(interp.prefix)
    try:
        rec = es.record()
    except InputError as exc:
        raise JournalError(f"cannot read the guard's record of {interp.prefix}: {exc}") from None
    now = store.current_identity(interp).roots
    if rec is not None and rec.identity.roots != now and not adopt:
        raise JournalError(
            f"{python} installs into {', '.join(now)}, not into the folders the guard's store "
            f"recorded for {interp.prefix} ({', '.join(rec.identity.roots)}): the environment "
            "was replaced; `dtkguard restore` rebuilds it"
        )
    if rec is None or adopt:
        _, rec = store.record_env(interp)
    roots = [Path(r) for r in rec.identity.roots if Path(r).is_dir()]
    scripts = Path(rec.identity.roots[-1])
    return Layout(interp.prefix, roots, scripts, Path(rec.identity.purelib))


def untrusted(txn: Transaction, lay: Layout) -> str | None:
    """Why the journal may not act on ``txn`` (None: it may): it names other roots than the
    store's record of the env, or its ``txn.json`` is not one the journal wrote (its digest is
    not in the journal's chain, `dtkguard.env.journal_chain`)."""
    from dtkguard.env.journal_chain import untrusted as why

    return why(txn.dir, [str(r) for r in lay.roots])


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
    #: touched distributions and the top-level entries of each root, `_snapshot`)
    scope: str = "all"
    _kept: dict[tuple[int, str], Path] | None = field(default=None, repr=False, compare=False)

    @property
    def file(self) -> Path:
        return self.dir / "txn.json"

    @property
    def pre(self) -> Path:
        return self.dir / "pre"

    def to_json(self) -> dict:
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
        """Write ``txn.json``, its digest first into the journal's chain (`untrusted`); on a
        full disk, free the transaction's reserve and try again (a rollback must be able to
        record itself when the change filled the disk)."""
        from dtkguard.env.chain import append

        text = json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n"

        def write() -> None:
            append(
                self.dir.parent / CHAIN,
                {"id": self.id, "state": self.state, "sha256": txn_digest(text)},
            )
            atomic_write_text(self.file, text)

        try:
            write()
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or not _free_reserve(self.dir):
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
                entries = _read_entries(self.dir / KEPT_LIST)
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


def _reserve(tdir: Path) -> None:
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


def _free_reserve(tdir: Path) -> bool:
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


def installed_versions(roots: list[Path]) -> tuple[dict[str, str], dict[str, str]]:
    """({canonical name: version}, {canonical name: name}) of the dists in ``roots``."""
    from dtkguard.env.dist import read_dist
    from dtkguard.env.root import Root

    versions: dict[str, str] = {}
    names: dict[str, str] = {}
    root = Root()
    for site in roots:
        try:
            entries = sorted(os.listdir(site))
        except OSError:
            continue
        for entry in entries:
            if not entry.endswith((".dist-info", ".egg-info")):
                continue
            dist = read_dist(root, site, entry)
            if isinstance(dist, str) or dist.key in versions:
                continue
            versions[dist.key] = dist.version
            names[dist.key] = dist.name
    return versions, names


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


def _walk(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """(posix path relative to ``root``, lstat) of everything below ``root``, parents first."""
    stack = [""]
    while stack:
        rel = stack.pop()
        base = root / rel if rel else root
        try:
            with os.scandir(base) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            yield path, st
            if stat.S_ISDIR(st.st_mode):
                stack.append(path)


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


def _write_entries(path: Path, entries: list[Entry]) -> None:
    lines = [f"{e.n}\t{e.root}\t{e.kind}\t{e.rel}\t{e.link}\t{e.sig}" for e in entries]
    atomic_write_text(path, "\n".join(lines) + "\n")


def _read_entries(path: Path) -> list[Entry]:
    out = []
    for line in path.read_text(encoding="utf-8", errors="surrogateescape").splitlines():
        parts = line.split("\t")
        if len(parts) in (5, 6) and parts[0].isdigit() and parts[1].isdigit():
            sig = parts[5] if len(parts) == 6 else ""
            out.append(Entry(int(parts[0]), int(parts[1]), parts[2], parts[3], parts[4], sig))
    return out


def _sig(st: os.stat_result) -> str:
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def _owned_now(txn: Transaction):
    """The files of the distributions the change touches (None: unknown, every file)."""
    if txn.touches is None:
        return None
    from dtkguard.guard.owned import owned

    return owned(txn.roots, txn.touches)


def _snapshot(txn: Transaction) -> None:
    """``pre/<n>``: a hard link (a copy where no link can be made: another file system) of
    every file of the distributions the change touches, in one flat folder; ``pre.list``: those
    paths and the top-level entries of every root (scope "plan"), or, when the plan is
    unknown, every path of the roots with every file linked (scope "all"), each with its kind
    (and of a file not kept, its inode, size and mtime), to know later what was added or
    changed."""
    txn.pre.mkdir(mode=0o700, parents=True, exist_ok=True)
    mine = _owned_now(txn)
    if mine is None:
        entries = _snapshot_all(txn)
    else:
        txn.scope = "plan"
        entries = _snapshot_plan(txn, mine)
    _write_entries(txn.dir / "pre.list", entries)


def _snapshot_all(txn: Transaction) -> list[Entry]:
    entries: list[Entry] = []
    store = str(txn.pre)
    budget = _Budget()
    for i, raw in enumerate(txn.roots):
        for rel, st in _walk(Path(raw)):
            n = len(entries)
            full = os.path.join(raw, rel)
            if stat.S_ISDIR(st.st_mode):
                entries.append(Entry(n, i, "d", rel))
            elif stat.S_ISLNK(st.st_mode):
                entries.append(Entry(n, i, "l", rel, os.readlink(full)))
            elif stat.S_ISREG(st.st_mode):
                _keep(full, os.path.join(store, str(n)), st, budget)
                entries.append(Entry(n, i, "f", rel))
    return entries


def _snapshot_plan(txn: Transaction, mine: Owned) -> list[Entry]:
    """The top-level entries of every root (a rollback removes only what is the change's),
    then every file of the touched distributions, linked."""
    found: dict[tuple[int, str], tuple[str, os.stat_result]] = {}
    for i, raw in enumerate(txn.roots):
        with contextlib.suppress(OSError), os.scandir(raw) as it:
            for entry in it:
                with contextlib.suppress(OSError):
                    found[(i, entry.name)] = ("top", entry.stat(follow_symlinks=False))
    for full in sorted(_touched_paths(mine)):
        where = _in_root(txn.roots, full)
        if where is None:
            continue
        with contextlib.suppress(OSError):
            found[where] = ("mine", os.lstat(full))
    entries: list[Entry] = []
    store = str(txn.pre)
    budget = _Budget()
    for (i, rel), (why, st) in sorted(found.items()):
        n = len(entries)
        full = os.path.join(txn.roots[i], rel)
        if stat.S_ISDIR(st.st_mode):
            entries.append(Entry(n, i, "d", rel))
        elif stat.S_ISLNK(st.st_mode):
            entries.append(Entry(n, i, "l", rel, os.readlink(full)))
        elif why == "top":
            entries.append(Entry(n, i, "F", rel, sig=_sig(st)))
        elif stat.S_ISREG(st.st_mode):
            _keep(full, os.path.join(store, str(n)), st, budget)
            entries.append(Entry(n, i, "f", rel))
    return entries


def _touched_paths(mine: Owned) -> set[str]:
    """The files a RECORD lists and everything under the touched metadata folders."""
    paths = set(mine.files)
    for folder in mine.dirs:
        for top, dirs, names in os.walk(folder):
            paths.update(os.path.join(top, n) for n in dirs + names)
    return paths


def _in_root(roots: list[str], full: str) -> tuple[int, str] | None:
    """(root index, posix path relative to it) of ``full``: the deepest root holding it."""
    best: tuple[int, str] | None = None
    for i, root in enumerate(roots):
        if full.startswith(root.rstrip(os.sep) + os.sep):
            rel = full[len(root.rstrip(os.sep)) + 1 :]
            if best is None or len(rel) < len(best[1]):
                best = (i, rel)
    return best


#: bytes a snapshot may copy (where no hard link can be made), ``$DTKGUARD_JOURNAL_BUDGET``
DEFAULT_BUDGET = 8 << 30


class _Budget:
    def __init__(self) -> None:
        raw = os.environ.get("DTKGUARD_JOURNAL_BUDGET", "")
        self.left = int(raw) if raw.isdigit() else DEFAULT_BUDGET
        self.limit = self.left


def _keep(full: str, saved: str, st: os.stat_result, budget: _Budget) -> None:
    """``saved``: a hard link of ``full``, else a copy counted against the budget."""
    try:
        os.link(full, saved)
        return
    except OSError:
        pass
    budget.left -= st.st_size
    if budget.left < 0:
        from dtkguard.util.safe_read import human_bytes

        raise OSError(
            f"the files this change touches need copies over the journal's budget of "
            f"{human_bytes(budget.limit)} (DTKGUARD_JOURNAL_BUDGET; "
            "`dtkguard history --prune KEEP` frees older ones)"
        )
    shutil.copy2(full, saved)


def _same(a: str, b: str) -> bool:
    """Is ``b`` still the very file (inode) ``a`` links to?"""
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except OSError:
        return False
    return (sa.st_ino, sa.st_dev) == (sb.st_ino, sb.st_dev)


def _same_bytes(a: str, b: str) -> bool:
    import filecmp

    try:
        return filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


@record
class _Rollback:
    """What a rollback may touch: the change's files, and the time it ran."""

    txn: Transaction
    mine: Owned | None
    until_ns: int
    fixed: int = 0
    unaccounted: list[str] = field(default_factory=list)

    def ours(self, full: str, st: os.stat_result) -> bool:
        """Did the change create or write this path (listed by a touched distribution, or
        created while the transaction ran)?"""
        if self.mine is None and self.until_ns < 0:
            return True  # an old transaction without a start time: it owns every change
        if self.mine is not None and full in self.mine:
            return True
        return self.during(st)

    def during(self, st: os.stat_result) -> bool:
        return self.txn.started_ns <= st.st_ctime_ns <= self.until_ns

    def since(self, path: str, saved: str | None) -> bool:
        """Was ``path`` written after the change's window (by someone else: a later pip, uv,
        an editor), holding other bytes than ``saved`` (the copy a rollback put back)?"""
        try:
            st = os.lstat(path)
        except OSError:
            return False
        if self.until_ns < 0 or st.st_ctime_ns <= self.until_ns:
            return False
        return saved is None or not _same_bytes(saved, path)

    def made(self, i: int, rel: str, full: str, st: os.stat_result, known: dict) -> bool:
        """A path ``pre.list`` of scope "plan" does not name: the change's when it wrote it
        (ctime in its window) and it is a touched distribution's now, or lies in a top-level
        entry the root did not have before."""
        if not self.during(st):
            return False
        if self.mine is not None and full in self.mine:
            return True
        return (i, rel.split("/", 1)[0]) not in known


def rollback_files(txn: Transaction, until_ns: int | None = None) -> int:
    """Put back what the change did, as ``pre/`` and ``pre.list`` say it was (idempotent):
    paths it added go, files it replaced or removed come back. A path it cannot account for
    (not one of its distributions', not created while it ran: ``until_ns``, default now) is
    kept and listed in ``txn.unaccounted``. Returns how many paths it removed or put back."""
    if until_ns is None:
        until_ns = time.time_ns() + 10**9
    if not txn.started_ns and txn.touches is None:
        until_ns = -1
    rb = _Rollback(txn, _owned_now(txn), until_ns)
    entries = _read_entries(txn.dir / "pre.list")
    known = {(e.root, e.rel): e for e in entries}
    for i, raw in enumerate(txn.roots):
        _drop_added(rb, i, raw, known)
        for e in sorted((e for e in entries if e.root == i), key=lambda e: e.rel.count("/")):
            _put_back(rb, e, os.path.join(raw, e.rel))
    txn.unaccounted = rb.unaccounted
    return rb.fixed


def _drop_added(rb: _Rollback, i: int, raw: str, known: dict[tuple[int, str], Entry]) -> None:
    """Remove what was not there before and is the change's (deepest first: folders it
    emptied go too); keep the rest."""
    for rel, st in sorted(_walk(Path(raw)), key=lambda x: x[0].count("/"), reverse=True):
        e = known.get((i, rel))
        is_dir = stat.S_ISDIR(st.st_mode)
        is_link = stat.S_ISLNK(st.st_mode)
        if e is not None and (e.kind == "d") == is_dir and (e.kind == "l") == is_link:
            continue
        full = os.path.join(raw, rel)
        if is_dir and e is None:
            if rb.txn.scope == "plan" and st.st_ctime_ns < rb.txn.started_ns:
                continue  # not in the plan's list and not changed since it started
            with contextlib.suppress(OSError):
                os.rmdir(full)  # only when empty: what stays in it was not the change's
                rb.fixed += 1
            continue
        if e is None and rb.txn.scope == "plan":
            if rb.made(i, rel, full, st, known):
                _remove(full)
                rb.fixed += 1
            elif st.st_ctime_ns >= rb.txn.started_ns and (i, rel.split("/", 1)[0]) not in known:
                rb.unaccounted.append(full)  # made since, not by it (inside what was there
                # before, a file is not listed: the pip hook's build journal watches those)
            continue
        if e is not None and rb.since(full, None):
            rb.unaccounted.append(full)  # made something else after the change ended
        elif rb.ours(full, st) or (e is not None and e.kind in ("f", "d", "l")):
            _remove(full)
            rb.fixed += 1
        else:
            rb.unaccounted.append(full)


def _put_back(rb: _Rollback, e: Entry, path: str) -> None:
    """One path of ``pre.list`` as it was before the change."""
    if e.kind == "d":
        if not os.path.isdir(path) and (rb.mine is None or path in rb.mine):
            os.makedirs(path)
            rb.fixed += 1
        return
    if e.kind == "F":  # not the change's file: only told when it changed anyway
        try:
            same = _sig(os.lstat(path)) == e.sig
        except OSError:
            same = False
        if not same:
            rb.unaccounted.append(path)
        return
    if e.kind == "l":
        with contextlib.suppress(OSError):
            if os.readlink(path) == e.link:
                return
    saved = os.path.join(str(rb.txn.pre), str(e.n))
    if e.kind == "f" and (_same(saved, path) or not os.path.lexists(saved)):
        return  # in place (or its link was never made: the file was not touched)
    if rb.since(path, saved if e.kind == "f" else None):
        rb.unaccounted.append(path)  # written after the change ended: not its doing
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), f".{e.rel.rsplit('/', 1)[-1]}.dtkguard-rb")
    _remove(tmp)
    if e.kind == "l":
        os.symlink(e.link, tmp)
    else:
        try:
            os.link(saved, tmp)
        except OSError:
            shutil.copy2(saved, tmp)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    os.replace(tmp, path)
    rb.fixed += 1


def _prune_unchanged(txn: Transaction) -> None:
    """Drop links of files the change left alone; ``kept.list`` names what stays."""
    kept: list[Entry] = []
    size = 0
    store = str(txn.pre)
    if not (txn.dir / "pre.list").exists():  # pruned already (a commit resumed)
        with contextlib.suppress(OSError):
            kept = _read_entries(txn.dir / KEPT_LIST)
        size = sum(p.stat().st_size for p in txn.pre.iterdir()) if txn.pre.is_dir() else 0
        txn.kept_files, txn.kept_bytes = len(kept), size
        return
    for e in _read_entries(txn.dir / "pre.list"):
        if e.kind != "f":
            continue
        saved = os.path.join(store, str(e.n))
        if not os.path.lexists(saved):  # dropped by a commit that was interrupted
            continue
        if _same(saved, os.path.join(txn.roots[e.root], e.rel)):
            os.unlink(saved)
        else:
            kept.append(e)
            with contextlib.suppress(OSError):
                size += os.lstat(saved).st_size
    _write_entries(txn.dir / KEPT_LIST, kept)
    txn.kept_files, txn.kept_bytes = len(kept), size
    with contextlib.suppress(FileNotFoundError):
        os.unlink(txn.dir / "pre.list")


def _next_id(journal: Path) -> int:
    ids = [int(e) for e in os.listdir(journal) if e.isdigit()] if journal.is_dir() else []
    return max(ids, default=0) + 1


def _say(text: str) -> None:
    import sys

    sys.stderr.write(text)
    sys.stderr.flush()


#: states after which a transaction changes nothing by itself
_FINAL = ("committed", "rolled-back", "undone", "pruned")


def recover_open(lay: Layout) -> list[Transaction]:
    """Roll back every transaction a killed process left ``open``; discard ``preparing`` ones."""
    done = []
    for txn in transactions(lay.journal):
        why = untrusted(txn, lay) if txn.state not in _FINAL else None
        if why:
            _say(f"dtkguard: refusing journal transaction {txn.dir.name}: {why}; left as it is\n")
            continue
        if txn.state == "preparing":
            shutil.rmtree(txn.dir, ignore_errors=True)
        elif txn.state == "committing":
            _commit(txn)
        elif txn.state in ("open", "rolling-back"):
            _say(
                f"dtkguard: transaction {txn.id} ({' '.join(txn.argv)}) did not finish; "
                "rolling the environment back to where it started\n"
            )
            _mark_rolling_back(txn)
            from dtkguard.guard.owned import last_beat_ns

            rollback_files(txn, last_beat_ns(str(txn.dir / HEARTBEAT)) or txn.started_ns)
            _finish_rollback(txn, "interrupted; rolled back by the next transaction")
            done.append(txn)
    return done


def _tell_unaccounted(txn: Transaction) -> None:
    """One line naming what a rollback kept because the change did not make it."""
    if txn.unaccounted:
        tops: list[str] = []  # one name a top-level entry of a root (a package, a script)
        for path in txn.unaccounted:
            root = next((r for r in txn.roots if path.startswith(r + os.sep)), "")
            top = os.path.join(root, path[len(root) :].lstrip(os.sep).split(os.sep)[0])
            if top not in tops:
                tops.append(top)
        shown = ", ".join(tops[:8]) + (" ..." if len(tops) > 8 else "")
        _say(
            f"dtkguard: rollback of rev {txn.id} kept {len(txn.unaccounted)} path(s) it did not "
            f"make or cannot put back (changed since, not by it): {shown}\n"
        )


def recover(lay: Layout) -> list[Transaction]:
    """`recover_open` under the journal's lock (waits for a transaction still running); a
    rollback that cannot be finished now (a full or read-only disk) is said in one line and
    left for the next command: the history stays readable."""
    if not lay.journal.is_dir():
        return []
    with _locked(lay.journal):
        try:
            return recover_open(lay)
        except OSError as exc:
            _say(
                f"dtkguard: cannot finish rolling back an interrupted transaction yet: "
                f"{exc.filename or lay.journal}: {exc.strerror or exc}; free space (or make it "
                "writable) and run `dtkguard history` again\n"
            )
            return []


def _finish_rollback(txn: Transaction, note: str) -> None:
    _tell_unaccounted(txn)
    _free_reserve(txn.dir)
    shutil.rmtree(txn.pre, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(txn.dir / "pre.list")
    txn.after = dict(txn.before)
    txn.state, txn.note, txn.kept_files, txn.kept_bytes = "rolled-back", note, 0, 0
    txn.save()


class TransactionFailed(DtkguardError):
    """A step of a transaction failed and the environment was rolled back. Exit 1."""

    exit_code = 1


@contextlib.contextmanager
def transaction(
    python: str,
    tool: str,
    argv: list[str],
    reason: str = "",
    undoes: int | None = None,
    lay: Layout | None = None,
    touches: list[str] | None = None,
) -> Iterator[Transaction]:
    """Journal the changes made inside the ``with`` block to ``python``'s environment.

    On an exception (or `TransactionFailed` raised by the block) the roots are rolled back to
    where they were and the exception propagates; otherwise the transaction commits. A
    transaction that changed no distribution and no file is not kept.
    """
    lay = lay or layout(python)
    with _locked(lay.journal):
        yield from _run(lay, tool, argv, reason, undoes, touches)


@contextlib.contextmanager
def _locked(journal: Path) -> Iterator[None]:
    """One transaction at a time per environment (a second one waits)."""
    import fcntl

    try:
        journal.mkdir(mode=0o700, parents=True, exist_ok=True)
        fh = os.fdopen(os.open(journal / "lock", os.O_RDWR | os.O_CREAT, 0o600), "a+")
    except OSError as exc:
        raise JournalError(f"cannot write the journal in {journal}: {exc}") from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _run(
    lay: Layout,
    tool: str,
    argv: list[str],
    reason: str,
    undoes: int | None,
    touches: list[str] | None,
) -> Iterator[Transaction]:
    try:
        recover_open(lay)
        tid = _next_id(lay.journal)
        tdir = lay.journal / f"{tid:04d}"
        tdir.mkdir(mode=0o700)
    except OSError as exc:
        raise JournalError(f"cannot write the journal in {lay.journal}: {exc}") from None
    before, names = installed_versions(lay.roots)
    txn = Transaction(
        dir=tdir,
        id=tid,
        tool=tool,
        argv=list(argv),
        time=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime()),
        state="preparing",
        roots=[str(r) for r in lay.roots],
        before=before,
        names=names,
        reason=reason,
        undoes=undoes,
        touches=sorted(set(touches)) if touches is not None else None,
    )
    try:
        _reserve(tdir)
        txn.save()
        # the file system's clock (coarser than time.time_ns): what the change creates has a
        # ctime at or after it
        txn.started_ns = os.stat(txn.file).st_mtime_ns
        _snapshot(txn)
    except OSError as exc:
        shutil.rmtree(tdir, ignore_errors=True)
        raise JournalError(f"cannot snapshot the environment into {tdir}: {exc}") from None
    try:
        txn.state = "open"
        txn.save()
    except OSError as exc:  # still "preparing" on disk: discarded, nothing changed
        shutil.rmtree(tdir, ignore_errors=True)
        raise JournalError(f"cannot write the journal in {tdir}: {exc.strerror or exc}") from None
    try:
        with _heartbeat(str(tdir / HEARTBEAT)):
            yield txn
    except BaseException as exc:
        _roll_back_now(txn, exc)
        raise
    after, later_names = installed_versions(lay.roots)
    txn.after = after
    txn.names = {**later_names, **names}
    _commit(txn)


def _mark_rolling_back(txn: Transaction) -> None:
    """Say so in ``txn.json`` when the disk lets us (``open`` means the same to the next
    command: the rollback itself frees the space a full disk lacks)."""
    txn.state = "rolling-back"
    with contextlib.suppress(OSError):
        txn.save()


def _roll_back_now(txn: Transaction, exc: BaseException) -> None:
    """The change failed: put the environment back now. When even that fails (a read-only
    or full disk), the transaction stays ``rolling-back`` for the next command to finish,
    and one line says so."""
    try:
        _mark_rolling_back(txn)
        fixed = rollback_files(txn)
        _finish_rollback(txn, f"failed: {exc}".strip())
    except OSError as err:
        _say(
            f"dtkguard: could not roll back rev {txn.id} yet: {err.filename or txn.dir}: "
            f"{err.strerror or err}; the next dtkpip, dtkuv or `dtkguard history` finishes it\n"
        )
        return
    if not fixed:  # nothing had changed: no history to keep
        shutil.rmtree(txn.dir, ignore_errors=True)


@contextlib.contextmanager
def _heartbeat(path: str) -> Iterator[None]:
    """Stamp ``path`` every `owned.HEARTBEAT` seconds while the block runs (a thread)."""
    import threading

    from dtkguard.guard.owned import HEARTBEAT as EVERY
    from dtkguard.guard.owned import beat

    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(EVERY):
            beat(path)

    beat(path)  # before the block starts: a change killed at once still has its window

    thread = threading.Thread(target=loop, name="dtkguard-journal-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _commit(txn: Transaction) -> None:
    """The change is complete: keep only what it removed (idempotent: a commit killed half
    way is finished by `recover_open`, never rolled back over files already dropped)."""
    txn.state = "committing"
    txn.save()
    _prune_unchanged(txn)
    if txn.after == txn.before and txn.kept_files == 0:
        shutil.rmtree(txn.dir, ignore_errors=True)
        return
    txn.state = "committed"
    txn.save()
    _free_reserve(txn.dir)


def _freed(pre: Path) -> tuple[int, int]:
    """(files, bytes) removing ``pre/`` frees: a file still linked from elsewhere frees none."""
    files = size = 0
    with contextlib.suppress(OSError), os.scandir(pre) as it:
        for entry in it:
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                if st.st_nlink <= 1:
                    files += 1
                    size += st.st_blocks * 512
    return files, size


def prune(journal: Path, keep: int) -> list[tuple[Transaction, int, int]]:
    """Drop the kept files of all but the newest ``keep`` committed transactions; returns
    (transaction, files freed, bytes freed) for each."""
    done = []
    committed = [t for t in transactions(journal) if t.state in ("committed", "undone")]
    for txn in committed[: max(0, len(committed) - keep)]:
        files, size = _freed(txn.pre)
        shutil.rmtree(txn.pre, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(txn.dir / KEPT_LIST)
        txn.state, txn.kept_files, txn.kept_bytes = "pruned", 0, 0
        txn.save()
        done.append((txn, files, size))
    return done


#: installer options that send files somewhere else than the environment: not journalled
ELSEWHERE = ("--user", "--target", "-t", "--prefix", "--root")


def journalled(
    python: str,
    tool: str,
    argv: list[str],
    run: Callable[[], int],
    then: Callable[[Transaction], object] | None = None,
    *,
    touches: list[str] | None = None,
) -> int:
    """Run ``run()`` (a pip or uv call returning its exit code) as one transaction of
    ``python``'s environment. A non-zero exit rolls the environment back to where it was
    (pip commits each package as it goes: a failure half way would leave it between states).
    Installs into another place (``--user``, ``--target``, ``--prefix``, ``--root``) run as
    they are. ``then(txn)`` runs after a commit (the baseline follows the approved change).
    ``touches``: the canonical names the plan installs, upgrades or removes (only their files
    are snapshotted). This is the one wrapper dtkpip and dtkuv use."""
    if any(a == opt or a.startswith(opt + "=") for a in argv for opt in ELSEWHERE):
        return run()
    code = 0
    try:
        with transaction(python, tool, argv, touches=touches) as txn:
            code = run()
            if code != 0:
                raise _Failed(code)
        if then is not None:
            then(txn)
    except _Failed:
        _say(
            f"dtkguard: `{' '.join(argv)}` failed (exit {code}); the environment was rolled "
            f"back to where it started (journal rev {txn.id})\n"
        )
    return code


class _Failed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"exit {code}")
        self.code = code
