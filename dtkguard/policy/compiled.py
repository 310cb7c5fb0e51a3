"""The compiled policy: plain dataclasses the rules, the guard and the pip hook read.

Loading a TOML policy (pydantic, tomlkit) happens once; the result is cached as JSON so that
`check` and the pip hook never import pydantic or tomlkit.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import asdict, dataclass, field

from dtkguard.findings import Severity

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    import datetime as _dt
    from typing import Any

FP8_ACTIONS = ("deny", "warn", "allow")
#: how an fp8 action maps onto a finding severity (allow: no finding)
FP8_SEVERITY = {"deny": Severity.HIGH, "warn": Severity.MEDIUM}


_SEPARATORS = re.compile(r"[-_.]+")


def canonical(name: str) -> str:
    """PEP 503 normalised name: ``Flash_Attn`` -> ``flash-attn``."""
    return _SEPARATORS.sub("-", name.strip()).lower()


@dataclass(frozen=True)
class DenyRule:
    """Packages matching ``pattern`` (fnmatch on the canonical name) must never be installed."""

    pattern: str
    reason: str
    severity: str = "critical"
    #: when true, a build carrying a DAS/DTK label is allowed (e.g. xformers+das...)
    vendor_builds_ok: bool = False

    def matches(self, key: str) -> bool:
        """``key`` is a canonical name."""
        return fnmatch.fnmatchcase(key, self.pattern)


@dataclass(frozen=True)
class PolicyException:
    """A waiver of one rule for one package (pattern), with a reason and an expiry date."""

    rule: str
    package: str
    reason: str
    expires: str  # ISO date

    @property
    def expiry(self) -> _dt.date:
        import datetime as _dt

        return _dt.date.fromisoformat(self.expires)

    def covers(self, rule: str, subject: str) -> bool:
        """``package`` matches a package name (normalised) or a path (a model folder)."""
        from dtkguard.decision import exception_covers

        return exception_covers(asdict(self), rule, subject)

    def active(self, today: _dt.date) -> bool:
        """Unexpired on ``today`` (the same test the pip hook applies)."""
        from dtkguard.decision import exception_active

        return exception_active(asdict(self), today.isoformat())


@dataclass(frozen=True)
class Fp8Rule:
    """What to do with FP8/FP4 weights, FP8 KV cache and FP8 serving flags, optionally per card."""

    weights: str = "deny"
    kv_cache: str = "deny"
    serving: str = "deny"
    #: card series (as hy-smi prints it, upper case) -> action for all three kinds
    cards: dict[str, str] = field(default_factory=dict)
    #: ``exec`` when the served model cannot be found: ``warn`` (start, say so) or ``deny``
    unresolved_model: str = "warn"

    def action(self, kind: str, card: str | None = None) -> str:
        """``kind`` is ``weights``, ``kv_cache`` or ``serving``."""
        if card:
            key = card.strip().upper().replace("-", "_")
            if key in self.cards:
                return self.cards[key]
        return getattr(self, kind)

    def severity(self, kind: str, card: str | None = None) -> Severity | None:
        """The severity of a finding of ``kind``; None when the policy allows it."""
        return FP8_SEVERITY.get(self.action(kind, card))


def series_key(series: str) -> str:
    """``k100-ai`` -> ``K100_AI``: card series as policies and hy-smi facts compare them."""
    return re.sub(r"[\s-]+", "_", series.strip()).upper()


@dataclass(frozen=True)
class SupportRow:
    """The oldest driver and DTK release that support a card series (a published table)."""

    series: str
    driver: str | None = None
    dtk: str | None = None
    source: str = ""


@dataclass(frozen=True)
class StackRule:
    """What the stack below Python must satisfy: the support table and which series not to mix."""

    support: tuple[SupportRow, ...] = ()
    #: groups of card series no two of which may share a node (``*``: any series)
    no_mix: tuple[tuple[str, ...], ...] = ()

    def row(self, series: str) -> SupportRow | None:
        key = series_key(series)
        return next((r for r in self.support if r.series == key), None)

    def clash(self, a: str, b: str) -> bool:
        """True when series ``a`` and ``b`` (different) must not share a node."""
        a, b = series_key(a), series_key(b)
        if a == b:
            return False
        return any(
            ("*" in group or a in group) and ("*" in group or b in group) for group in self.no_mix
        )


@dataclass(frozen=True)
class Target:
    """The image a policy describes, for locking: Python version and platform tags."""

    python: str = "3.10"
    platforms: tuple[str, ...] = ("manylinux_2_28_x86_64",)
    implementation: str = "cp"


@dataclass(frozen=True)
class CompiledPolicy:
    """A validated, flattened policy (``extends`` already merged)."""

    name: str
    description: str = ""
    dtk: str | None = None
    #: other DTK releases or series (``25.04`` or ``25.04.1``) allowed beside ``dtk``
    dtk_allow: tuple[str, ...] = ()
    target: Target = field(default_factory=Target)
    find_links: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()
    vendor: dict[str, str] = field(default_factory=dict)
    deny: tuple[DenyRule, ...] = ()
    fp8: Fp8Rule = field(default_factory=Fp8Rule)
    exceptions: tuple[PolicyException, ...] = ()
    drift_extra_severity: str = "medium"
    stack: StackRule = field(default_factory=StackRule)
    #: start-up files (``.pth``, sitecustomize) a dist may ship: ``[dist:]fnmatch-pattern``
    startup_allow: tuple[str, ...] = ()
    #: ``[guard] on-import``: the import tripwire warns, raises ImportError, or is off
    on_import: str = "warn"
    #: the files this policy was read from, first the named one, then what it extends
    files: tuple[str, ...] = ()

    def vendor_build(self, name: str) -> str | None:
        return self.vendor.get(canonical(name))

    def deny_rule(self, name: str) -> DenyRule | None:
        key = canonical(name)
        return next((rule for rule in self.deny if rule.matches(key)), None)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def decision_json(self) -> dict[str, Any]:
        """``to_json()``, computed once: what `dtkguard.decision` reads."""
        cached = self.__dict__.get("_decision_json")
        if cached is None:
            cached = self.to_json()
            object.__setattr__(self, "_decision_json", cached)
        return cached

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CompiledPolicy:
        data = dict(data)
        data["target"] = Target(
            **{
                **data.get("target", {}),
                "platforms": tuple(data.get("target", {}).get("platforms", Target.platforms)),
            }
        )
        data["deny"] = tuple(DenyRule(**d) for d in data.get("deny", ()))
        data["fp8"] = Fp8Rule(**data.get("fp8", {}))
        data["exceptions"] = tuple(PolicyException(**e) for e in data.get("exceptions", ()))
        stack = data.get("stack", {})
        data["stack"] = StackRule(
            tuple(SupportRow(**r) for r in stack.get("support", ())),
            tuple(tuple(g) for g in stack.get("no_mix", ())),
        )
        for key in ("dtk_allow", "find_links", "indexes", "files", "startup_allow"):
            data[key] = tuple(data.get(key, ()))
        return cls(**data)
