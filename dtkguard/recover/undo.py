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
from dtkguard.journal.layout import Layout, installed_versions, layout
from dtkguard.journal.transaction import recover, transaction
from dtkguard.journal.txn import Transaction, transactions
from dtkguard.recover.restore import say

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.env.interpreter import Interpreter
    from dtkguard.policy.compiled import CompiledPolicy
    from dtkguard.recover.restore import Build


#: reasons shown before "and N more"
SHOWN = 8


class NothingToUndo(DtkguardError):
    """No committed transaction: exit 1 (not bad input), nothing changed."""

    exit_code = 1


def pick(lay: Layout, number: int | None) -> Transaction:
    """The transaction to undo: ``number``, or the newest committed one."""
    txns = {t.id: t for t in transactions(lay.journal)}
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
    later = [t for t in transactions(lay.journal) if t.id > txn.id and t.state == "committed"]
    for key, _, after in txn.changes():
        if now.get(key) != after:
            who = next((t.id for t in later if key in {k for k, _, _ in t.changes()}), None)
            since = f" by transaction {who}" if who else ""
            out.append(
                f"{txn.names.get(key, key)} changed since{since} (now {now.get(key, 'absent')})"
            )
    return out


def forbidden(txn: Transaction, policy: CompiledPolicy) -> list[str]:
    """What undoing ``txn`` would do that the guard forbids (so it needs ``--override``):
    put back what the decision core refuses, or remove a vendor build the policy pins."""
    from dtkguard.guard.baseline import refused
    from dtkguard.rules.vendor import same_version

    out: list[tuple[bool, str]] = []  # (not a vendor build, line): the vendor builds first
    for key, before, after in txn.changes():
        name = txn.names.get(key, key)
        pin = policy.vendor_build(name)
        pinned = pin is not None
        if before is None and pin is not None and after is not None:
            what = (
                f"the vendor build {name} {after}"
                if same_version(pin, after)
                else f"{name} {after} (the guard refuses removing {name}, a name the policy "
                f"pins to {pin})"
            )
            out.append((False, f"it would remove {what}"))
        elif before is not None:
            out += [
                (
                    not pinned,
                    f"it would put back {name} {before}, which the policy refuses ({rule})",
                )
                for rule, _msg in refused(policy, name, before)[:1]
            ]
    return [line for _, line in sorted(out, key=lambda item: item[0])]


def _losses(txn: Transaction, policy: CompiledPolicy) -> list[str]:
    """What undoing ``txn`` removes or downgrades that the policy allows (asked first)."""
    from packaging.version import InvalidVersion, Version

    from dtkguard.guard.baseline import allowed

    out = []
    for key, before, after in txn.changes():
        name = txn.names.get(key, key)
        if after is None or not allowed(policy, name, after):
            continue
        try:
            lower = before is None or Version(before) < Version(after)
        except InvalidVersion:
            lower = False
        if lower:
            out.append(f"{name} {after}" + (f" -> {before}" if before else ""))
    return out


def _plan_text(txn: Transaction) -> str:
    out = [f"dtkguard undo: transaction {txn.id} ({txn.time}, {' '.join(txn.argv)}):"]
    changes = txn.changes()
    for key, before, after in changes:
        name = txn.names.get(key, key)
        if before is None:
            out.append(f"  - remove {name} {after}")
        elif after is None:
            out.append(f"  - put back {name} {before}")
        else:
            out.append(f"  - {name} {after} back to {before}")
    if not changes and txn.kept_files:
        out.append(f"  - put back {txn.kept_files} file(s) it replaced")
    return "\n".join(out) + "\n"


def _builds(lay: Layout, txn: Transaction, now: dict[str, str], tmp: Path) -> list[Build] | None:
    """The kept copies of what ``txn`` removed or replaced, repacked and checked (None: one
    was not kept whole)."""
    from dtkguard.recover.keep import KeptDists, repack_from, was_requested
    from dtkguard.recover.restore import Build
    from dtkguard.recover.wanted import Want

    kept = KeptDists()
    builds: list[Build] = []
    for key, before, _after in txn.changes():
        if before is None:
            continue
        want = Want(key, txn.names.get(key, key), before, False)
        wheel = repack_from(lay, txn, want, tmp, kept)
        if wheel is None:
            say(
                f"dtkguard undo: transaction {txn.id} kept no intact copy of "
                f"{want.name} {before}; nothing was changed\n"
            )
            return None
        requested = was_requested(txn, key, before, kept)
        builds.append(Build(want.name, before, wheel, requested, False))
    return builds


def _refuse(txn: Transaction, python: str, lines: list[str], why: str) -> int:
    say(f"dtkguard undo: transaction {txn.id} ({' '.join(txn.argv)}) {why}; nothing was changed:\n")
    say("".join(f"  - {p}\n" for p in lines[:SHOWN]))
    if len(lines) > SHOWN:
        say(f"  - and {len(lines) - SHOWN} more\n")
    return 1


def undo(
    python: str, number: int | None, argv: list[str], reason: str = "", yes: bool = False
) -> int:
    """Decide (conflicts, what needs ``--override``, the kept copies), print, ask, do."""
    from dtkguard.env.interpreter import interpreter
    from dtkguard.guard.hook_policy import load_guard_policy
    from dtkguard.recover.confirm import confirm

    lay = layout(python)
    recover(lay)
    txn = pick(lay, number)
    interp = interpreter(python)
    policy = load_guard_policy(None, interp)
    now, _ = installed_versions(lay.roots)
    problems = conflicts(lay, txn, now)
    if problems:
        return _refuse(txn, python, problems, "cannot be undone")
    blocked = forbidden(txn, policy)
    if blocked and not reason:
        _refuse(txn, python, blocked, "cannot be undone without an override")
        say(
            "If you must (recorded in the journal and the overrides log): "
            f'dtkguard undo {txn.id} --python {python} --override "reason"\n'
        )
        return 1
    with tempfile.TemporaryDirectory(prefix="dtkguard-undo-") as tmp:
        builds = _builds(lay, txn, now, Path(tmp))
        if builds is None:
            return 1
        say(_plan_text(txn))
        confirm("dtkguard undo", _losses(txn, policy), yes)
        new = _do(python, lay, txn, builds, argv, reason, Path(tmp))
    say(f"dtkguard undo: done (journal transaction {new.id}).\n")
    _follow(lay, interp, new, txn)
    return 0


def _do(
    python: str,
    lay: Layout,
    txn: Transaction,
    builds: list[Build],
    argv: list[str],
    reason: str,
    tmp: Path,
) -> Transaction:
    from dtkguard.env.interpreter import interpreter
    from dtkguard.recover.restore import Override, archive_overrides, put_back, unarchive_overrides

    remove = [txn.names.get(k, k) for k, before, _ in txn.changes() if before is None]
    log = overrides_log(interpreter(python))
    ovr = Override(log, reason, "dtkguard undo") if reason else None
    redo = _redoes_restore(lay, txn)
    touches = [key for key, _, _ in txn.changes()]  # only these dists' files change
    with transaction(
        python, "dtkguard undo", argv, reason=reason, undoes=txn.id, lay=lay, touches=touches
    ) as new:
        put_back(python, remove, builds, [], dict(os.environ), tmp, ovr)
        unarchive_overrides(txn, log)  # a restore archived them: they describe the state back
        if redo:  # the restore again: the records of what it removes go with it, as then
            archive_overrides(log, new)
    txn.note = (txn.note + f"; undone by transaction {new.id}").lstrip("; ")
    txn.state = "undone"
    txn.save()
    return new


def _redoes_restore(lay: Layout, txn: Transaction) -> bool:
    """Undoing ``txn`` does a restore again: ``txn`` is the undo of a restore, or of an undo
    of an undo of one (an odd number of undos down to it)."""
    by_id = {t.id: t for t in transactions(lay.journal)}
    depth, first = 0, txn
    while first.tool == "dtkguard undo" and first.undoes in by_id:
        depth, first = depth + 1, by_id[first.undoes]
    return depth % 2 == 1 and first.tool == "dtkguard restore"


def _follow(lay: Layout, interp: Interpreter, new: Transaction, txn: Transaction) -> None:
    """The baseline follows the undo of an approved change (dtkpip, dtkuv, a `restore --to
    guard-install` that took the baseline back, or an undo of one); the undo of any other
    restore puts back what nobody approved, so it moves nothing."""
    from dtkguard.guard.baseline import APPROVING_TOOLS, follow
    from dtkguard.recover.restore import BASELINE_BACK

    by_id = {t.id: t for t in transactions(lay.journal)}
    first: Transaction | None = txn
    while first is not None and first.tool == "dtkguard undo":
        first = by_id.get(first.undoes) if first.undoes is not None else None
    approved = first is not None and (
        first.tool in APPROVING_TOOLS
        or (first.tool == "dtkguard restore" and BASELINE_BACK in first.note)
    )
    follow(interp, new.changes(), approved=approved)
