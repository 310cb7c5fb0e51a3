"""Rules ``fp8-weights``, ``fp8-scales``, ``fp4-weights``, ``fp8-kv-cache`` and ``fp8-serving``.

Severities come from the policy's fp8 rule and the card series (``Fp8Rule.severity``): deny on
cards without FP8 (BW1000, K100_AI), warn or allow on BW1100 as the policy says.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Iterator

from dtkguard.findings import Finding, Severity
from dtkguard.modelscan.detect import KIND, detect
from dtkguard.modelscan.scan import ModelScan, scan
from dtkguard.policy.compiled import Fp8Rule
from dtkguard.rules.rule_info import RuleInfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from dtkguard.modelscan.serving import Request, ServingProcess

#: the rules this family reports, with their default severity (collected by
#: `dtkguard.rules.catalog`)
RULES = (
    RuleInfo(
        "fp8-weights",
        Severity.HIGH,
        "FP8 weights on a card without FP8",
        "The model stores FP8 weights. Use the BF16 variant or dequantize.",
        family="fp8",
    ),
    RuleInfo(
        "fp8-scales",
        Severity.HIGH,
        "FP8 scales in the model",
        "The model carries FP8 tensors as scales (e.g. NVFP4 block scales).",
        family="fp8",
    ),
    RuleInfo(
        "fp8-kv-cache",
        Severity.HIGH,
        "FP8 KV cache requested",
        "The model or server asks for an FP8 KV cache.",
        family="fp8",
    ),
    RuleInfo(
        "fp4-weights",
        Severity.HIGH,
        "FP4 weights",
        "The model stores FP4/MX weights.",
        family="fp8",
    ),
    RuleInfo(
        "fp8-activations",
        Severity.HIGH,
        "FP8 activations over integer weights",
        "The model's scheme computes with FP8 activations (W4AFP8, W4A8_AWQ): FP8 matmuls.",
        family="fp8",
    ),
    RuleInfo(
        "fp8-serving",
        Severity.HIGH,
        "Server started with FP8 flags",
        "A serving process asks for FP8 quantization on its command line or environment.",
        family="fp8",
    ),
)
#: a config whose scheme the tensors contradict fails to load on every card, FP8 or not
CONFIG_SEVERITY = {"stale-config": Severity.MEDIUM, "config-mismatch": Severity.MEDIUM}

SERVING_REMEDIATION = (
    "Drop the FP8 requests: serve the BF16 model without --quantization/-q/--quantize fp8 (or "
    "--model-format fp8); use --kv-cache-dtype auto (LMDeploy: --quant-policy 0 or 8); unset "
    "QUANTIZE and KV_CACHE_DTYPE; with vLLM's AITER set VLLM_ROCM_USE_AITER_FP8BMM=0 and "
    "VLLM_ROCM_USE_AITER_FP4BMM=0. FP8 needs a BW1100 card."
)


def _rule(policy: Any) -> Fp8Rule:
    return policy if isinstance(policy, Fp8Rule) else policy.fp8


def pick_card(cards: Iterable[str], policy: Any, kind: str = "weights") -> str | None:
    """The card that decides severity: with mixed cards, the most restrictive one."""
    rule = _rule(policy)
    cards = list(dict.fromkeys(cards))
    if len(cards) <= 1:
        return cards[0] if cards else None

    def rank(card: str) -> int:
        severity = rule.severity(kind, card)
        return severity.rank if severity else -1

    return max(cards, key=rank)


def model_findings(
    model: ModelScan, policy: Any, card: str | None = None, extra: dict[str, Any] | None = None
) -> Iterator[Finding]:
    """Findings for one scanned model."""
    rule = _rule(policy)
    for det in detect(model):
        kind = KIND[det.kind]
        severity: Severity | None = CONFIG_SEVERITY.get(det.kind) or rule.severity(kind, card)
        if severity is None:
            continue
        if det.weak:
            severity = min(severity, Severity.LOW)
        evidence = {
            "summary": det.evidence,
            "detection": det.kind,
            "card": card,
            "action": rule.action(kind, card),
            **det.facts,
            **(extra or {}),
        }
        yield Finding(
            rule=det.rule,
            severity=severity,
            subject=model.path,
            message=det.message,
            remediation=det.remediation,
            location=model.path,
            evidence=evidence,
        )


def serving_findings(
    proc: ServingProcess,
    policy: Any,
    card: str | None = None,
    models: list[ModelScan] | None = None,
) -> Iterator[Finding]:
    """``fp8-serving`` for a process (or a command about to run), then its model's findings.

    ``models``: the scans of ``proc.model_path`` when the caller already has them.
    """
    rule = _rule(policy)
    cmd = proc.command
    who = f"pid {proc.pid}" if proc.pid else "command"
    engine = cmd.engine or "process"
    severity = rule.severity("serving", card)
    if models is None and proc.model_path:
        models = scan([proc.model_path])
    requests = applicable(cmd.requests, models)
    if requests and severity is not None:
        asks = ", ".join(r.text for r in requests)
        yield Finding(
            rule="fp8-serving",
            severity=severity,
            subject=f"{who} ({engine})" if proc.pid else shlex.join(cmd.argv[:6]),
            message=f"{engine} {who} asks for FP8: {asks}",
            remediation=SERVING_REMEDIATION,
            location=proc.model_path or cmd.model,
            evidence={
                "summary": asks,
                "pid": proc.pid or None,
                "engine": cmd.engine,
                "argv": cmd.argv,
                "model": cmd.model,
                "card": card,
                "action": rule.action("serving", card),
                "requests": [
                    {"kind": r.kind, "source": r.source, "text": r.text} for r in requests
                ],
            },
        )
    if proc.model_path:
        extra = {"served_by": {"pid": proc.pid or None, "engine": cmd.engine}}
        for model in models or ():
            yield from model_findings(model, policy, card, extra)


def applicable(requests: list[Request], models: list[ModelScan] | None) -> list[Request]:
    """The requests that act on the served model; an unknown model keeps them all."""
    if not models:
        return list(requests)
    return [r for r in requests if r.scope != "mla" or any(m.mla for m in models)]


def fp8_findings(
    scans: Iterable[ModelScan | ServingProcess], policy: Any, card: str | None = None
) -> Iterator[Finding]:
    """Findings for scanned models and serving processes (``scan()``/``scan_processes()``)."""
    for item in scans:
        if isinstance(item, ModelScan):  # not `serving`'s type: scan-model never imports it
            yield from model_findings(item, policy, card)
        else:
            yield from serving_findings(item, policy, card)


def check(ctx: Any) -> Iterator[Finding]:
    """The ``fp8`` check family: the scans `audit --models/--processes` put in ``ctx.extra``."""
    return fp8_findings(ctx.extra.get("fp8", ()), ctx.policy, ctx.extra.get("card"))


def problem_lines(scans: Iterable[ModelScan]) -> list[str]:
    """One line per unreadable or hostile file: ``PATH: what is wrong``."""
    return [f"{path}: {msg}" for s in scans for path, msg in s.problems]
