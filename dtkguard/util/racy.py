"""git's rule for "racy" entries of a stat-keyed cache: a file whose ctime is this recent may
change again within its timestamp's granularity without its stat changing, so what was read
of it is not kept (the next run reads it again)."""

from __future__ import annotations

import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os

#: a stat younger than this (ns) is racy
RACY_NS = 2_000_000_000


def settled(st: os.stat_result, now: int | None = None) -> bool:
    """May what was read of the file of stat ``st`` be kept (its ctime is `RACY_NS` old)?
    ``now``: `time.time_ns` taken once for many files."""
    return (time.time_ns() if now is None else now) - st.st_ctime_ns >= RACY_NS
