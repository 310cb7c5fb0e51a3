"""Read policy TOML with tomlkit, validate with pydantic, merge ``extends``, compile.

Every problem becomes one `PolicyError` naming the file, line, column and field. Which rule
ids exist is not the policy's knowledge: the caller passes ``known_rule`` (the rule catalog's
`dtkguard.rules.catalog.is_known`), which every exception's ``rule`` must satisfy.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from dtkguard.decision import canonical
from dtkguard.errors import PolicyError
from dtkguard.policy.compiled import (
    BinaryRule,
    CompiledPolicy,
    DenyRule,
    Fp8Rule,
    PolicyException,
    StackRule,
    SupportRow,
    Target,
    series_key,
)
from dtkguard.policy.locate import MAX_POLICY_BYTES
from dtkguard.policy.model import PolicyExceptionModel, PolicyFile
from dtkguard.policy.tomlpos import key_positions, locate, parse_toml
from dtkguard.util.text import Undecodable, decode_utf8

#: answers "is this a rule id?" for an exception's ``rule``
KnownRule = Callable[[str], bool]


@dataclass
class _Read:
    path: Path
    model: PolicyFile
    positions: dict[tuple[object, ...], tuple[int, int]]
    #: sha256 of the exact bytes that were parsed (the policy cache validates hits against it)
    digest: str = ""

    def error(self, loc: tuple[object, ...], message: str) -> PolicyError:
        line, col = locate(self.positions, loc)
        field = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in loc)
        return PolicyError(message, str(self.path), line, col, field.replace(".[", "["))


def read_policy_file(path: Path, known_rule: KnownRule) -> _Read:
    """Parse and validate one file (no ``extends`` handling)."""
    import hashlib

    raw = read_policy_bytes(path)
    read = parse_policy_bytes(path, raw, known_rule)
    read.digest = hashlib.sha256(raw).hexdigest()
    return read


def read_policy_bytes(path: Path) -> bytes:
    """The bytes of a policy file: a regular file of at most `MAX_POLICY_BYTES`."""
    from dtkguard.util.safe_read import read_capped, reason

    try:
        return read_capped(path, MAX_POLICY_BYTES, what="policy")
    except OSError as exc:
        raise PolicyError(f"cannot read policy: {reason(exc)}", str(path)) from None


def parse_policy_bytes(path: Path, raw: bytes, known_rule: KnownRule) -> _Read:
    """Parse and validate the bytes of one policy file read from ``path``."""
    try:
        text = decode_utf8(raw)
    except Undecodable as exc:
        raise PolicyError(str(exc), str(path), exc.line, exc.col) from None
    if not text.strip():
        raise PolicyError("empty policy file", str(path), 1, 1)
    data = parse_toml(text, str(path), PolicyError)
    positions = key_positions(text)
    try:
        model = PolicyFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        read = _Read(path, PolicyFile(), positions)
        raise read.error(loc, _message(err, loc)) from None
    read = _Read(path, model, positions)
    _check_semantics(read, data, known_rule)
    return read


def _message(err: Any, loc: tuple[object, ...]) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        parent = _model_at(PolicyFile, loc[:-1])
        known = sorted(f.alias or n for n, f in parent.model_fields.items()) if parent else []
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
        return f"unknown key {loc[-1]!r}{hint}"
    if kind == "missing":
        return "required key missing"
    message = str(err["msg"])
    return message.removeprefix("Value error, ")


def _model_at(model: type[BaseModel], loc: tuple[object, ...]) -> type[BaseModel] | None:
    """The pydantic model that validates the table at ``loc`` (skipping list indexes)."""
    import typing

    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
        if field is None:
            return None
        current = field.annotation
        for arg in typing.get_args(current) or ():
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                current = arg
                break
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _check_semantics(read: _Read, data: dict[str, Any], known_rule: KnownRule) -> None:
    seen: dict[str, str] = {}
    for name in read.model.vendor:
        key = canonical(name)
        if key in seen:
            raise read.error(
                ("vendor", name), f"{name!r} and {seen[key]!r} are the same package ({key})"
            )
        seen[key] = name
    for i, exc in enumerate(read.model.exceptions):
        if not known_rule(exc.rule):
            raise read.error(("exceptions", i, "rule"), f"unknown rule id {exc.rule!r}")


def compile_policy(path: Path, known_rule: KnownRule) -> CompiledPolicy:
    """Read ``path`` and everything it extends; merge parents first, the file itself last."""
    return compile_with_sources(path, known_rule)[0]


def compile_with_sources(
    path: Path, known_rule: KnownRule
) -> tuple[CompiledPolicy, list[tuple[str, str]]]:
    """`compile_policy`, plus (path, sha256) of the bytes read of each file, in `files` order.

    The digests are of what was parsed, so a file edited while it is compiled cannot be
    recorded with content it did not have.
    """
    chain: list[_Read] = []
    _collect(path.resolve(), chain, [], known_rule)
    sources = [(str(r.path), r.digest) for r in reversed(chain)]
    return _merge(chain), sources


def _collect(path: Path, out: list[_Read], stack: list[Path], known_rule: KnownRule) -> None:
    from dtkguard.policy.locate import resolve_policy_path

    read = read_policy_file(path, known_rule)
    stack = [*stack, path]
    for i, ref in enumerate(read.model.policy.extends):
        try:
            parent = resolve_policy_path(ref, base=path.parent).resolve()
        except PolicyError as exc:
            raise read.error(("policy", "extends", i), exc.message) from None
        if parent in stack:
            cycle = " -> ".join(p.name for p in [*stack[stack.index(parent) :], parent])
            raise read.error(("policy", "extends", i), f"extends cycle: {cycle}")
        if all(r.path != parent for r in out):
            _collect(parent, out, stack, known_rule)
    out.append(read)


def _merge(chain: list[_Read]) -> CompiledPolicy:
    """One policy from a chain of files, the named one last: a later file's setting wins,
    lists (vendor pins, deny rules, exceptions, allowances, support rows) add up."""
    own = chain[-1].model
    fields: dict[str, Any] = {
        "name": own.policy.name or chain[-1].path.stem,
        "description": own.policy.description,
    }
    binary: dict[str, tuple[str, ...]] = {}
    for read in chain:
        settings = _settings(read)
        binary.update(settings.pop("binary", {}))
        fields.update(settings)
    fields["binary"] = BinaryRule(**binary)
    models = [read.model for read in chain]
    vendor = {canonical(k): v for m in models for k, v in m.vendor.items()}
    return CompiledPolicy(
        **fields,
        vendor=dict(sorted(vendor.items())),
        deny=tuple(
            DenyRule(d.pattern, d.reason, d.severity, d.vendor_builds_ok)
            for m in models
            for d in m.deny
        ),
        exceptions=tuple(_exception(e) for m in models for e in m.exceptions),
        dtk_allow=_joined(m.policy.dtk_allow for m in models),
        stack=_stack(models),
        startup_allow=_joined(m.guard.startup_allow for m in models if m.guard),
        files=tuple(str(r.path) for r in reversed(chain)),
    )


def _settings(read: _Read) -> dict[str, Any]:
    """The single-valued settings one file makes (a later file's replace them)."""
    m = read.model
    out: dict[str, Any] = {}
    if m.policy.dtk:
        out["dtk"] = m.policy.dtk
    if m.target:
        out["target"] = Target(m.target.python, tuple(m.target.platforms), m.target.implementation)
    if m.sources:
        out["find_links"] = tuple(_source(read.path, s) for s in m.sources.find_links)
        out["indexes"] = tuple(m.sources.indexes)
    if m.fp8:
        out["fp8"] = Fp8Rule(
            m.fp8.weights,
            m.fp8.kv_cache,
            m.fp8.serving,
            {k.upper().replace("-", "_"): v for k, v in m.fp8.cards.items()},
            m.fp8.unresolved_model,
        )
    if m.drift:
        out["drift_extra_severity"] = m.drift.extra_severity
    if m.guard:
        out["on_import"] = m.guard.on_import
    if m.binary:  # each key on its own: a later file's list replaces that key only
        out["binary"] = {k: tuple(v) for k, v in m.binary.model_dump().items() if v is not None}
    return out


def _exception(e: PolicyExceptionModel) -> PolicyException:
    """A waiver with its package canonical (a model path only lower-cased)."""
    package = e.package.lower() if "/" in e.package else canonical(e.package)
    return PolicyException(e.rule, package, e.reason, e.expires.isoformat())


def _joined(lists: Iterable[list[str]]) -> tuple[str, ...]:
    """Each file's entries in chain order, each once (the first place it is listed)."""
    return tuple(dict.fromkeys(a for items in lists for a in items))


def _stack(models: list[PolicyFile]) -> StackRule:
    """Support rows by series (a later file's row replaces), the last file's no-mix groups."""
    support: dict[str, SupportRow] = {}
    no_mix: tuple[tuple[str, ...], ...] = ()
    for m in models:
        if not m.stack:
            continue
        for r in m.stack.support:
            key = series_key(r.series)
            support[key] = SupportRow(key, r.driver, r.dtk, r.source)
        if m.stack.no_mix:
            no_mix = tuple(
                tuple(g if g == "*" else series_key(g) for g in group) for group in m.stack.no_mix
            )
    return StackRule(tuple(support.values()), no_mix)


def _source(policy_path: Path, ref: str) -> str:
    """find-links entries: URLs stay; relative paths are relative to the policy file."""
    if "://" in ref or Path(ref).is_absolute():
        return ref
    return str((policy_path.parent / ref).resolve())
