"""The journal's transactions: every change to an environment runs as one (`transaction`,
`journalled`), with the files it removed.

``pre/`` starts as hard links of the files under the environment's install roots the change may
touch (`dtkguard.journal.snapshot`); when the transaction commits, links whose original is
still the same inode are dropped, so what stays is exactly the files the change removed or
replaced. They are kept until ``prune``. A transaction left ``open`` (the process was killed)
is rolled back by the next one that starts (`recover_open`, `dtkguard.journal.rollback`), so
the environment is never left between two states. The journal knows no installer's options:
its callers say what to journal (an install into another place than the environment is not
journalled; `dtkguard.guard.pipargs.installs_elsewhere`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from dtkguard.errors import DtkguardError
from dtkguard.journal.chain import PREPARING
from dtkguard.journal.layout import Layout, installed_versions, layout, untrusted
from dtkguard.journal.rollback import finish_rollback, rollback_files
from dtkguard.journal.snapshot import drop_unchanged, keep_changed, snapshot
from dtkguard.journal.txn import (
    FINAL,
    HEARTBEAT,
    RESERVE,
    JournalError,
    Transaction,
    free_reserve,
    reserve,
    say,
    transactions,
)


def _next_id(journal: Path) -> int:
    ids = [int(e) for e in os.listdir(journal) if e.isdigit()] if journal.is_dir() else []
    return max(ids, default=0) + 1


def _discard_unprepared(journal: Path) -> None:
    """Remove the folders of transactions killed while their snapshot was taken (the
    `PREPARING` marker and no ``txn.json``: nothing had changed), and of ones being discarded
    (``.NNNN.discard``, `_discard`). The chain's head is brought up to date then: such a
    transaction may have been killed after its first record, before the head."""
    found = []
    with contextlib.suppress(OSError), os.scandir(journal) as it:
        for entry in it:
            if entry.name.endswith(".discard") or (
                entry.name.isdigit()
                and os.path.lexists(os.path.join(entry.path, PREPARING))
                and not os.path.lexists(os.path.join(entry.path, "txn.json"))
            ):
                found.append(entry.path)
    for path in found:
        shutil.rmtree(path, ignore_errors=True)
    if found:
        from dtkguard.env.chain import catch_up
        from dtkguard.journal.chain import CHAIN

        catch_up(journal / CHAIN)


def _discard(tdir: Path) -> None:
    """Remove a transaction that is not kept: renamed out of the journal first, so that a
    kill half way leaves no transaction behind (`_discard_unprepared` ends the removal)."""
    gone = tdir.with_name(f".{tdir.name}.discard")
    try:
        os.rename(tdir, gone)
    except OSError:
        gone = tdir
    shutil.rmtree(gone, ignore_errors=True)


def recover_open(lay: Layout) -> list[Transaction]:
    """Roll back every transaction a killed process left ``open``; finish the ones it left
    committing; discard the ones it left preparing."""
    done = []
    _discard_unprepared(lay.journal)
    for txn in transactions(lay.journal):
        why = untrusted(txn, lay) if txn.state not in FINAL else None
        if why:
            say(f"dtkguard: refusing journal transaction {txn.dir.name}: {why}; left as it is\n")
            continue
        if txn.state == "committed":
            drop_unchanged(txn)  # a commit killed after its record: finish dropping links
        elif txn.state == "preparing":  # an earlier release's
            shutil.rmtree(txn.dir, ignore_errors=True)
        elif txn.state == "committing":
            _commit(txn)
        elif txn.state in ("open", "rolling-back"):
            say(
                f"dtkguard: transaction {txn.id} ({' '.join(txn.argv)}) did not finish; "
                "rolling the environment back to where it started\n"
            )
            _mark_rolling_back(txn)
            from dtkguard.journal.owned import last_beat_ns

            rollback_files(txn, last_beat_ns(str(txn.dir / HEARTBEAT)) or txn.started_ns)
            finish_rollback(txn, "interrupted; rolled back by the next transaction")
            done.append(txn)
    return done


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
            say(
                f"dtkguard: cannot finish rolling back an interrupted transaction yet: "
                f"{exc.filename or lay.journal}: {exc.strerror or exc}; free space (or make it "
                "writable) and run `dtkguard history` again\n"
            )
            return []


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
        os.close(os.open(tdir / PREPARING, os.O_WRONLY | os.O_CREAT, 0o600))
        reserve(tdir)
        # the file system's clock (coarser than time.time_ns): what the change creates has a
        # ctime at or after it
        txn.started_ns = os.stat(tdir / RESERVE).st_mtime_ns
        snapshot(txn)
    except OSError as exc:
        shutil.rmtree(tdir, ignore_errors=True)
        raise JournalError(f"cannot snapshot the environment into {tdir}: {exc}") from None
    try:  # the first record: pre.list (fsync'd by snapshot) is on disk before it
        txn.state = "open"
        txn.save()
    except OSError as exc:  # no txn.json on disk: discarded, nothing changed
        shutil.rmtree(tdir, ignore_errors=True)
        raise JournalError(f"cannot write the journal in {tdir}: {exc.strerror or exc}") from None
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tdir / PREPARING)  # txn.json is there: from now on it says the state
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
        finish_rollback(txn, f"failed: {exc}".strip())
    except OSError as err:
        say(
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

    from dtkguard.journal.owned import HEARTBEAT as EVERY
    from dtkguard.journal.owned import beat

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
    """The change is complete: keep only what it removed. Invariant: no link of ``pre/`` is
    dropped before ``committed`` is recorded (``kept.list`` on disk before it), so a commit
    killed before its record is rolled back from a whole snapshot, and one killed after it is
    finished by `recover_open` (`drop_unchanged`), never rolled back. ``committing`` (an
    earlier release's) is finished the same way."""
    try:
        keep_changed(txn)
    except OSError as exc:  # a full disk: the reserve is there for this
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or not free_reserve(txn.dir):
            raise
        keep_changed(txn)
    if txn.after == txn.before and txn.kept_files == 0:
        _discard(txn.dir)
        return
    txn.state = "committed"
    txn.save()
    drop_unchanged(txn)
    free_reserve(txn.dir)


def journalled(
    python: str,
    tool: str,
    argv: list[str],
    run: Callable[[], int],
    then: Callable[[Transaction], object] | None = None,
    *,
    touches: list[str] | None = None,
    reason: str = "",
) -> int:
    """Run ``run()`` (a pip or uv call returning its exit code) as one transaction of
    ``python``'s environment. A non-zero exit rolls the environment back to where it was
    (pip commits each package as it goes: a failure half way would leave it between states).
    ``then(txn)`` runs after a commit (the baseline follows the approved change).
    ``touches``: the canonical names the plan installs, upgrades or removes (only their files
    are snapshotted); ``reason``: an override's, which `history` shows. This is the one wrapper
    dtkpip and dtkuv use."""
    code = 0
    try:
        with transaction(python, tool, argv, reason, touches=touches) as txn:
            code = run()
            if code != 0:
                raise _Failed(code)
        if then is not None:
            then(txn)
    except _Failed:
        say(
            f"dtkguard: `{' '.join(argv)}` failed (exit {code}); the environment was rolled "
            f"back to where it started (journal rev {txn.id})\n"
        )
    return code


class _Failed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"exit {code}")
        self.code = code
