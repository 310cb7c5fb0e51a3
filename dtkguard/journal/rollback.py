"""Put an environment back as a transaction's ``pre/`` and ``pre.list`` say it was: the one
place that writes into site-packages without an installer. Files come back by link (bytes and
metadata are the originals); paths the change added go; what it cannot account for stays and is
named."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from pathlib import Path

from dtkguard.journal.snapshot import owned_now, same, sig, walk
from dtkguard.journal.txn import (
    KEPT_LIST,
    Entry,
    Transaction,
    free_reserve,
    read_entries,
    say,
)
from dtkguard.lightclass import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.journal.owned import Owned


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

    def made(
        self, i: int, rel: str, full: str, st: os.stat_result, known: dict[tuple[int, str], Entry]
    ) -> bool:
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
    rb = _Rollback(txn, owned_now(txn), until_ns)
    entries = read_entries(txn.dir / "pre.list")
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
    for rel, st in sorted(walk(Path(raw)), key=lambda x: x[0].count("/"), reverse=True):
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
            unchanged = sig(os.lstat(path)) == e.sig
        except OSError:
            unchanged = False
        if not unchanged:
            rb.unaccounted.append(path)
        return
    if e.kind == "l":
        with contextlib.suppress(OSError):
            if os.readlink(path) == e.link:
                return
    saved = os.path.join(str(rb.txn.pre), str(e.n))
    if e.kind == "f" and (same(saved, path) or not os.path.lexists(saved)):
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
        say(
            f"dtkguard: rollback of rev {txn.id} kept {len(txn.unaccounted)} path(s) it did not "
            f"make or cannot put back (changed since, not by it): {shown}\n"
        )


def finish_rollback(txn: Transaction, note: str) -> None:
    _tell_unaccounted(txn)
    free_reserve(txn.dir)
    shutil.rmtree(txn.pre, ignore_errors=True)
    for listed in ("pre.list", KEPT_LIST):  # a kept.list of a commit killed before its record
        with contextlib.suppress(FileNotFoundError):
            os.unlink(txn.dir / listed)
    txn.after = dict(txn.before)
    txn.state, txn.note, txn.kept_files, txn.kept_bytes = "rolled-back", note, 0, 0
    txn.save()
