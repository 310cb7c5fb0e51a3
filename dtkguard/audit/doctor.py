"""`dtkguard doctor`: the seeds' "verify the environment" step as one report.

Cards, DTK and HIP, the torch build, the vendor builds and their DTK, FP8 capability, and every
problem the environment and stack rules find, most severe first. The facts go into the report's
``facts["doctor"]`` so that every format (the screen, json) shows the same thing.
"""

from __future__ import annotations

from collections import Counter

from dtkguard.audit.request import Request, evaluate, open_request, stack_inputs
from dtkguard.env.stack_facts import StackFacts
from dtkguard.policy.labels import label_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from dtkguard.env.environment import Environment
    from dtkguard.policy.compiled import CompiledPolicy
    from dtkguard.report import Report

#: the check families doctor runs (no drift: doctor takes no lock)
FAMILIES = ("vendor", "deny", "dtk", "torch-build", "override", "stack", "binary")


def vendor_summary(env: Environment, policy: CompiledPolicy) -> dict[str, Any]:
    """How many of the policy's vendor builds are installed as pinned, and for which DTK."""
    pinned = exact = 0
    releases: Counter[str] = Counter()
    for name, version in policy.vendor.items():
        dist = env.get(name)
        if dist is None:
            continue
        pinned += 1
        exact += dist.version == version
    for dist in env:
        label = label_of(dist.version)
        if label is not None and label.dtk is not None:
            releases[str(label.dtk)] += 1
    return {
        "policy": len(policy.vendor),
        "installed": pinned,
        "exact": exact,
        "dtk": dict(releases.most_common()),
    }


def fp8_summary(facts: StackFacts, policy: CompiledPolicy) -> list[dict[str, str]]:
    """The policy's FP8 action for weights, KV cache and serving on each card series present."""
    series: list[str | None] = [*sorted({c.series for c in facts.cards or [] if c.series})]
    series = series or [None]
    return [
        {
            "series": s or "(cards unknown)",
            "weights": policy.fp8.action("weights", s),
            "kv_cache": policy.fp8.action("kv_cache", s),
            "serving": policy.fp8.action("serving", s),
        }
        for s in series
    ]


def runtime_summary(env: Environment, policy: CompiledPolicy) -> dict[str, dict[str, Any]]:
    """Per installed vendor build: which GPU runtime its binaries link (``dtk``, ``cuda``,
    ``rocm``, ``none``, or ``mixed`` when they disagree), counted, with the GPU libraries."""
    from dtkguard.decision import gpu_runtime, library_matches
    from dtkguard.env.binaries import env_binaries

    # decision.py is not typed yet: its two functions, typed as this function calls them
    runtime_of: Callable[[dict[str, Any], tuple[str, ...]], str | None] = gpu_runtime
    matches: Callable[[str, list[str]], bool] = library_matches
    rules = policy.decision_json()
    patterns = [p for ps in rules["binary"].values() for p in ps]
    out: dict[str, dict[str, Any]] = {}
    for binary in env_binaries(env):
        key = _canonical(binary.dist)
        if key not in policy.vendor or binary.linkage is None:
            continue
        entry = out.setdefault(key, {"binaries": 0, "runtimes": Counter(), "libraries": set()})
        entry["binaries"] += 1
        needed = binary.linkage.needed
        entry["runtimes"][runtime_of(rules, needed) or "none"] += 1
        entry["libraries"].update(n for n in needed if matches(n, patterns))
    return {k: _runtime_row(v) for k, v in sorted(out.items())}


def _canonical(name: str) -> str:
    from dtkguard.decision import canonical

    return canonical(name)


def _runtime_row(entry: dict[str, Any]) -> dict[str, Any]:
    gpu = [r for r in entry["runtimes"] if r != "none"]
    runtime = gpu[0] if len(gpu) == 1 else ("mixed" if gpu else "none")
    return {
        "runtime": runtime,
        "binaries": entry["binaries"],
        "by_runtime": dict(entry["runtimes"].most_common()),
        "libraries": sorted(entry["libraries"]),
    }


def doctor_facts(env: Environment, policy: CompiledPolicy, facts: StackFacts) -> dict[str, Any]:
    return {
        "stack": facts.to_json(),
        "vendor": vendor_summary(env, policy),
        "runtime": runtime_summary(env, policy),
        "fp8": fp8_summary(facts, policy),
        "dists": len(env.dists),
    }


def doctor(request: Request) -> Report:
    """The `Report` of verifying ``request``'s target: hy-smi runs on a live target (not on an
    image root), which is expected to reach DCUs."""
    from dtkguard.rules.catalog import checked_by

    opened = open_request(request)
    env, policy = opened.env, opened.policy
    live = env.target.live
    extra = stack_inputs(
        env,
        hy_smi_output=request.hy_smi_output,
        expect_devices=live or request.expect_devices,  # doctor is asked of a DCU target
        run_hy_smi=live,
    )
    facts = {"doctor": doctor_facts(env, policy, extra["stack"])}
    return evaluate(opened, "doctor", FAMILIES, extra, rules=checked_by(FAMILIES), facts=facts)
