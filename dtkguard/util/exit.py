"""Leaving the process without the interpreter's teardown.

A `check` of a 150-dist env spends a seventh of its CPU after its last line is written: the
interpreter frees every module, object and compiled pattern one by one before it exits. A
command that closes every file it writes says so (`skip_teardown`: `check` does); then the
command line (``python -m dtkguard``, the ``dtkguard`` script) exits the way the interpreter
would — the ``atexit`` handlers first, then the streams flushed — and then at once, as
Instagram's servers do. Whenever that could lose anything it exits the usual way: a command
that did not say so, another thread still running (the interpreter would wait for it), a tracer
or profiler attached (coverage and cProfile write their results at teardown), or a stream that
does not flush (the interpreter reports it and exits 120).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


_SKIP = False


def skip_teardown() -> None:
    """The running command closes every file it writes: `exit_now` may skip the teardown."""
    global _SKIP
    _SKIP = True


def exit_now(code: int) -> NoReturn:
    """Exit with status ``code``: ``atexit`` handlers, streams flushed, no teardown (when
    `skip_teardown` was called and nothing calls for one; else ``sys.exit``)."""
    if not _SKIP:
        sys.exit(code)
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        sys.exit(code)
    if sys.gettrace() is not None or sys.getprofile() is not None:
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()  # what the interpreter runs first when it exits; then none are left
    try:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(code)  # the interpreter's own exit reports the stream
    os._exit(code)
