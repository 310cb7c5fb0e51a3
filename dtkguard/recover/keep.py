"""Packages the journal kept: a removed or replaced distribution, repacked from its files.

A restore asks the journal for every package it puts back; `KeptDists` reads each
transaction's record and kept ``METADATA`` files once for all of them (asking each
transaction anew made a restore's plan grow with packages × transactions × kept files).
"""

from __future__ import annotations

import os
from pathlib import Path

from dtkguard.journal.layout import Layout
from dtkguard.journal.txn import Transaction, transactions
from dtkguard.recover.wanted import Want


class KeptDists:
    """The dist-infos transactions kept, by canonical name: each transaction's kept
    ``METADATA`` files are read once, the journal's transactions listed once."""

    def __init__(self) -> None:
        self._dists: dict[str, dict[str, list[tuple[str, Path]]]] = {}
        self._newest: list[Transaction] | None = None

    def newest_first(self, lay: Layout) -> list[Transaction]:
        """The committed or undone transactions of ``lay``'s journal, newest first."""
        if self._newest is None:
            done = ("committed", "undone")
            self._newest = [t for t in reversed(transactions(lay.journal)) if t.state in done]
        return self._newest

    def dist_info(self, txn: Transaction, key: str, version: str) -> Path | None:
        """The original path of ``key``'s dist-info when ``txn`` kept it at ``version``."""
        from dtkguard.rules.vendor import same_version

        if not same_version(txn.before.get(key, ""), version):
            return None
        dists = self._dists.get(str(txn.dir))
        if dists is None:
            dists = self._dists[str(txn.dir)] = _kept_dists(txn)
        return next((p for v, p in dists.get(key, []) if same_version(v, version)), None)


def _kept_dists(txn: Transaction) -> dict[str, list[tuple[str, Path]]]:
    """{canonical name: [(version, dist-info)]} of every ``METADATA`` ``txn`` kept, in
    (root, path) order."""
    from dtkguard.decision import canonical
    from dtkguard.env.dist import parse_headers

    out: dict[str, list[tuple[str, Path]]] = {}
    for (i, rel), kept in sorted(txn.kept().items()):
        head, _, tail = rel.partition("/")
        if tail != "METADATA" or not head.endswith(".dist-info"):
            continue
        try:
            headers = parse_headers(kept.read_bytes())
        except OSError:
            continue
        name, ver = headers.get("name", [""])[0], headers.get("version", [""])[0]
        out.setdefault(canonical(name), []).append((ver, Path(txn.roots[i]) / head))
    return out


def repack_from(
    lay: Layout, txn: Transaction, want: Want, dest: Path, kept: KeptDists
) -> Path | None:
    """A wheel of ``want`` repacked from what ``txn`` kept, every file checked against its
    RECORD; None when ``txn`` did not keep it whole."""
    from dtkguard.recover.repack import Installed, RepackError, repack

    dist_info = kept.dist_info(txn, want.key, want.version)
    if dist_info is None:
        return None

    def locate(path: Path) -> Path | None:
        copy = txn.pre_path(Path(os.path.realpath(path.parent)) / path.name)
        if copy is not None and copy.exists():
            return copy
        return path if path.exists() else None  # untouched: checked against RECORD too

    try:
        return repack(
            Installed(dist_info, dist_info.parent, lay.prefix, lay.scripts),
            dest / f"{txn.id:04d}",
            locate,
            check_record=True,
        )
    except RepackError:
        return None


def repack_kept(
    lay: Layout, want: Want, dest: Path, kept: KeptDists
) -> tuple[Transaction, Path] | None:
    """(transaction, wheel) from the newest transaction that kept ``want`` whole."""
    for txn in kept.newest_first(lay):
        wheel = repack_from(lay, txn, want, dest, kept)
        if wheel is not None:
            return txn, wheel
    return None


def was_requested(txn: Transaction, key: str, version: str, kept: KeptDists) -> bool | None:
    """Did the dist ``txn`` kept carry pip's REQUESTED marker (None: not kept)?"""
    dist_info = kept.dist_info(txn, key, version)
    if dist_info is None:
        return None
    i = next(n for n, root in enumerate(txn.roots) if Path(root) == dist_info.parent)
    return (i, f"{dist_info.name}/REQUESTED") in txn.kept()
