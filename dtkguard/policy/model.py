"""The policy file schema (pydantic). Used only when a TOML policy is read and validated.

Every section is optional in a single file, so a policy can ``extends`` another and override a
few entries; `dtkguard.policy.load` merges the files and compiles the result.
"""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Literal

from packaging.version import InvalidVersion, Version
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from dtkguard.decision import canonical
from dtkguard.policy.labels import DtkRelease

Action = Literal["deny", "warn", "allow"]
SeverityName = Literal["critical", "high", "medium", "low", "info"]


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        alias_generator=lambda name: name.replace("_", "-"),
        frozen=True,
    )


def _dtk_release(value: str) -> str:
    DtkRelease.parse(value)
    return value


class Identity(_Section):
    name: str | None = None
    description: str = ""
    dtk: str | None = None
    extends: list[str] = Field(default_factory=list)
    #: DTK releases or series that may sit beside ``dtk`` without a dtk-mixed finding
    dtk_allow: list[str] = Field(default_factory=list)

    _check_dtk = field_validator("dtk")(lambda v: v if v is None else _dtk_release(v))

    @field_validator("dtk_allow")
    @classmethod
    def _check_allow(cls, values: list[str]) -> list[str]:
        return [_dtk_release(v) for v in values]


class TargetSection(_Section):
    python: str = "3.10"
    platforms: list[str] = Field(default_factory=lambda: ["manylinux_2_28_x86_64"])
    implementation: str = "cp"

    @field_validator("python")
    @classmethod
    def _check_python(cls, value: str) -> str:
        parts = value.split(".")
        if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
            raise ValueError(f"not a Python version: {value!r} (expected e.g. 3.10)")
        return value


class Sources(_Section):
    find_links: list[str] = Field(default_factory=list)
    indexes: list[str] = Field(default_factory=list)


class Deny(_Section):
    pattern: str
    reason: str = Field(min_length=1)
    severity: SeverityName = "critical"
    vendor_builds_ok: bool = False

    @field_validator("pattern")
    @classmethod
    def _check_pattern(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("empty pattern")
        return canonical(value) if not any(c in value for c in "*?[") else value.lower()


class Fp8(_Section):
    weights: Action = "deny"
    kv_cache: Action = "deny"
    serving: Action = "deny"
    cards: dict[str, Action] = Field(default_factory=dict)
    unresolved_model: Literal["deny", "warn"] = "warn"


class Drift(_Section):
    extra_severity: SeverityName = "medium"


class SupportRowModel(_Section):
    series: str = Field(min_length=1)
    driver: str | None = None
    dtk: str | None = None
    source: str = ""

    _check_dtk = field_validator("dtk")(lambda v: v if v is None else _dtk_release(v))

    @field_validator("driver")
    @classmethod
    def _check_driver(cls, value: str | None) -> str | None:
        if value is not None and not value[:1].isdigit():
            raise ValueError(f"not a driver version: {value!r} (expected e.g. 6.2.0)")
        return value


class StackSection(_Section):
    support: list[SupportRowModel] = Field(default_factory=list)
    no_mix: list[list[str]] = Field(default_factory=list)


class GuardSection(_Section):
    """How the installed guard behaves: what the import tripwire does, and the start-up code
    (``.pth`` files, ``sitecustomize``/``usercustomize``) a distribution may ship, as
    ``[dist:]pattern``."""

    #: what the import tripwire does when a vendor build changed since `guard install`
    on_import: Literal["warn", "error", "off"] = "warn"
    startup_allow: list[str] = Field(default_factory=list)

    @field_validator("startup_allow")
    @classmethod
    def _check_startup(cls, values: list[str]) -> list[str]:
        for value in values:
            _dist, _, pattern = value.rpartition(":")
            if not pattern.strip() or "/" in pattern:
                raise ValueError(
                    f"not a start-up file pattern: {value!r} (expected e.g. "
                    "'setuptools:distutils-precedence.pth' or '__editable__.*.pth')"
                )
        return values


def _library_pattern(value: str) -> str:
    """One library name pattern (fnmatch on a DT_NEEDED base name): ``libcudart.so*``."""
    if not value.strip() or "/" in value or value != value.strip():
        raise ValueError(
            f"not a library name pattern: {value!r} (expected a file name pattern such as "
            "'libcudart.so*')"
        )
    return value


LibraryPattern = Annotated[str, AfterValidator(_library_pattern)]


class BinarySection(_Section):
    """What native code may link (ELF ``DT_NEEDED``): CUDA runtime libraries no binary may
    need (``cuda-binary``), the DTK GPU runtime, and the HIP runtimes that are not DTK's
    (``foreign-hip`` when a binary needs one of them and no DTK one). A key replaces the
    list of the policies it extends."""

    deny_needed: list[LibraryPattern] | None = None
    gpu_runtime: list[LibraryPattern] | None = None
    hip_runtime: list[LibraryPattern] | None = None


class PolicyExceptionModel(_Section):
    rule: str
    package: str
    reason: str = Field(min_length=1)
    expires: _dt.date

    @field_validator("expires", mode="before")
    @classmethod
    def _check_expires(cls, value: object) -> object:
        if isinstance(value, _dt.datetime):
            return value.date()
        if isinstance(value, str):
            try:
                return _dt.date.fromisoformat(value)
            except ValueError:
                raise ValueError(f"not a date: {value!r} (expected YYYY-MM-DD)") from None
        if isinstance(value, _dt.date):
            return value
        raise ValueError(f"not a date: {value!r} (expected YYYY-MM-DD)")


def _vendor_version(version: str) -> str:
    """A vendor build's full version; errors land on the package's own key."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise ValueError(f"not a PEP 440 version: {version!r}") from None
    if parsed.local is None:
        raise ValueError(
            f"{version!r} has no local label; a vendor build is pinned with its "
            f"full label, e.g. '2.4.1+das.opt1.dtk25041'"
        )
    return version


VendorVersion = Annotated[str, AfterValidator(_vendor_version)]


class PolicyFile(_Section):
    """One policy file as written; all sections optional."""

    policy: Identity = Field(default_factory=Identity)
    target: TargetSection | None = None
    sources: Sources | None = None
    vendor: dict[str, VendorVersion] = Field(default_factory=dict)
    deny: list[Deny] = Field(default_factory=list)
    fp8: Fp8 | None = None
    drift: Drift | None = None
    stack: StackSection | None = None
    guard: GuardSection | None = None
    binary: BinarySection | None = None
    exceptions: list[PolicyExceptionModel] = Field(default_factory=list)
