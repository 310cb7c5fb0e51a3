"""The local DCUs as ``hy-smi`` reports them: card series, driver version, memory.

``hy-smi --showproductname`` prints ``HCU[0] : Card Series: K100_AI`` (older drivers ``DCU[0]``);
``--showdriverversion`` prints ``Driver Version: 6.3.27-V1.2.5`` once for the node (some builds
prefix it per card); ``--showmeminfo vram`` prints ``HCU[0] : vram Total Memory (MiB): 65520``.
``hy-smi --json`` gives ``{"card0": {"Card Series": ...}}`` but is often malformed (missing
commas, unit suffixes), so it is parsed leniently. One run may print several of these; a file
recorded on a fleet node (``--hy-smi-output``) may hold the output of several runs.
"""

from __future__ import annotations

import json
import os
import re

from dtkguard.lightclass import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.env.json_shapes import CardDict

DEFAULT_PATHS = ("/opt/hyhal/bin/hy-smi", "/usr/local/hyhal/bin/hy-smi")
TIMEOUT = 5.0
#: the flags one live run passes (hy-smi, like rocm-smi, takes several at once)
FLAGS = ("--showproductname", "--showdriverversion", "--showmeminfo", "vram")
_CARD_LINE = re.compile(r"^\s*[DHG]CU\[(\d+)\][^\n:]*:\s*(.+?)\s*$", re.MULTILINE)
_NODE_DRIVER = re.compile(r"^\s*Driver\s+Version\s*:\s*(\S+)", re.MULTILINE | re.IGNORECASE)
_MEMORY = re.compile(r"total\s+memory\s*\((B|KiB|MiB|GiB)\)\s*:\s*(\d+)", re.IGNORECASE)
_UNIT = {"B": 1 / (1 << 20), "KiB": 1 / 1024, "MiB": 1, "GiB": 1024}
_JSON_PAIR = re.compile(r'"(card\d+)"\s*:\s*\{|"Card Series"\s*:\s*"([^"]*)"')


@record
class Card:
    """One card: its index, series (policy form, e.g. ``K100_AI``), driver and VRAM."""

    index: int
    series: str | None = None
    driver: str | None = None
    vram_mib: int | None = None

    def to_json(self) -> CardDict:
        return {
            "index": self.index,
            "series": self.series,
            "driver": self.driver,
            "vram_mib": self.vram_mib,
        }


def normalise(series: str) -> str:
    """``k100-ai `` -> ``K100_AI``: the form policies use as keys."""
    return re.sub(r"[\s-]+", "_", series.strip()).upper()


def _card(cards: dict[int, Card], index: int) -> Card:
    return cards.setdefault(index, Card(index))


def _text_cards(text: str) -> dict[int, Card]:
    cards: dict[int, Card] = {}
    for m in _CARD_LINE.finditer(text):
        index, rest = int(m.group(1)), m.group(2)
        key, _, value = rest.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "card series" and value:
            _card(cards, index).series = normalise(value)
        elif key == "driver version" and value:
            _card(cards, index).driver = value.split()[0]
        elif (mem := _MEMORY.search(rest)) and "used" not in key:
            _card(cards, index).vram_mib = round(int(mem.group(2)) * _UNIT[mem.group(1)])
    return cards


def _json_cards(text: str) -> dict[int, Card]:
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    cards: dict[int, Card] = {}
    if isinstance(data, dict):
        keys = [k for k in data if re.fullmatch(r"card\d+", str(k))]
        for key in sorted(keys, key=lambda k: int(k[4:])):
            value = data[key]
            if not isinstance(value, dict):
                continue
            card = _card(cards, int(key[4:]))
            fields = {str(k).strip().lower(): v for k, v in value.items()}
            if isinstance(fields.get("card series"), str) and fields["card series"].strip():
                card.series = normalise(fields["card series"])
            if isinstance(fields.get("driver version"), str) and fields["driver version"].strip():
                card.driver = fields["driver version"].split()[0]
            for field, raw in value.items():
                mem = _MEMORY.search(f"{field}: {raw}")
                if mem and "used" not in str(field).lower():
                    card.vram_mib = round(int(mem.group(2)) * _UNIT[mem.group(1)])
        return cards
    index = -1
    for match in _JSON_PAIR.finditer(text):  # malformed JSON: card keys and series in order
        if match.group(1) is not None:
            index = int(match.group(1)[4:])
        elif index >= 0:
            _card(cards, index).series = normalise(match.group(2))
    return cards


def parse_cards(text: str) -> list[Card]:
    """Every card of hy-smi output (text, JSON or both concatenated), in card order.

    A node-wide ``Driver Version:`` line applies to every card that has none of its own.
    """
    cards = _text_cards(text)
    start = text.find("{")
    if start >= 0:
        for index, card in _json_cards(text[start:]).items():
            mine = _card(cards, index)
            mine.series = mine.series or card.series
            mine.driver = mine.driver or card.driver
            mine.vram_mib = mine.vram_mib or card.vram_mib
    node = _NODE_DRIVER.search(text)
    if node:
        for card in cards.values():
            card.driver = card.driver or node.group(1)
    return [cards[k] for k in sorted(cards)]


def parse(text: str) -> list[str]:
    """Card series from either output format."""
    return [c.series for c in parse_cards(text) if c.series]


def find_hy_smi() -> str | None:
    import shutil

    found = shutil.which("hy-smi")
    if found:
        return found
    return next((p for p in DEFAULT_PATHS if os.access(p, os.X_OK)), None)


def run_hy_smi(hy_smi: str | None = None) -> str | None:
    """The output of one live run with :data:`FLAGS` (then ``--json``); None without hy-smi."""
    exe = hy_smi or find_hy_smi()
    if not exe:
        return None
    import subprocess  # only to run one: most hosts that audit have no hy-smi

    out = []
    for args in (list(FLAGS), ["--showproductname", "--json"]):
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
            break
        out.append(proc.stdout)
        if any(c.series for c in parse_cards(proc.stdout)):
            break
    return "\n".join(out)


def read_card_series(hy_smi: str | None = None) -> list[str]:
    """Card series of every card, from ``hy-smi``; ``[]`` without hy-smi or on failure."""
    text = run_hy_smi(hy_smi)
    return parse(text) if text else []
