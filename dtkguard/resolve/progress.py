"""What `lock` shows while it resolves: ``resolving … N packages, M fetched`` as a rich
spinner on a terminal (updated a few times a second), nothing otherwise (logs and CI get the
summary line at the end). ``DTKGUARD_NO_PROGRESS`` turns it off."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any


class Progress:
    """Counts shown by :func:`showing`: the provider is attached once the resolver made it."""

    def __init__(self, fetcher: Any) -> None:
        self.fetcher = fetcher
        self.provider: Any = None

    def attach(self, provider: Any) -> None:
        if self.provider is None:  # trial resolutions share the first one's caches
            self.provider = provider

    def text(self) -> str:
        seen = self.provider.projects_seen() if self.provider is not None else 0
        fetched = self.fetcher.stats["requests"]
        return f"resolving … {seen} package{'s' if seen != 1 else ''}, {fetched} fetched"


@contextlib.contextmanager
def showing(fetcher: Any, stream: Any = None, quiet: bool = False) -> Iterator[Progress]:
    """A :class:`Progress` for the block; on a terminal a spinner with its text."""
    stream = stream or sys.stderr
    progress = Progress(fetcher)
    tty = hasattr(stream, "isatty") and stream.isatty()
    if quiet or not tty or os.environ.get("DTKGUARD_NO_PROGRESS"):
        yield progress
        return
    from rich.console import Console

    done = threading.Event()
    with Console(file=stream).status(progress.text(), spinner="dots") as status:

        def tick() -> None:
            while not done.wait(0.2):
                status.update(progress.text())

        thread = threading.Thread(target=tick, name="dtkguard-progress", daemon=True)
        thread.start()
        try:
            yield progress
        finally:
            done.set()
            thread.join()
