"""Reports: findings of one run, rendered by the format registered for it.

``FORMATS`` maps each ``--format`` choice to ``module:render``; a renderer takes a `Report`
and returns text. `emit` renders, writes (stdout or ``-o FILE``, atomically) and returns the exit
code the findings call for.
"""

from __future__ import annotations

import importlib
import sys

from dtkguard.findings import Severity
from dtkguard.report.model import Report

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["FORMATS", "Report", "emit", "render", "use_color"]

FORMATS: dict[str, str] = {
    "table": "dtkguard.report.table:render",
    "json": "dtkguard.report.json_format:render",
    "sarif": "dtkguard.report.sarif:render",
    "junit": "dtkguard.report.junit:render",
    "markdown": "dtkguard.report.markdown:render",
    "cyclonedx": "dtkguard.report.cyclonedx:render",
}


def render(
    report: Report, fmt: str, *, fail_on: Severity = Severity.HIGH, color: bool | None = None
) -> str:
    module, _, func = FORMATS[fmt].partition(":")
    renderer = getattr(importlib.import_module(module), func)
    text: str = renderer(report, fail_on=fail_on, color=color)
    return text


def use_color(stream: Any = None) -> bool:
    """``--color``, else never with NO_COLOR, always with FORCE_COLOR, else on a terminal."""
    from dtkguard.util.console import color_wanted

    return color_wanted(stream)


def emit(
    report: Report,
    fmt: str,
    output: str | None = None,
    *,
    fail_on: Severity = Severity.HIGH,
    renderer: Callable[..., str] | None = None,
) -> int:
    """Render ``report`` to stdout or ``output`` and return the exit code (0 or 1).

    ``renderer`` replaces the one ``fmt`` names (a command's own screen, e.g. doctor's).
    """

    def rendered(color: bool) -> str:
        if renderer is not None:
            return renderer(report, fail_on=fail_on, color=color)
        return render(report, fmt, fail_on=fail_on, color=color)

    if output and output != "-":
        from dtkguard.util.output import write_output

        write_output(output, rendered(False))
    else:
        text = rendered(use_color())
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    return report.exit_code(fail_on)
