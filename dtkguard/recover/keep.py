"""Packages the journal kept: a removed or replaced distribution, repacked from its files."""

from __future__ import annotations

import os
from pathlib import Path

from dtkguard.journal.layout import Layout
from dtkguard.journal.txn import Transaction, transactions
from dtkguard.recover.wanted import Want


def kept_dist_info(txn: Transaction, key: str, version: str) -> Path | None:
    """The original path of ``key``'s dist-info when ``txn`` kept it at ``version``."""
    from dtkguard.decision import canonical
    from dtkguard.env.dist import parse_headers
    from dtkguard.rules.vendor import same_version

    if not same_version(txn.before.get(key, ""), version):
        return None
    for (i, rel), kept in sorted(txn.kept().items()):
        head, _, tail = rel.partition("/")
        if tail != "METADATA" or not head.endswith(".dist-info"):
            continue
        try:
            headers = parse_headers(kept.read_bytes())
        except OSError:
            continue
        name, ver = headers.get("name", [""])[0], headers.get("version", [""])[0]
        if canonical(name) == key and same_version(ver, version):
            return Path(txn.roots[i]) / head
    return None


def repack_from(lay: Layout, txn: Transaction, want: Want, dest: Path) -> Path | None:
    """A wheel of ``want`` repacked from what ``txn`` kept, every file checked against its
    RECORD; None when ``txn`` did not keep it whole."""
    from dtkguard.recover.repack import Installed, RepackError, repack

    dist_info = kept_dist_info(txn, want.key, want.version)
    if dist_info is None:
        return None

    def locate(path: Path) -> Path | None:
        kept = txn.pre_path(Path(os.path.realpath(path.parent)) / path.name)
        if kept is not None and kept.exists():
            return kept
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


def repack_kept(lay: Layout, want: Want, dest: Path) -> tuple[Transaction, Path] | None:
    """(transaction, wheel) from the newest transaction that kept ``want`` whole."""
    for txn in reversed(transactions(lay.journal)):
        if txn.state in ("committed", "undone"):
            wheel = repack_from(lay, txn, want, dest)
            if wheel is not None:
                return txn, wheel
    return None


def was_requested(txn: Transaction, key: str, version: str) -> bool | None:
    """Did the dist ``txn`` kept carry pip's REQUESTED marker (None: not kept)?"""
    dist_info = kept_dist_info(txn, key, version)
    if dist_info is None:
        return None
    i = next(n for n, root in enumerate(txn.roots) if Path(root) == dist_info.parent)
    return (i, f"{dist_info.name}/REQUESTED") in txn.kept()
