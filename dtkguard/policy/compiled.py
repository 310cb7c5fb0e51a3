"""The compiled policy: plain dataclasses the rules, the guard and the pip hook read.

Loading a TOML policy (pydantic, tomlkit) happens once; the result is cached as JSON so that
`check` and the pip hook never import pydantic or tomlkit.
"""

from __future__ import annotations

from dtkguard.decision import canonical, literal_head
from dtkguard.lightclass import MISSING, asdict, field, fields, record

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    import datetime as _dt
    from typing import Any

    from dtkguard.findings import Severity

FP8_ACTIONS = ("deny", "warn", "allow")
#: how an fp8 action maps onto a finding severity (allow: no finding), by the severity's
#: value: `findings` (its `enum`) is imported by what makes findings, not by every policy reader
FP8_SEVERITY = {"deny": "high", "warn": "medium"}


@record(frozen=True)
class DenyRule:
    """Packages matching ``pattern`` (fnmatch on the canonical name) must never be installed."""

    pattern: str
    reason: str
    severity: str = "critical"
    #: when true, a build carrying a DAS/DTK label is allowed (e.g. xformers+das...)
    vendor_builds_ok: bool = False

    def matches(self, key: str) -> bool:
        """``key`` is a canonical name."""
        import fnmatch

        return fnmatch.fnmatchcase(key, self.pattern)


@record(frozen=True)
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


@record(frozen=True)
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
        action: str = getattr(self, kind)
        return action

    def severity(self, kind: str, card: str | None = None) -> Severity | None:
        """The severity of a finding of ``kind``; None when the policy allows it."""
        from dtkguard.findings import Severity

        value = FP8_SEVERITY.get(self.action(kind, card))
        return None if value is None else Severity(value)


def series_key(series: str) -> str:
    """``k100-ai`` -> ``K100_AI``: card series as policies and hy-smi facts compare them."""
    import re

    return re.sub(r"[\s-]+", "_", series.strip()).upper()


@record(frozen=True)
class SupportRow:
    """The oldest driver and DTK release that support a card series (a published table)."""

    series: str
    driver: str | None = None
    dtk: str | None = None
    source: str = ""


@record(frozen=True)
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


#: the bundled policy's ``[binary]`` lists (policies/dtk-25.04.1.toml states them too)
CUDA_LIBRARIES = (
    "libcuda.so*", "libcudart.so*", "libcublas.so*", "libcublasLt.so*", "libcudnn*.so*",
    "libnvrtc*.so*", "libnccl.so*", "libcufft.so*", "libcufftw.so*", "libcurand.so*",
    "libcusolver.so*", "libcusolverMg.so*", "libcusparse.so*", "libcusparseLt.so*",
    "libnvToolsExt.so*", "libnvJitLink.so*", "libcupti.so*", "libnvjpeg.so*",
    "libnvidia-ml.so*", "libcufile.so*", "libnvshmem*.so*", "libnpp*.so*", "libnvblas.so*",
    "libnvvm.so*", "libcutensor*.so*", "libnvinfer*.so*",
)  # fmt: skip
DTK_RUNTIME = ("libgalaxyhip.so*",)
HIP_RUNTIMES = ("libamdhip64.so*", "libhip_hcc.so*")


@record(frozen=True)
class BinaryRule:
    """What native code may link: ``[binary]`` as library name patterns (fnmatch)."""

    deny_needed: tuple[str, ...] = CUDA_LIBRARIES
    gpu_runtime: tuple[str, ...] = DTK_RUNTIME
    hip_runtime: tuple[str, ...] = HIP_RUNTIMES


@record(frozen=True)
class Target:
    """The image a policy describes, for locking: Python version and platform tags."""

    python: str = "3.10"
    platforms: tuple[str, ...] = ("manylinux_2_28_x86_64",)
    implementation: str = "cp"


@record(frozen=True)
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
    #: ``[binary]``: the libraries native code may not need, and the GPU runtimes
    binary: BinaryRule = field(default_factory=BinaryRule)
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
        if not self._any_denied(key):
            return None
        return next((rule for rule in self.deny if rule.matches(key)), None)

    def _any_denied(self, key: str) -> bool:
        """Can any deny pattern match ``key``? Only one whose literal head (what comes before
        its first ``*``, ``?`` or ``[``) starts it: a name no head starts is not tried one by
        one, and nothing is compiled (a regex of them all cost a check more than it saved)."""
        heads = self.__dict__.get("_deny_heads")
        if heads is None:
            heads = tuple(literal_head(r.pattern) for r in self.deny)
            object.__setattr__(self, "_deny_heads", heads)
        return key.startswith(heads)

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
    def from_json(cls, data: Any) -> CompiledPolicy:
        """The inverse of `to_json`; `TypeError` or `ValueError` for anything mistyped.

        The JSON comes from a cache or a hook file that another process may have written, so
        every value is checked: a wrong type is an error, never a policy with ``None`` in it.
        """
        data = _fields(data, "policy", _names(cls))
        target = _fields(
            data.get("target", {}), "target", {"python", "platforms", "implementation"}
        )
        fp8 = _fp8_from_json(data.get("fp8", {}))
        deny = _deny_from_json(data.get("deny", []))
        exceptions = _exceptions_from_json(data.get("exceptions", []))
        stack = _stack_from_json(data.get("stack", {}))
        binary = _binary_from_json(data.get("binary", {}))
        dtk = data.get("dtk")
        return cls(
            name=_str(data.get("name"), "name"),
            description=_str(data.get("description", ""), "description"),
            dtk=None if dtk is None else _str(dtk, "dtk"),
            dtk_allow=_strs(data.get("dtk_allow", []), "dtk_allow"),
            target=_target_from_json(target),
            find_links=_strs(data.get("find_links", []), "find_links"),
            indexes=_strs(data.get("indexes", []), "indexes"),
            vendor=_str_map(data.get("vendor", {}), "vendor"),
            deny=deny,
            fp8=fp8,
            exceptions=exceptions,
            drift_extra_severity=_choice(
                data.get("drift_extra_severity", "medium"), _SEVERITIES, "drift_extra_severity"
            ),
            files=_strs(data.get("files", []), "files"),
            stack=stack,
            binary=binary,
            on_import=_choice(data.get("on_import", "warn"), _ON_IMPORT, "on_import"),
            **_plain_fields(cls, data),
        )


def _target_from_json(target: dict[str, Any]) -> Target:
    """``[target]``, its keys already checked; a missing value is the default."""
    return Target(
        _str(target.get("python", Target.python), "target.python"),
        _strs(target.get("platforms", list(Target.platforms)), "target.platforms"),
        _str(target.get("implementation", Target.implementation), "target.implementation"),
    )


def _fp8_from_json(value: Any) -> Fp8Rule:
    """``[fp8]``: an action per kind and per card series."""
    fp8 = _fields(value, "fp8", _names(Fp8Rule))
    cards = _str_map(fp8.get("cards", {}), "fp8.cards")
    actions = {k: _choice(v, FP8_ACTIONS, f"fp8.{k}") for k, v in fp8.items() if k != "cards"}
    for action in cards.values():
        _choice(action, FP8_ACTIONS, "fp8.cards")
    return Fp8Rule(**actions, cards=cards)


def _deny_from_json(value: Any) -> tuple[DenyRule, ...]:
    """``[[deny]]``: pattern, reason, severity and whether vendor builds are allowed."""
    deny = []
    for d in _list(value, "deny"):
        d = _fields(d, "deny", {"pattern", "reason", "severity", "vendor_builds_ok"})
        _choice(d.get("severity", "critical"), _SEVERITIES, "deny.severity")
        if not isinstance(d.get("vendor_builds_ok", False), bool):
            raise TypeError("deny.vendor_builds_ok: not a boolean")
        deny.append(
            DenyRule(
                _str(d.get("pattern"), "deny.pattern"),
                _str(d.get("reason"), "deny.reason"),
                d.get("severity", "critical"),
                d.get("vendor_builds_ok", False),
            )
        )
    return tuple(deny)


def _exceptions_from_json(value: Any) -> tuple[PolicyException, ...]:
    """``[[exceptions]]``: four strings each, the expiry a date that parses."""
    exceptions = []
    for e in _list(value, "exceptions"):
        e = _fields(e, "exceptions", {"rule", "package", "reason", "expires"})
        exc = PolicyException(
            *(_str(e.get(k), f"exceptions.{k}") for k in ("rule", "package", "reason", "expires"))
        )
        exc.expiry  # noqa: B018 - a ValueError for a date that does not parse
        exceptions.append(exc)
    return tuple(exceptions)


def _stack_from_json(value: Any) -> StackRule:
    """``[stack]``: the support table (driver and dtk optional) and the no-mix groups."""
    stack = _fields(value, "stack", {"support", "no_mix"})
    support = []
    for r in _list(stack.get("support", []), "stack.support"):
        r = _fields(r, "stack.support", {"series", "driver", "dtk", "source"})
        optional = {k: r.get(k) for k in ("driver", "dtk")}
        for k, v in optional.items():
            if v is not None:
                _str(v, f"stack.support.{k}")
        support.append(
            SupportRow(
                _str(r.get("series"), "stack.support.series"),
                optional["driver"],
                optional["dtk"],
                _str(r.get("source", ""), "stack.support.source"),
            )
        )
    no_mix = tuple(_strs(g, "stack.no_mix") for g in _list(stack.get("no_mix", []), "no_mix"))
    return StackRule(tuple(support), no_mix)


def _binary_from_json(value: Any) -> BinaryRule:
    """``[binary]``: three lists of library name patterns, each its default when absent."""
    binary = _fields(value, "binary", _names(BinaryRule))
    return BinaryRule(**{k: _strs(v, f"binary.{k}") for k, v in binary.items()})


#: the fields `from_json` reads with their own checks; any other is typed by its default
_CHECKED = {
    "name", "description", "dtk", "dtk_allow", "target", "find_links", "indexes", "vendor",
    "deny", "fp8", "exceptions", "drift_extra_severity", "files", "stack", "on_import",
    "binary",
}  # fmt: skip
_SEVERITIES = ("critical", "high", "medium", "low", "info")
_ON_IMPORT = ("warn", "error", "off")


def _names(cls: type) -> set[str]:
    return {f.name for f in fields(cls)}


def _plain_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """Fields `from_json` has no own check for, typed like their defaults (str, bool, tuple of
    str, dict of str); a field of another kind cannot come from JSON (`TypeError`: a miss)."""
    out: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in _CHECKED or f.name not in data:
            continue
        if f.default is not MISSING:
            default = f.default
        elif f.default_factory is not MISSING:
            default = f.default_factory()
        else:
            raise TypeError(f"{f.name}: no default to type it by")
        value = data[f.name]
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise TypeError(f"{f.name}: not a boolean")
            out[f.name] = value
        elif isinstance(default, str):
            out[f.name] = _str(value, f.name)
        elif isinstance(default, tuple):
            out[f.name] = _strs(value, f.name)
        elif isinstance(default, dict):
            out[f.name] = _str_map(value, f.name)
        else:
            raise TypeError(f"{f.name}: cannot be read from JSON")
    return out


def _fields(value: Any, what: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"{what}: not an object")
    unknown = set(value) - allowed
    if unknown:
        raise TypeError(f"{what}: unknown keys {sorted(unknown)}")
    return value


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what}: not a string")
    return value


def _list(value: Any, what: str) -> list[Any] | tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{what}: not a list")
    return value


def _strs(value: Any, what: str) -> tuple[str, ...]:
    return tuple(_str(v, what) for v in _list(value, what))


def _str_map(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError(f"{what}: not an object")
    return {_str(k, what): _str(v, what) for k, v in value.items()}


def _choice(value: Any, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"{what}: {value!r} is not one of {', '.join(allowed)}")
    chosen: str = value
    return chosen
