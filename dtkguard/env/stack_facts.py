"""The stack below Python as facts (`dtkguard.audit.stack` reads them, `dtkguard.rules.stack`
judges them): DTK release and HIP, torch's HIP, cards, driver, devices."""

from __future__ import annotations

import re

from dtkguard.lightclass import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.env.device import Card
    from dtkguard.env.json_shapes import StackFactsDict
    from dtkguard.util.json_types import JSON

_NUMBERS = re.compile(r"\d+(?:\.\d+)*")


@record
class StackFacts:
    """What the stack below Python says; ``None`` is "could not be read", never "fine"."""

    dtk: str | None = None
    dtk_source: str | None = None
    hip: str | None = None
    hip_source: str | None = None
    torch_version: str | None = None
    torch_hip: str | None = None
    torch_cuda: str | None = None
    #: None: not read (no hy-smi, an image); []: hy-smi ran and saw no card
    cards: list[Card] | None = None
    cards_source: str | None = None
    module_driver: str | None = None
    #: None for an image; else {"kfd": bool, "render": [names]}
    devices: dict[str, JSON] | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> StackFactsDict:
        return {
            "dtk": self.dtk,
            "dtk_source": self.dtk_source,
            "hip": self.hip,
            "hip_source": self.hip_source,
            "torch": {
                "version": self.torch_version,
                "hip": self.torch_hip,
                "cuda": self.torch_cuda,
            },
            "cards": None if self.cards is None else [c.to_json() for c in self.cards],
            "cards_source": self.cards_source,
            "module_driver": self.module_driver,
            "devices": self.devices,
            "notes": list(self.notes),
        }


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """The leading dotted numbers of a version string: ``6.3.27-V1.2.5`` -> (6, 3, 27)."""
    if not text:
        return None
    m = _NUMBERS.search(text)
    return tuple(int(p) for p in m.group(0).split(".")) if m else None
