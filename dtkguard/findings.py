"""The one Finding model every check yields, and severities."""

from __future__ import annotations

import enum

from dtkguard.record import asdict, field, record

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from typing import Any


class Severity(str, enum.Enum):
    """Finding severity, ordered: ``Severity.CRITICAL > Severity.HIGH``."""

    INFO = "info"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank < other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank <= other.rank

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank > other.rank

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank >= other.rank

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls(text.lower())
        except ValueError:
            names = ", ".join(s.value for s in cls)
            raise ValueError(f"unknown severity {text!r} (one of {names})") from None


_RANKS = {s: i for i, s in enumerate(Severity)}


@record(frozen=True)
class Finding:
    """One result of one rule.

    ``subject`` is what the finding is about: a package name, a path or a process.
    ``location`` is the file that shows it (a METADATA, RECORD, lock or model file).
    """

    rule: str
    severity: Severity
    subject: str
    message: str
    remediation: str = ""
    location: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["severity"] = self.severity.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        return cls(
            rule=data["rule"],
            severity=Severity(data["severity"]),
            subject=data["subject"],
            message=data["message"],
            remediation=data.get("remediation", ""),
            location=data.get("location"),
            evidence=dict(data.get("evidence") or {}),
        )


def sort_key(finding: Finding) -> tuple[int, str, str]:
    """Most severe first, then by rule and subject: a stable order for every format."""
    return (-finding.severity.rank, finding.rule, finding.subject)
