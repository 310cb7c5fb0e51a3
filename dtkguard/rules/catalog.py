"""Every rule id dtkguard reports, with its default severity, family and help text.

Each rule module declares the rules it reports once, as a module-level ``RULES`` tuple of
`RuleInfo`; this module collects them through `FAMILIES` (the one table of check families),
with the rules the decision core reports while an installer runs (family ``guard``) and the
policy's housekeeping (``policy``, reported by `dtkguard.rules.engine`). SARIF rule
descriptors, `policy explain`, JUnit test cases and the validation of policy exceptions all
read it. Third-party checks add dotted ids (``acme.no-foo``).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from dtkguard.findings import Severity
from dtkguard.rules.rule_info import RuleInfo

#: family -> the module that declares its ``RULES`` and holds its ``check``: the one table a new
#: family is registered in (`dtkguard.rules.engine` runs them)
FAMILIES: dict[str, str] = {
    "vendor": "dtkguard.rules.vendor",
    "deny": "dtkguard.rules.deny",
    "dtk": "dtkguard.rules.dtk",
    "torch-build": "dtkguard.rules.torch_build",
    "override": "dtkguard.rules.override",
    "baseline": "dtkguard.rules.baseline",
    "store": "dtkguard.rules.guard_store",
    "drift": "dtkguard.rules.drift",
    "files": "dtkguard.rules.files",
    "fp8": "dtkguard.rules.fp8",
    "stack": "dtkguard.rules.stack",
    "binary": "dtkguard.rules.binary",
}

#: what the decision core (`dtkguard.decision`) refuses while pip or uv installs
GUARD_RULES = (
    RuleInfo(
        "file-conflict",
        Severity.CRITICAL,
        "A distribution would overwrite files of a vendor build",
        "The wheel adds or changes files inside an installed vendor build's import packages "
        "(torch/version.py, torch/version/__init__.py, torch/version.*.so, an .opt-1.pyc, "
        "directly or through NAME.data/), or plants a dist-info of a vendor project; or a "
        "removal would delete vendor files. Either changes what `import torch` loads. The pip "
        "hook refuses it.",
        family="guard",
    ),
    RuleInfo(
        "guard-tamper",
        Severity.CRITICAL,
        "A distribution would overwrite the guard",
        "The wheel (as files, .data/scripts or generated console scripts) or a removal would "
        "change the protected set: the guard's own files and byte code, pip's own files, "
        "bin/python*, bin/pip*, bin/activate*, bin/dtkpip or the uv shim; or it is a pip the "
        "hook does not support. The pip hook refuses it.",
        family="guard",
    ),
    RuleInfo(
        "startup-code",
        Severity.CRITICAL,
        "A distribution would add code run at every interpreter start",
        "The wheel ships a .pth file or a sitecustomize/usercustomize module, which run "
        "before anything else and can disable the guard. Only what the policy's [guard] "
        "startup-allow list names (dist:file) may be installed; what setuptools writes "
        "for the dist that ships it is allowed by content.",
        family="guard",
    ),
)

#: what `dtkguard report node` (`dtkguard.fleet.node`) says of a container it did not audit
NODE_RULES = (
    RuleInfo(
        "container-skipped",
        Severity.INFO,
        "A container with nothing to audit",
        "The container holds no Python environment (no installed distribution: a pause "
        "container, an nginx or Go sidecar), or it exited while the node was audited. It is "
        "listed and counted in the node report; it does not fail the node.",
        family="node",
    ),
    RuleInfo(
        "container-unaudited",
        Severity.HIGH,
        "A container that could not be audited",
        "The container's processes or root could not be read (permission: the auditor needs "
        "hostPID and SYS_PTRACE), or its audit failed while it ran. The node fails: what runs "
        "there was not checked.",
        family="node",
    ),
)


EXCEPTION_EXPIRED = RuleInfo(
    "exception-expired",
    Severity.MEDIUM,
    "Policy exception expired",
    "An exception in the policy is past its expiry date and no longer applies.",
    family="policy",
)

EXCEPTION_UNUSED = RuleInfo(
    "exception-unused",
    Severity.LOW,
    "Policy exception unused",
    "An exception in the policy matched no finding; remove it.",
    family="policy",
)

#: what `dtkguard.rules.engine.apply_exceptions` reports about the policy's exceptions themselves
HOUSEKEEPING = (EXCEPTION_EXPIRED, EXCEPTION_UNUSED)


def rules_of(families: Iterable[str]) -> list[RuleInfo]:
    """The rules the check ``families`` report, as their modules declare them."""
    import importlib

    return [r for f in families for r in importlib.import_module(FAMILIES[f]).RULES]


def checked_by(families: Iterable[str]) -> list[str]:
    """The rule ids a run of ``families`` evaluates (a report lists them as checked): theirs and
    the policy's housekeeping."""
    return [r.id for r in (*rules_of(families), *HOUSEKEEPING)]


@lru_cache(maxsize=1)
def all_rules() -> dict[str, RuleInfo]:
    """id -> `RuleInfo` of every built-in rule."""
    return {r.id: r for r in (*rules_of(FAMILIES), *GUARD_RULES, *NODE_RULES, *HOUSEKEEPING)}


def __getattr__(name: str) -> dict[str, RuleInfo]:
    if name == "RULES":  # built on first use: it imports every rule module
        return all_rules()
    raise AttributeError(name)


def is_known(rule_id: str) -> bool:
    """Built-in ids, or dotted ids of third-party checks."""
    return rule_id in all_rules() or "." in rule_id


def info(rule_id: str) -> RuleInfo:
    """The catalog entry of ``rule_id``; a generic one for third-party rules."""
    return all_rules().get(rule_id) or RuleInfo(rule_id, Severity.MEDIUM, rule_id, rule_id)
