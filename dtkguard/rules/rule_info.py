"""One rule as the module that reports it declares it: id, default severity, title, help, family.

`dtkguard.rules.catalog` collects the declarations of every family module.
"""

from __future__ import annotations

from dtkguard.findings import Finding, Severity
from dtkguard.record import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@record(frozen=True)
class RuleInfo:
    """One rule, declared once in the module that reports it."""

    id: str
    severity: Severity
    title: str
    help: str
    #: the check family (`FAMILIES`) that reports it
    family: str = ""

    def finding(
        self,
        subject: str,
        message: str,
        remediation: str = "",
        location: str | None = None,
        evidence: dict[str, Any] | None = None,
    ) -> Finding:
        """A finding of this rule, at its default severity."""
        return Finding(
            self.id, self.severity, subject, message, remediation, location, evidence or {}
        )
