"""``pre/`` before a change: hard links (copies within a budget where no link can be made) of the
files the change may touch, listed in ``pre.list`` (`snapshot`); after a commit, only what the
change removed or replaced is kept (`prune_unchanged`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from dtkguard.journal.txn import KEPT_LIST, Entry, Transaction, read_entries, write_entries

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.journal.owned import Owned


def walk(root: Path) -> Iterator[tuple[str, os.stat_result]]:
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


def sig(st: os.stat_result) -> str:
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def owned_now(txn: Transaction) -> Owned | None:
    """The files of the distributions the change touches (None: unknown, every file)."""
    if txn.touches is None:
        return None
    from dtkguard.journal.owned import owned

    return owned(txn.roots, txn.touches)


def snapshot(txn: Transaction) -> None:
    """``pre/<n>``: a hard link (a copy where no link can be made: another file system) of
    every file of the distributions the change touches, in one flat folder; ``pre.list``: those
    paths and the top-level entries of every root (scope "plan"), or, when the plan is
    unknown, every path of the roots with every file linked (scope "all"), each with its kind
    (and of a file not kept, its inode, size and mtime), to know later what was added or
    changed."""
    txn.pre.mkdir(mode=0o700, parents=True, exist_ok=True)
    mine = owned_now(txn)
    if mine is None:
        entries = _snapshot_all(txn)
    else:
        txn.scope = "plan"
        entries = _snapshot_plan(txn, mine)
    write_entries(txn.dir / "pre.list", entries)


def _snapshot_all(txn: Transaction) -> list[Entry]:
    entries: list[Entry] = []
    store = str(txn.pre)
    budget = _Budget()
    for i, raw in enumerate(txn.roots):
        for rel, st in walk(Path(raw)):
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
            entries.append(Entry(n, i, "F", rel, sig=sig(st)))
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


def same(a: str, b: str) -> bool:
    """Is ``b`` still the very file (inode) ``a`` links to?"""
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except OSError:
        return False
    return (sa.st_ino, sa.st_dev) == (sb.st_ino, sb.st_dev)


def keep_changed(txn: Transaction) -> None:
    """Write ``kept.list``: the linked files the change removed or replaced (their original is
    no longer the same inode), with ``txn.kept_files`` and ``kept_bytes``; none: no list (a
    committed transaction without one kept nothing). Nothing is dropped yet
    (`drop_unchanged`, once the commit is recorded)."""
    kept: list[Entry] = []
    size = 0
    store = str(txn.pre)
    if not (txn.dir / "pre.list").exists():  # pruned already (a commit resumed)
        with contextlib.suppress(OSError):
            kept = read_entries(txn.dir / KEPT_LIST)
        size = sum(p.stat().st_size for p in txn.pre.iterdir()) if txn.pre.is_dir() else 0
        txn.kept_files, txn.kept_bytes = len(kept), size
        return
    for e in read_entries(txn.dir / "pre.list"):
        if e.kind != "f":
            continue
        saved = os.path.join(store, str(e.n))
        if not os.path.lexists(saved):  # dropped by a commit that was interrupted
            continue
        if not same(saved, os.path.join(txn.roots[e.root], e.rel)):
            kept.append(e)
            with contextlib.suppress(OSError):
                size += os.lstat(saved).st_size
    if kept:
        write_entries(txn.dir / KEPT_LIST, kept)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(txn.dir / KEPT_LIST)  # one a resumed commit wrote before
    txn.kept_files, txn.kept_bytes = len(kept), size


def drop_unchanged(txn: Transaction) -> None:
    """Drop the links ``kept.list`` does not name, then ``pre.list`` (idempotent: a commit
    killed half way is finished by the next transaction, `recover_open`)."""
    listed = txn.dir / "pre.list"
    if not listed.exists():
        return
    try:
        kept = {e.n for e in read_entries(txn.dir / KEPT_LIST)}
    except FileNotFoundError:
        kept = set()  # none: the change kept nothing (written before the commit's record)
    except OSError:
        return  # unreadable: drop nothing
    store = str(txn.pre)
    for e in read_entries(listed):
        if e.kind == "f" and e.n not in kept:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(store, str(e.n)))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(listed)
