"""What every check receives: the environment, the policy and the date."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from dtkguard.env.environment import Environment
from dtkguard.policy.compiled import CompiledPolicy


@dataclass
class CheckContext:
    env: Environment
    policy: CompiledPolicy
    today: _dt.date = field(default_factory=_dt.date.today)
    #: extra inputs of optional checks (a lock, device facts, model scans ...)
    extra: dict[str, Any] = field(default_factory=dict)
