"""An audit of one target: its identity, device facts, drift, files, FP8, as one `Report`.

`dtkguard audit` parses its options into an `AuditRequest` and calls `audit`; everything between
(opening the target, policy and lock, facts, inputs of the rules, which rules ran) is here.
"""

from __future__ import annotations

import sys

from dtkguard.audit.request import Request, evaluate, open_request, stack_inputs
from dtkguard.lightclass import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from dtkguard.audit.request import Opened
    from dtkguard.audit.verify import Running
    from dtkguard.modelscan.scan import ModelScan
    from dtkguard.modelscan.serving import ServingProcess
    from dtkguard.policy.compiled import CompiledPolicy
    from dtkguard.report import Report
    from dtkguard.report.schema import JSONObject


@record
class AuditRequest(Request):
    """What to audit besides the installed set (the options of ``dtkguard audit``)."""

    verify_files: bool = False
    workers: int | None = None
    models: list[str] = field(default_factory=list)
    processes: bool = False
    inventory: bool = False  # list every component (an SBOM)


def audit(request: AuditRequest) -> Report:
    """The `Report` of auditing ``request``'s target under its policy."""
    from dtkguard.errors import InputError
    from dtkguard.rules.engine import CHECKS

    if request.workers is not None and request.workers < 1:
        raise InputError("must be at least 1", field="--workers")
    opened = open_request(request)
    env = opened.env
    verifying = _start_verify(opened, request)
    extra, facts = _inputs(opened, request, verifying)
    inventory = []
    if request.inventory:
        from dtkguard.audit.inventory import components

        inventory = components(env.dists)
    return evaluate(
        opened,
        "audit",
        CHECKS,
        extra,
        target=env.target.to_json(complete=True),
        rules=rules_run(request),
        facts=facts,
        inventory=inventory,
    )


def rules_run(request: AuditRequest) -> list[str]:
    """The rule ids an audit of ``request`` evaluates (a report lists them as checked): the
    environment's and the stack's families, ``drift`` with a lock, ``files`` when verifying,
    ``fp8`` with models or processes."""
    from dtkguard.rules.catalog import checked_by
    from dtkguard.rules.engine import ENVIRONMENT_CHECKS

    families = [*ENVIRONMENT_CHECKS, "stack"]
    if request.lock:
        families.append("drift")
    if request.verify_files:
        families.append("files")
    if request.models or request.processes:
        families.append("fp8")
    return checked_by(families)


def _start_verify(opened: Opened, request: AuditRequest) -> Running | None:
    """``--verify-files`` started on a thread of its own: the files hash (hashlib and the
    reads release the GIL) while the audit gathers its other inputs and loads its checks."""
    if not request.verify_files:
        return None
    from dtkguard.audit.verify import Running

    env = opened.env
    return Running(env.dists, env.root, workers=request.workers, progress_stream=sys.stderr)


def _load_checks(families: Iterable[str]) -> None:
    """Import the checks the audit will run (while the files hash)."""
    from dtkguard.rules.engine import load_check

    for family in families:
        load_check(family)


def _inputs(
    opened: Opened, request: AuditRequest, verifying: Running | None = None
) -> tuple[dict[str, Any], JSONObject]:
    """(``ctx.extra`` for the rules, the report's facts); ``verifying``: `_start_verify`'s."""
    from dtkguard.audit.facts import device_facts, process_environ

    env, policy = opened.env, opened.policy
    pid = env.target.pid
    live = env.target.live
    extra = stack_inputs(
        env,
        hy_smi_output=request.hy_smi_output,
        expect_devices=request.expect_devices,
        run_hy_smi=live,
    )
    stack = extra["stack"]
    series = [c.series for c in stack.cards or [] if c.series]  # hy-smi already ran, if any
    device = device_facts(env.root, process_environ(pid) if pid else None, live, series)
    device["stack"] = stack.to_json()
    facts: JSONObject = {"dists": len(env.dists), "sites": [env.root.inner(s) for s in env.sites]}
    facts["device"] = extra["device"] = device
    lock = opened.lock
    if lock is not None:
        extra["lock"] = lock
        facts["lock"] = {"path": str(lock.path), "packages": len(list(lock.pins()))}
    if request.verify_files:
        facts["verification"] = None  # its place among the facts; filled below
    if request.models or request.processes:
        extra["fp8"], extra["card"] = fp8_inputs(request, policy, facts)
    if request.verify_files:
        if verifying is None:
            verifying = _start_verify(opened, request)
        assert verifying is not None
        from dtkguard.rules.engine import CHECKS

        _load_checks(CHECKS)
        result = verifying.result()
        extra["verification"] = result
        facts["verification"] = result.summary()
    return extra, facts


def fp8_inputs(
    request: AuditRequest, policy: CompiledPolicy, facts: JSONObject
) -> tuple[list[ModelScan | ServingProcess], str | None]:
    """The scans of ``models`` and ``processes`` and the card that sets their severity."""
    from dtkguard.errors import InputError
    from dtkguard.rules.fp8 import pick_card, problem_lines

    cards = facts["device"].get("cards") or []
    card = pick_card(cards, policy)
    items: list[ModelScan | ServingProcess] = []
    if request.models:
        import os

        from dtkguard.modelscan.scan import scan, unread_paths

        for path in request.models:
            if not os.path.lexists(path):
                raise InputError("no such file or folder", file=path, field="--models")
        scans = scan(request.models)
        unread = [] if request.allow_empty else unread_paths(request.models, scans)
        if unread and not problem_lines(scans):
            from dtkguard.errors import TargetError

            raise TargetError(
                f"nothing to scan at {unread[0]} (--models): no config, index or weight header "
                "could be read (--allow-empty to pass it)"
            )
        items += scans
        facts["models"] = [s.summary() for s in scans]
        facts["model_problems"] = problem_lines(scans)
    if request.processes:
        from dtkguard.modelscan.serving import scan_processes

        procs = scan_processes()
        items += procs
        facts["processes"] = [{"pid": p.pid, "engine": p.command.engine} for p in procs]
    return items, card
