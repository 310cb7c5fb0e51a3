"""`exec`: what a serving command (vllm serve, sglang, ...) would load and ask for, checked for
FP8/FP4 on the card before it is started."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.findings import Finding, Severity


@dataclass
class ServingRequest:
    """The options of ``dtkguard exec``: the command, its environment and working folder."""

    cmd: list[str]
    environ: Mapping[str, str]
    cwd: str
    policy: str | None = None
    card: str | None = None  # card series (None: read from hy-smi)


@dataclass
class ServingCheck:
    """The findings on a serving command, and why its model could not be checked (if so)."""

    findings: list[Finding]
    problems: list[str] = field(default_factory=list)  # model files that could not be read
    notes: list[str] = field(default_factory=list)  # what the verdict rests on (no weights)
    unresolved: str | None = None  # why the model was not checked; None: it was
    unresolved_action: str = "deny"  # the policy's [fp8] unresolved-model

    @property
    def denied_unresolved(self) -> bool:
        return self.unresolved is not None and self.unresolved_action == "deny"

    def veto(self, threshold: Severity) -> str | None:
        """Why the command must not start (None: it may)."""
        if self.denied_unresolved:
            return "its model could not be checked"
        if any(f.severity >= threshold for f in self.findings):
            return f"findings at or above {threshold.value}"
        return None


def check_serving(request: ServingRequest) -> ServingCheck:
    """Scan the model ``request.cmd`` would serve and judge its flags under the policy."""
    from dtkguard.env.device import read_card_series
    from dtkguard.findings import sort_key
    from dtkguard.modelscan.scan import scan, unread_paths
    from dtkguard.modelscan.serving import ServingProcess, parse_command, resolve_model, unresolved
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known
    from dtkguard.rules.engine import apply_exceptions
    from dtkguard.rules.fp8 import pick_card, problem_lines, serving_findings

    policy = load_policy(request.policy, known_rule=is_known)
    card = pick_card([request.card] if request.card else read_card_series(), policy)
    command = parse_command(request.cmd, request.environ)
    model_path = resolve_model(command.model, request.cwd, request.environ)
    models = scan([model_path]) if model_path else []
    reason = unresolved(command, model_path)
    if reason is None and model_path and unread_paths([model_path], models):
        reason = f"{model_path}: no config, index or weight header could be read"
    proc = ServingProcess(pid=0, command=command, cwd=request.cwd, model_path=model_path)
    findings = sorted(
        apply_exceptions(policy, serving_findings(proc, policy, card, models), housekeeping=False),
        key=sort_key,
    )
    return ServingCheck(
        findings,
        problem_lines(models),
        [n for m in models for n in m.notes],
        reason,
        policy.fp8.unresolved_model,
    )
