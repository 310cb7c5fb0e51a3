"""Writing a command's output file (``-o``): atomically, and any failure is bad input (exit 2).

A directory, a missing or read-only folder, a full device: one line naming the file and ``-o``,
never a traceback, and the old file (if any) is left as it was.
"""

from __future__ import annotations

import os


def write_output(path: str | os.PathLike[str], data: str | bytes, field: str = "-o") -> None:
    """Replace ``path`` with ``data`` (text is UTF-8) or raise `InputError`."""
    from dtkguard.errors import InputError
    from dtkguard.util.atomic import atomic_write_bytes

    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        atomic_write_bytes(path, raw)
    except OSError as exc:
        raise InputError(
            f"cannot write output: {exc.strerror or exc}", os.fspath(path), field=field
        ) from None
