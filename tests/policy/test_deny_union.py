"""`CompiledPolicy.deny_rule` tries the deny patterns one by one only for a name one of them
may match (one whose literal head starts it): it must answer exactly as trying each pattern does."""

from __future__ import annotations

import fnmatch
from dataclasses import replace

from dtkguard.policy.compiled import CompiledPolicy, DenyRule
from dtkguard.policy.load import load_policy
from dtkguard.rules.catalog import is_known

PATTERNS = (
    "nvidia-*-cu12", "torch", "cupy-cuda*", "a?c", "x[0-9]*y*z", "*-gpu", "[!q]ueue", "b[c", "",
    "*",
)  # fmt: skip
NAMES = (
    "nvidia-cublas-cu12", "nvidia-cublas-cu11", "torch", "torchvision", "cupy-cuda12x", "abc",
    "ab", "x1yz", "x1y2z3", "xay", "onnxruntime-gpu", "gpu", "queue", "aueue", "", "-", "b[c",
    "b", "bc", "nvidia-",
)  # fmt: skip


def _one_by_one(policy: CompiledPolicy, key: str) -> DenyRule | None:
    return next((r for r in policy.deny if fnmatch.fnmatchcase(key, r.pattern)), None)


def test_the_union_answers_as_each_pattern_does() -> None:
    base = load_policy(None, known_rule=is_known)
    for n in range(len(PATTERNS) + 1):
        rules = tuple(DenyRule(p, f"reason {p}") for p in PATTERNS[:n])
        policy = replace(base, deny=rules)
        for name in NAMES:
            assert policy.deny_rule(name) == _one_by_one(policy, name), (n, name)


def test_the_bundled_policy_denies_as_before() -> None:
    policy = load_policy(None, known_rule=is_known)
    assert policy.deny, "the bundled policy denies CUDA builds"
    names = [r.pattern.replace("*", "x").replace("?", "y") for r in policy.deny]
    for name in [*names, "torch", "vllm", "numpy", "nvidia-cudnn-cu12", "xformers"]:
        assert policy.deny_rule(name) == _one_by_one(policy, name), name
    assert any(policy.deny_rule(n) is not None for n in names)
