"""The resolvelib reporter: rounds, backtracks, a deadline."""

from __future__ import annotations

import time
from typing import Any

from resolvelib import BaseReporter

from dtkguard.resolve.candidates import Candidate, Req


class OutOfTime(Exception):
    """The resolution passed its deadline (raised from the reporter, between rounds)."""

    def __init__(self, rounds: int) -> None:
        super().__init__(rounds)
        self.rounds = rounds


class CountingReporter(BaseReporter[Req, Candidate, str]):
    """Counts rounds, backtracks and rejected candidates; stops at ``deadline`` (monotonic)."""

    def __init__(self, deadline: float | None = None) -> None:
        self.rounds = 0
        self.backtracks = 0
        self.rejected = 0
        self.deadline = deadline

    def starting_round(self, index: int) -> None:
        self.rounds = index + 1
        if self.deadline is not None and index % 64 == 0 and time.monotonic() > self.deadline:
            raise OutOfTime(self.rounds)

    def resolving_conflicts(self, causes: Any) -> None:
        self.backtracks += 1

    def rejecting_candidate(self, criterion: Any, candidate: Any) -> None:
        self.rejected += 1
