"""`exec`: what a serving command (vllm serve, sglang, ...) would load and ask for, checked for
FP8/FP4 on the card before it is started."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.findings import Finding, Severity
    from dtkguard.policy.compiled import CompiledPolicy


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
    """Scan the model ``request.cmd`` would serve and judge its flags under the policy.

    A shell given a script (``sh -c "vllm serve ..."``, ``bash -lc``) is judged by the
    commands of its script, each as if it were ``request.cmd``.
    """
    from dtkguard.env.device import read_card_series
    from dtkguard.modelscan.shell import ShellError, expand
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known
    from dtkguard.rules.fp8 import pick_card

    policy = load_policy(request.policy, known_rule=is_known)
    card = pick_card([request.card] if request.card else read_card_series(), policy)
    try:
        inner = expand(list(request.cmd), request.environ, request.cwd)
    except ShellError as exc:
        return ServingCheck([], unresolved=f"{exc}", unresolved_action=policy.fp8.unresolved_model)
    checks = [_check_one(c.argv, c.environ, c.cwd, policy, card) for c in inner]
    merged = ServingCheck([], unresolved_action=policy.fp8.unresolved_model)
    for check in checks:
        merged.findings += check.findings
        merged.problems += check.problems
        merged.notes += check.notes
        merged.unresolved = merged.unresolved or check.unresolved
    return merged


def _check_one(
    argv: list[str],
    environ: Mapping[str, str],
    cwd: str,
    policy: CompiledPolicy,
    card: str | None,
) -> ServingCheck:
    """The findings on one command (not a shell script)."""
    from dtkguard.findings import sort_key
    from dtkguard.modelscan.scan import scan, unread_paths
    from dtkguard.modelscan.serving import ServingProcess, parse_command, resolve_model, unresolved
    from dtkguard.rules.engine import apply_exceptions
    from dtkguard.rules.fp8 import problem_lines, serving_findings

    command = parse_command(argv, environ, cwd=cwd)
    model_path = resolve_model(command.model, cwd, environ)
    models = scan([model_path]) if model_path else []
    reason = unresolved(command, model_path)
    if reason is None and model_path and unread_paths([model_path], models):
        reason = f"{model_path}: no config, index or weight header could be read"
    proc = ServingProcess(pid=0, command=command, cwd=cwd, model_path=model_path)
    findings = sorted(
        apply_exceptions(policy, serving_findings(proc, policy, card, models), housekeeping=False),
        key=sort_key,
    )
    return ServingCheck(
        findings,
        command.problems + problem_lines(models),
        [n for m in models for n in m.notes],
        reason,
        policy.fp8.unresolved_model,
    )
