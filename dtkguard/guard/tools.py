"""The guarded installers a message speaks of."""

from __future__ import annotations

from dtkguard.lightclass import record


@record(frozen=True)
class Tool:
    """The guarded installer a message speaks of: dtkpip (runs pip) or dtkuv (runs uv)."""

    name: str
    runs: str
    install: str
    reinstall: str


DTKPIP = Tool("dtkpip", "pip", "dtkpip install", "dtkpip install --force-reinstall --no-deps")
DTKUV = Tool("dtkuv", "uv", "dtkuv pip install", "dtkuv pip install --reinstall --no-deps")
