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

The command line also keeps the cycle collector out of what is never garbage: what its start
makes (the modules, the parsed arguments) lives until the exit, so it is collected by nothing
(`console_start`, `command_starts`), and a command that pauses the collector does not turn it
back on just before such an exit (`restore_collector`): that one collection would traverse
every object the command made, about 2 ms of a cached `check`.
"""

from __future__ import annotations

import gc
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


_SKIP = False
_CONSOLE = False  # the process is the command line: it ends when its command returns
_PAUSED = False  # console_start paused the collector; command_starts gives it back


def console_start() -> None:
    """The command line starts: the cycle collector off while modules load and the arguments
    are parsed (all of it lives until the exit)."""
    global _CONSOLE, _PAUSED
    _CONSOLE = True
    if gc.isenabled():
        gc.disable()
        _PAUSED = True


def command_starts() -> None:
    """The command is about to run: what the start made is frozen out of every collection
    (``gc.freeze``: it lives until the exit) and the collector is on again. Nothing when
    `console_start` did not pause it (a library caller's collector is its own)."""
    global _PAUSED
    if _PAUSED:
        _PAUSED = False
        gc.freeze()
        gc.enable()


def restore_collector(was_enabled: bool) -> None:
    """After a command that paused the collector: on again when it was on, unless the process
    is the command line and exits at once without teardown (`skip_teardown`)."""
    if was_enabled and not (_CONSOLE and _SKIP):
        gc.enable()


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
