"""What every check receives: the environment, the policy and the date."""

from __future__ import annotations

from dtkguard.env.environment import Environment
from dtkguard.policy.compiled import CompiledPolicy
from dtkguard.record import field, record

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    import datetime as _dt
    from typing import Any


@record
class CheckContext:
    env: Environment
    policy: CompiledPolicy
    #: the date exceptions are judged at; None: today
    today: _dt.date | None = None
    #: extra inputs of optional checks (a lock, device facts, model scans ...)
    extra: dict[str, Any] = field(default_factory=dict)
