"""Policies as the commands load them: exceptions name rules of the rule catalog."""

from __future__ import annotations

from functools import partial

from dtkguard.policy import compile as _compile
from dtkguard.policy import load as _load
from dtkguard.rules.catalog import is_known

load_policy = partial(_load.load_policy, known_rule=is_known)
compile_policy = partial(_compile.compile_policy, known_rule=is_known)
