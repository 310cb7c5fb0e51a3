"""`undo`: revert one journalled transaction with pip, as a transaction of its own.

Packages the transaction added are uninstalled; packages it removed or replaced are put back
from the files it kept (repacked into wheels, each file checked against its RECORD) with
``pip install --no-index --no-deps --force-reinstall --require-hashes``. A package changed
again by a later transaction is not touched: undo refuses and names that transaction.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from dtkguard.env.store import overrides_log
from dtkguard.errors import DtkguardError, InputError
from dtkguard.guard import journal
from dtkguard.guard.journal import Layout, Transaction


class NothingToUndo(DtkguardError):
    """No committed transaction: exit 1 (not bad input), nothing changed."""

    exit_code = 1


def pick(lay: Layout, number: int | None) -> Transaction:
    """The transaction to undo: ``number``, or the newest committed one."""
    txns = {t.id: t for t in journal.transactions(lay.journal)}
    if number is None:
        live = [t for t in txns.values() if t.state == "committed"]
        if not live:
            raise NothingToUndo(f"nothing to undo: the journal {lay.journal} has no transaction")
        return live[-1]
    txn = txns.get(number)
    if txn is None:
        raise InputError(f"no transaction {number} in {lay.journal}", field="N")
    if txn.state != "committed":
        raise InputError(f"transaction {number} is {txn.state}; only committed ones", field="N")
    return txn


def conflicts(lay: Layout, txn: Transaction, now: dict[str, str]) -> list[str]:
    """Why ``txn`` cannot be undone as it is: its packages changed since."""
    out = []
    later = [
        t for t in journal.transactions(lay.journal) if t.id > txn.id and t.state == "committed"
    ]
    for key, _, after in txn.changes():
        if now.get(key) != after:
            who = next((t.id for t in later if key in {k for k, _, _ in t.changes()}), None)
            since = f" by transaction {who}" if who else ""
            out.append(
                f"{txn.names.get(key, key)} changed since{since} (now {now.get(key, 'absent')})"
            )
    return out


def undo(python: str, number: int | None, argv: list[str], reason: str = "") -> int:
    from dtkguard.env.interpreter import interpreter
    from dtkguard.recover.keep import repack_from, was_requested
    from dtkguard.recover.restore import ARCHIVED_OVERRIDES, Build, Override, put_back, say
    from dtkguard.recover.wanted import Want

    lay = journal.layout(python)
    journal.recover(lay)
    txn = pick(lay, number)
    now, _ = journal.installed_versions(lay.roots)
    problems = conflicts(lay, txn, now)
    if problems:
        say(f"dtkguard undo: transaction {txn.id} cannot be undone; nothing was changed:\n")
        say("".join(f"  - {p}\n" for p in problems))
        return 1
    changes = txn.changes()
    remove = [txn.names.get(k, k) for k, before, _ in changes if before is None]
    back = [(k, before) for k, before, _ in changes if before is not None]
    say(f"dtkguard undo: transaction {txn.id} ({txn.time}, {' '.join(txn.argv)}):\n")
    for key, before, after in changes:
        name = txn.names.get(key, key)
        if before is None:
            say(f"  - remove {name} {after}\n")
        elif after is None:
            say(f"  - put back {name} {before}\n")
        else:
            say(f"  - {name} {after} back to {before}\n")
    if not changes and txn.kept_files:
        say(f"  - put back {txn.kept_files} file(s) it replaced\n")
    with tempfile.TemporaryDirectory(prefix="dtkguard-undo-") as tmp:
        builds: list[Build] = []
        for key, version in back:
            want = Want(key, txn.names.get(key, key), version, False)
            wheel = repack_from(lay, txn, want, Path(tmp))
            if wheel is None:
                say(
                    f"dtkguard undo: transaction {txn.id} kept no intact copy of "
                    f"{want.name} {version}; nothing was changed\n"
                )
                return 1
            requested = was_requested(txn, key, version)
            builds.append(Build(want.name, version, wheel, requested, False, key in now))
        log = overrides_log(interpreter(python))
        ovr = Override(log, reason, "dtkguard undo") if reason else None
        with journal.transaction(
            python, "dtkguard undo", argv, reason=reason, undoes=txn.id, lay=lay
        ) as new:
            put_back(python, remove, builds, [], dict(os.environ), Path(tmp), ovr)
            archived = txn.dir / ARCHIVED_OVERRIDES
            if archived.is_file():  # a restore archived them: they describe the state back now
                with open(log, "a", encoding="utf-8") as fh:
                    fh.write(archived.read_text(encoding="utf-8"))
                archived.unlink()
        txn.note = (txn.note + f"; undone by transaction {new.id}").lstrip("; ")
        txn.state = "undone"
        txn.save()
    say(f"dtkguard undo: done (journal transaction {new.id}).\n")
    return 0
