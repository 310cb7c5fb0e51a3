"""Device facts of a target: DTK release, card series, gfx arch, visible devices.

Read from files only, inside the target's root: ``/opt/dtk/.info/version`` (then
``.info/version-dev``, the ``/opt/dtk -> dtk-25.04.1`` link, ``/opt/rocm/.info/version``). The card
series comes from the host's ``hy-smi`` through `dtkguard.env.device` (never a binary of the
target), the gfx arch from the KFD topology in ``/sys``. Neither applies to an unpacked image.
"""

from __future__ import annotations

import os
import re

from dtkguard.env.root import ConfinementError, Root
from dtkguard.util.safe_read import read_head

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from dtkguard.report.schema import JSONObject

VERSION_FILES = (
    "opt/dtk/.info/version",
    "opt/dtk/.info/version-dev",
)
_RELEASE = r"(\d{2}\.\d{2}(?:\.\d+)?(?:[-.]\w+)*)"  # compiled on first use
KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
DEVICE_VARS = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


def _first_line(root: Root, inner: str) -> str | None:
    try:
        data = read_head(root.resolve_text(inner), 4096, follow=False, root=root)
    except (OSError, ConfinementError):
        return None
    text = data.decode("utf-8", "replace").strip()
    return text.splitlines()[0].strip() if text else None


def dtk_release(root: Root) -> dict[str, Any]:
    """``{"release": "25.04.1", "source": ...}`` or ``{"release": None}``."""
    for inner in VERSION_FILES:
        line = _first_line(root, inner)
        if line and (m := re.search(_RELEASE, line)):
            return {"release": m.group(1), "source": "/" + inner, "raw": line}
    try:
        link = root.readlink(os.path.join(root.resolve_text("/opt"), "dtk"))  # the link itself
    except (OSError, ConfinementError):
        link = ""
    if m := re.search(r"dtk-?(\d{2}\.\d{2}(?:\.\d+)?)", link):
        return {"release": m.group(1), "source": "/opt/dtk -> " + link}
    line = _first_line(root, "opt/rocm/.info/version")
    if line:
        return {"release": None, "rocm": line, "source": "/opt/rocm/.info/version"}
    return {"release": None}


def gfx_archs(nodes: str = KFD_NODES) -> list[str]:
    """``gfx928`` ... from each GPU node's ``gfx_target_version`` (major*10000+minor*100+step)."""
    import glob

    out = []
    for props in sorted(glob.glob(f"{nodes}/*/properties")):
        try:
            with open(props, encoding="ascii", errors="replace") as f:
                text = f.read(1 << 16)
        except OSError:
            continue
        m = re.search(r"^gfx_target_version\s+(\d+)", text, re.MULTILINE)
        if not m or int(m.group(1)) == 0:
            continue
        value = int(m.group(1))
        major, minor, step = value // 10000, value // 100 % 100, value % 100
        out.append(f"gfx{major}{minor:x}{step:x}")
    return out


def card_series() -> list[str]:
    """The host's card series through hy-smi (``[]`` without it or on any failure)."""
    try:
        from dtkguard.env.device import read_card_series
    except ImportError:
        return []
    try:
        return list(read_card_series())
    except Exception:  # a broken hy-smi never breaks an audit
        return []


def device_facts(
    root: Root,
    environ: dict[str, str] | None = None,
    live: bool = True,
    cards: list[str] | None = None,
) -> JSONObject:
    """Every device fact of a target; ``live=False`` for an unpacked image (no cards there).

    ``cards``: the card series when the caller already read them (hy-smi runs once).
    """
    facts: dict[str, Any] = {"dtk": dtk_release(root)}
    try:
        facts["hyhal"] = root.is_dir(root.resolve("/opt/hyhal"))
    except ConfinementError:
        facts["hyhal"] = False
    if live:
        facts["cards"] = card_series() if cards is None else cards
        facts["gfx"] = gfx_archs()
    env = os.environ if environ is None else environ
    facts["visible_devices"] = {k: env[k] for k in DEVICE_VARS if k in env}
    return facts


def process_environ(pid: int | str) -> dict[str, str]:
    """The environment variables of a process (empty when not readable)."""
    from dtkguard.env import procfiles

    return procfiles.environ(f"/proc/{int(pid)}") or {}
