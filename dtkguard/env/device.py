"""The card series of the local DCUs, read from ``hy-smi`` (text or lenient ``--json``).

``hy-smi --showproductname`` prints ``HCU[0] : Card Series: K100_AI`` (older drivers ``DCU[0]``).
``hy-smi --json`` gives ``{"card0": {"Card Series": ...}}`` but is often malformed (missing
commas, unit suffixes), so it is parsed leniently.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

DEFAULT_PATHS = ("/opt/hyhal/bin/hy-smi", "/usr/local/hyhal/bin/hy-smi")
TIMEOUT = 5.0
_TEXT = re.compile(r"^\s*[DHG]CU\[(\d+)\][^\n]*?Card Series:\s*(.+?)\s*$", re.MULTILINE)
_JSON_PAIR = re.compile(r'"(card\d+)"\s*:\s*\{|"Card Series"\s*:\s*"([^"]*)"')


def normalise(series: str) -> str:
    """``k100-ai `` -> ``K100_AI``: the form policies use as keys."""
    return re.sub(r"[\s-]+", "_", series.strip()).upper()


def parse_text(text: str) -> list[str]:
    """Card series from the text output, in card order."""
    cards = {int(m.group(1)): normalise(m.group(2)) for m in _TEXT.finditer(text)}
    return [cards[k] for k in sorted(cards)]


def parse_json(text: str) -> list[str]:
    """Card series from ``--json`` output; falls back to a lenient scan when it is not JSON."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        out = []
        for key in sorted(data, key=lambda k: (len(k), k)):
            value = data[key]
            if isinstance(value, dict) and isinstance(value.get("Card Series"), str):
                out.append(normalise(value["Card Series"]))
        return out
    out = []
    for match in _JSON_PAIR.finditer(text):
        if match.group(2) is not None:
            out.append(normalise(match.group(2)))
    return out


def parse(text: str) -> list[str]:
    """Card series from either output format."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return parse_json(text) or parse_text(text)
    return parse_text(text) or parse_json(text)


def find_hy_smi() -> str | None:
    found = shutil.which("hy-smi")
    if found:
        return found
    return next((p for p in DEFAULT_PATHS if os.access(p, os.X_OK)), None)


def read_card_series(hy_smi: str | None = None) -> list[str]:
    """Card series of every card, from ``hy-smi``; ``[]`` without hy-smi or on failure."""
    exe = hy_smi or find_hy_smi()
    if not exe:
        return []
    for args in (["--showproductname"], ["--showproductname", "--json"]):
        try:
            proc = subprocess.run(
                [exe, *args],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
                errors="replace",
            )
        except (OSError, subprocess.SubprocessError):
            return []
        cards = parse(proc.stdout)
        if cards:
            return cards
    return []
