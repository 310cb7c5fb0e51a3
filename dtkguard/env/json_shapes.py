"""The JSON shapes env's records write, as TypedDicts.

Imported under ``TYPE_CHECKING`` only: a run never loads this module (nor, through it,
``typing``).
"""

from __future__ import annotations

from typing import TypedDict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.util.json_types import JSON


class CardDict(TypedDict):
    """`dtkguard.env.device.Card.to_json`: an entry of the stack facts' ``cards``."""

    index: int
    series: str | None
    driver: str | None
    vram_mib: int | None


class TorchDict(TypedDict):
    """The ``torch`` of `StackFactsDict`: torch's version and the HIP or CUDA it was built for."""

    version: str | None
    hip: str | None
    cuda: str | None


class StackFactsDict(TypedDict):
    """`dtkguard.env.stack_facts.StackFacts.to_json`: the ``stack`` of a report's device facts."""

    dtk: str | None
    dtk_source: str | None
    hip: str | None
    hip_source: str | None
    torch: TorchDict
    cards: list[CardDict] | None
    cards_source: str | None
    module_driver: str | None
    #: {"kfd": bool, "render": [names]}, None for an image
    devices: dict[str, JSON] | None
    notes: list[str]


class DistDict(TypedDict):
    """`dtkguard.env.dist.Dist.to_dict`."""

    name: str
    version: str
    location: str
    installer: str | None
    requested: bool
    direct_url: dict[str, JSON] | None


class RecordDict(TypedDict):
    """`dtkguard.env.store.Record.to_json`: the store's ``env.json``."""

    format: str
    identity: dict[str, JSON]
    guarded: bool
    created: str
    updated: str
