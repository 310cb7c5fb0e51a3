"""``dtkguard history --prune``: drop the kept files of older committed transactions."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from dtkguard.journal.txn import KEPT_LIST, Transaction, transactions


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
        for listed in (KEPT_LIST, "pre.list"):  # pre.list: a commit killed before dropping
            with contextlib.suppress(FileNotFoundError):
                os.unlink(txn.dir / listed)
        txn.state, txn.kept_files, txn.kept_bytes = "pruned", 0, 0
        txn.save()
        done.append((txn, files, size))
    return done
