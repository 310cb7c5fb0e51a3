"""The doctor screen: facts first, then every problem with its fix, for a person at 80 columns.

Commands, paths and versions are never broken across lines, so they can be copied.
"""

from __future__ import annotations

import textwrap

from dtkguard.findings import Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from dtkguard.report.model import Report

WIDTH = 80
_LABEL = 10


def _wrap(text: str, indent: int, width: int) -> list[str]:
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=" " * indent,
        subsequent_indent=" " * indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [" " * indent]


def _row(label: str, text: str, width: int) -> list[str]:
    lines = _wrap(text, _LABEL, width)
    lines[0] = label.ljust(_LABEL) + lines[0][_LABEL:]
    return lines


def _cards(stack: dict[str, Any]) -> str:
    cards = stack.get("cards")
    if cards is None:
        note = "; ".join(stack.get("notes") or []) or "not read (an image has no cards)"
        return f"unknown: {note}"
    if not cards:
        return f"none seen ({stack.get('cards_source')})"
    groups: dict[tuple[Any, ...], int] = {}
    for c in cards:
        key = (c.get("series") or "?", c.get("driver") or "driver ?", c.get("vram_mib"))
        groups[key] = groups.get(key, 0) + 1
    parts = []
    for (series, driver, vram), n in groups.items():
        mem = f", {vram / 1024:.0f} GiB each" if vram else ""
        driver = driver if driver == "driver ?" else f"driver {driver}"
        parts.append(f"{n} × {series}, {driver}{mem}")
    return "; ".join(parts) + f" ({stack.get('cards_source')})"


def _dtk(stack: dict[str, Any]) -> str:
    if not stack.get("dtk"):
        return "not found (no /opt/dtk/.info/version, version-dev or /opt/dtk link)"
    text = f"{stack['dtk']} ({stack.get('dtk_source')})"
    if stack.get("hip"):
        text += f", HIP {stack['hip']}"
    return text


def _torch(stack: dict[str, Any]) -> str:
    torch = stack.get("torch") or {}
    if not torch.get("version"):
        return "not installed"
    if torch.get("cuda"):
        kind = f"a CUDA build (cuda {torch['cuda']})"
    elif torch.get("hip"):
        kind = f"a HIP build (hip {torch['hip']})"
    else:
        kind = "build unknown (no hip in torch/version.py)"
    return f"{torch['version']}, {kind}"


def _vendor(vendor: dict[str, Any]) -> str:
    text = f"{vendor['installed']} of {vendor['policy']} installed"
    if vendor["installed"] != vendor["exact"]:
        text += f", {vendor['installed'] - vendor['exact']} not the pinned build"
    if vendor["dtk"]:
        text += "; built for DTK " + ", ".join(f"{r} ({n})" for r, n in vendor["dtk"].items())
    return text


def _runtime(rows: dict[str, Any]) -> str:
    """Per vendor build with native code: the GPU runtime its binaries link."""
    if not rows:
        return "no vendor build with native code installed"
    parts = []
    for name, row in rows.items():
        libs = f": {', '.join(row['libraries'])}" if row["libraries"] else ""
        runtime = {"dtk": "DTK HIP", "cuda": "CUDA", "rocm": "ROCm HIP"}.get(
            row["runtime"], row["runtime"]
        )
        parts.append(f"{name} {runtime} ({row['binaries']} binaries{libs})")
    return "; ".join(parts) + " (ELF DT_NEEDED)"


def _fp8(rows: list[dict[str, Any]]) -> str:
    parts = []
    for row in rows:
        kinds = {"weights": row["weights"], "kv cache": row["kv_cache"], "serving": row["serving"]}
        actions = set(kinds.values())
        if actions == {"allow"}:
            verdict = "FP8 models allowed"
        elif actions == {"deny"}:
            verdict = "FP8 models refused"
        else:
            verdict = ", ".join(f"{kind} {action}" for kind, action in kinds.items())
        parts.append(f"{row['series']}: {verdict}")
    return "; ".join(parts) + " (policy [fp8])"


def _devices(stack: dict[str, Any]) -> str:
    devices = stack.get("devices")
    if devices is None:
        return "not applicable (an image)"
    kfd = "/dev/kfd" if devices.get("kfd") else "no /dev/kfd"
    render = devices.get("render") or []
    text = f"{kfd}, {len(render)} render node{'s' if len(render) != 1 else ''}"
    if stack.get("module_driver"):
        text += f"; driver module {stack['module_driver']}"
    return text


def render(
    report: Report,
    *,
    fail_on: Severity = Severity.HIGH,
    color: bool | None = None,
    width: int = WIDTH,
) -> str:
    doctor = report.facts.get("doctor", {})
    stack = doctor.get("stack", {})
    target = (
        report.target.get("python")
        or report.target.get("root")
        or report.target.get("path")
        or report.target.get("kind", "")
    )
    lines = [f"dtkguard doctor: {target} (policy {report.policy})", ""]
    for label, text in (
        ("cards", _cards(stack)),
        ("dtk", _dtk(stack)),
        ("torch", _torch(stack)),
        ("vendor", _vendor(doctor["vendor"])),
        ("runtime", _runtime(doctor.get("runtime") or {})),
        ("fp8", _fp8(doctor["fp8"])),
        ("devices", _devices(stack)),
    ):
        lines += _row(label, text, width)
    lines.append("")
    findings = report.findings
    if not findings:
        lines.append("no problems found")
    else:
        lines.append(
            f"{len(findings)} problem{'s' if len(findings) != 1 else ''}, most severe first:"
        )
        for f in findings:
            lines.append("")
            lines += _wrap(f"{f.severity.value.upper()} {f.rule} {f.subject}", 2, width)
            lines += _wrap(f.message, 4, width)
            if f.remediation:
                lines += _wrap(f"fix: {f.remediation}", 4, width)
    for warning in report.warnings:
        lines += _wrap(f"warning: {warning}", 0, width)
    lines += ["", f"verdict: {report.verdict(fail_on).upper()}"]
    return "\n".join(line.rstrip() for line in lines) + "\n"
