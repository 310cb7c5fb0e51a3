"""Digest-chained logs: a JSON-lines file whose every record hashes the one before it.

Each line is one JSON object with ``"prev"``: the hex sha256 of the previous line's bytes (""
for the first line). Beside the log, ``<log>.head`` holds ``COUNT SHA256`` of its line COUNT,
rewritten atomically (fsync, rename) after each append, or, by a writer that appends several
records in a row (the journal, once per transaction), after the last of them. So an edited line
breaks the chain at the next one, a removed line too, and a truncated log no longer matches its
head. Invariant: the head is never ahead of the durable log (it is written after the lines it
counts are fsync'd); a head that names an earlier line of the log is behind (a writer killed
before it caught up), not a truncation. The pip hook writes the same format with the standard
library only (`dtkguard/pipoverride.py`, ``chain_append``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from dtkguard.util.atomic import atomic_write_text
from dtkguard.util.purepath import join, parent, pure_path
from dtkguard.util.purepath import name as name_of
from dtkguard.util.safe_read import read_capped
from dtkguard.util.sha import sha256_hex
from dtkguard.util.text import dumps, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from dtkguard.util.json_types import JSON

#: a log is many short lines; larger than this is not a log of ours
MAX_BYTES = 64 << 20


def head_path(path: Path) -> Path:
    return path.with_name(path.name + ".head")


def _head_text(path: str) -> str:
    """``str(head_path(Path(path)))`` of a log named as text (``str(Path)``)."""
    return join(parent(path), name_of(path) + ".head")


def line_digest(line: str) -> str:
    return sha256_hex(line.encode("utf-8", "surrogateescape"))


def _lines(path: str | os.PathLike[str]) -> list[str]:
    try:
        text = read_capped(path, MAX_BYTES, what="log").decode("utf-8", "replace")
    except FileNotFoundError:
        return []
    return [ln for ln in text.splitlines() if ln.strip()]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(lock, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def append(path: Path, entry: dict[str, JSON], *, head: bool = True) -> dict[str, JSON]:
    """Append ``entry`` (with its ``prev`` link) to the log at ``path``; returns it.
    ``head=False``: leave an existing head behind (the caller brings it up to date after its
    last record, `append`, or leaves it behind for a while); a log without one gets one."""
    with _locked(path):
        lines = _lines(path)
        entry = {**entry, "prev": line_digest(lines[-1]) if lines else ""}
        line = dumps(entry, sort_keys=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:  # one write per record
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if head or not os.path.lexists(head_path(path)):
            atomic_write_text(head_path(path), f"{len(lines) + 1} {line_digest(line)}\n", 0o600)
    return entry


def catch_up(path: Path) -> None:
    """Bring the head of the log at ``path`` up to its last line (a writer killed before it
    wrote the head of its records)."""
    with _locked(path):
        lines = _lines(path)
        if lines:
            head = f"{len(lines)} {line_digest(lines[-1])}\n"
            with contextlib.suppress(OSError):
                if head_path(path).read_text(encoding="utf-8") == head:
                    return
            atomic_write_text(head_path(path), head, 0o600)


def records(path: str | os.PathLike[str]) -> list[tuple[int, dict[str, JSON] | None]]:
    """(line number, record or None when the line is not a JSON object)."""
    out: list[tuple[int, dict[str, JSON] | None]] = []
    for no, line in enumerate(_lines(path), 1):
        try:
            data = loads(line)
        except ValueError:
            data = None
        out.append((no, data if isinstance(data, dict) else None))
    return out


def problems(path: str | os.PathLike[str]) -> list[str]:
    """What is wrong with the chain of the log at ``path``, in words ([]: intact, or no log
    and no head)."""
    path = pure_path(os.fspath(path))
    log, head = name_of(path), _head_text(path)
    lines = _lines(path)
    out = []
    prev = ""
    for no, line in enumerate(lines, 1):
        try:
            link = loads(line).get("prev")
        except (ValueError, AttributeError):
            link = None
        if link != prev:
            out.append(f"{log} line {no} does not follow line {no - 1} (edited or removed)")
        prev = line_digest(line)
    try:
        with open(head, encoding="utf-8") as fh:
            count, _, last = fh.read().strip().partition(" ")
    except FileNotFoundError:
        if lines:
            out.append(f"{name_of(head)} is missing")
        return out
    except OSError as exc:
        return [*out, f"{name_of(head)} is unreadable: {exc.strerror}"]
    if not _names_a_line(count, last, lines):
        out.append(
            f"{log} holds {len(lines)} record(s), its head says {count}: truncated or rewritten"
        )
    return out


def _names_a_line(count: str, last: str, lines: list[str]) -> bool:
    """Does the head ``COUNT SHA256`` name a line of the log (its last, or an earlier one:
    a head left behind)?"""
    if not lines:
        return count == "0"
    if not count.isdigit() or not 0 < int(count) <= len(lines):
        return False
    return last == line_digest(lines[int(count) - 1])
