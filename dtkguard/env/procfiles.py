"""Read a process's ``/proc/N`` files: argv, environment, links; bounded, never raising."""

from __future__ import annotations

import os
from pathlib import Path

from dtkguard.util.safe_read import read_head


def read(proc: str, name: str, limit: int = 1 << 20) -> bytes | None:
    """``/proc/N/<name>`` (``proc`` is ``/proc/N``), at most ``limit`` bytes; None if unreadable."""
    try:
        return read_head(Path(proc, name), limit, follow=False)
    except OSError:
        return None


def _fields(raw: bytes) -> list[str]:
    return [a.decode("utf-8", "replace") for a in raw.rstrip(b"\0").split(b"\0")] if raw else []


def cmdline(proc: str) -> list[str]:
    """argv of the process; empty for a kernel thread, a zombie or an unreadable process."""
    return _fields(read(proc, "cmdline") or b"")


def environ(proc: str) -> dict[str, str] | None:
    """The process's environment; None when it cannot be read (another user's process)."""
    raw = read(proc, "environ", 4 << 20)
    if raw is None:
        return None
    out: dict[str, str] = {}
    for item in _fields(raw):
        key, sep, value = item.partition("=")
        if sep and key:
            out[key] = value
    return out


def start_time(proc: str) -> str | None:
    """When the process started (``/proc/N/stat`` field 22, clock ticks since boot): a pid
    reused by another process has another; None when it is gone."""
    raw = read(proc, "stat", 4096)
    fields = raw.rpartition(b")")[2].split() if raw else []
    return fields[19].decode() if len(fields) > 19 else None


def link(proc: str, name: str) -> str | None:
    """Where ``/proc/N/<name>`` (cwd, exe, root) points, as the process sees it."""
    try:
        return os.readlink(os.path.join(proc, name)).removesuffix(" (deleted)")
    except OSError:
        return None
