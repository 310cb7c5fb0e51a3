"""`scan-model`: FP8/FP4 weights, scales and KV caches in model folders and files, as one `Report`
(headers only; never unpickles)."""

from __future__ import annotations

from dtkguard.lightclass import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.modelscan.scan import ModelScan
    from dtkguard.report import Report
    from dtkguard.report.schema import JSONObject


@record
class ModelScanRequest:
    """The options of ``dtkguard scan-model``."""

    paths: list[str] = field(default_factory=list)
    policy: str | None = None
    card: str | None = None  # card series (None: read from hy-smi)
    allow_empty: bool = False  # a path with nothing to read passes
    inventory: bool = False  # list every model (an SBOM)


def scan_models(request: ModelScanRequest) -> Report:
    """The `Report` of scanning ``request.paths``; its warnings are the files that could not be
    read (problems: the command exits 2 on them even without findings)."""
    import os

    from dtkguard.errors import InputError
    from dtkguard.modelscan.scan import scan, unread_paths
    from dtkguard.policy.load import load_policy
    from dtkguard.report import Report
    from dtkguard.rules.catalog import is_known
    from dtkguard.rules.engine import apply_exceptions
    from dtkguard.rules.fp8 import RULES, fp8_findings, pick_card, problem_lines

    for path in request.paths:
        if not os.path.lexists(path):
            raise InputError("no such file or folder", file=path)
    policy = load_policy(request.policy, known_rule=is_known)
    if request.card:
        cards = [request.card]
    else:
        from dtkguard.env.device import read_card_series

        cards = read_card_series()
    card = pick_card(cards, policy)
    scans = scan(request.paths)
    findings = apply_exceptions(policy, fp8_findings(scans, policy, card), housekeeping=False)
    problems = problem_lines(scans)
    if not problems and not request.allow_empty and (unread := unread_paths(request.paths, scans)):
        from dtkguard.errors import TargetError

        raise TargetError(
            f"nothing to scan at {unread[0]}: no config, index or weight header could be read "
            "(a folder of other files, FIFOs or devices; --allow-empty to pass it)"
        )
    facts = {
        "card": card,
        "cards": cards,
        "models": [s.summary() for s in scans],
    }
    return Report(
        findings,
        target={"kind": "models", "paths": list(request.paths)},
        policy=policy.name,
        command="scan-model",
        facts=facts,
        warnings=problems,
        rules=[r.id for r in RULES],
        inventory=_inventory(scans) if request.inventory else [],
    )


def _inventory(scans: list[ModelScan]) -> list[JSONObject]:
    from dtkguard.modelscan.bom import model_items

    return model_items(scans)
