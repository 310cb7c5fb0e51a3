"""The stack below Python, as facts: DTK release and HIP, torch's HIP, cards, driver, devices.

Everything is read from files inside the target's root (``/opt/dtk/.info/version``,
``hip_version.h``, ``torch/version.py``, ``/dev/kfd``), except what only the host knows: the
cards and their driver come from the host's ``hy-smi`` (or a recorded output file, as a fleet
collects it) and the kernel module's ``/sys/module/<driver>/version``. Nothing of the target is
run. An unpacked image has no cards, driver or devices: those facts stay ``None`` (unknown).
"""

from __future__ import annotations

import os
import re

from dtkguard.audit.facts import dtk_release
from dtkguard.env.root import ConfinementError, Root, child
from dtkguard.env.stack_facts import StackFacts
from dtkguard.util.safe_read import read_capped, read_head, reason

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from dtkguard.env.environment import Environment

#: where a DTK keeps its HIP version, first match wins (DTK and ROCm layouts)
HIP_VERSION_FILES = (
    "opt/dtk/hip/include/hip/hip_version.h",
    "opt/dtk/include/hip/hip_version.h",
    "opt/dtk/hip/bin/.hipVersion",
    "opt/dtk/bin/.hipVersion",
)
#: kernel modules of the DCU driver, newest name first
DRIVER_MODULES = ("hycu", "hydcu")
_HIP_FIELD = r"HIP_VERSION_(MAJOR|MINOR|PATCH)\s*=?\s*(\d+)"  # compiled on first use


def _read_text(root: Root, inner: str, limit: int = 1 << 16) -> str | None:
    try:
        return read_head(root.resolve_text(inner), limit, follow=False, root=root).decode(
            "utf-8", "replace"
        )
    except (OSError, ConfinementError):
        return None


def dtk_hip(root: Root) -> tuple[str, str] | None:
    """(``5.7.24164``, source) from the DTK's own version files, never by running its tools."""
    for inner in HIP_VERSION_FILES:
        text = _read_text(root, inner)
        if not text:
            continue
        fields = dict(re.findall(_HIP_FIELD, text))
        if "MAJOR" in fields and "MINOR" in fields:
            parts = [fields["MAJOR"], fields["MINOR"]] + (
                [fields["PATCH"]] if "PATCH" in fields else []
            )
            return ".".join(str(int(p)) for p in parts), "/" + inner
    return None


def torch_build(env: Environment) -> tuple[str, dict[str, str | None]] | None:
    """(torch version, ``{"hip": ..., "cuda": ...}``) from torch/version.py read as text."""
    from dtkguard.rules.torch_build import build_info

    torch = env.get("torch")
    if torch is None:
        return None
    version_py = child(env.root, child(env.root, torch.site_text, "torch"), "version.py")
    try:
        text = read_head(version_py, 1 << 16, follow=False, root=env.root).decode(
            "utf-8", "replace"
        )
    except OSError:
        return torch.version, {}
    return torch.version, build_info(text)


def _recorded(path: str | Path) -> str:
    """A recorded hy-smi output file (bad input, exit 2, when it cannot be read)."""
    from dtkguard.errors import InputError
    from dtkguard.util.purepath import pure_path

    try:
        data = read_capped(pure_path(os.fspath(path)), 1 << 20, what="hy-smi output")
    except OSError as exc:
        raise InputError(reason(exc), file=str(path), field="--hy-smi-output") from None
    return data.decode("utf-8", "replace")


def module_driver(sys_module: str = "/sys/module") -> str | None:
    """The loaded DCU driver module's version (host only)."""
    for name in DRIVER_MODULES:
        try:
            with open(f"{sys_module}/{name}/version", encoding="ascii", errors="replace") as fh:
                text = fh.read(256).strip()
        except OSError:
            continue
        if text:
            return text
    return None


def device_nodes(root: Root) -> dict[str, bool | list[str]]:
    """``/dev/kfd`` and the DRM render nodes, as the target sees them."""
    import stat

    def is_char(inner: str) -> bool:
        try:
            return stat.S_ISCHR(root.stat(root.resolve_text(inner)).st_mode)
        except (OSError, ConfinementError):
            return False

    render = [p.rsplit("/", 1)[1] for p in root.glob("dev/dri/renderD*") if is_char(p)]
    return {"kfd": is_char("/dev/kfd"), "render": render}


def _read_cards(facts: StackFacts, hy_smi_output: str | Path | None) -> None:
    """The cards from ``hy_smi_output`` (a recorded file), else from a live ``hy-smi`` run."""
    from dtkguard.env import device  # not imported by a check that reads no cards

    if hy_smi_output is not None:
        facts.cards = device.parse_cards(_recorded(hy_smi_output))
        facts.cards_source = str(hy_smi_output)
        return
    text = device.run_hy_smi()
    if text is not None:
        facts.cards, facts.cards_source = device.parse_cards(text), "hy-smi"
    else:
        facts.notes.append("hy-smi not found: cards and driver unknown")


def stack_facts(
    env: Environment,
    *,
    live: bool,
    hy_smi_output: str | Path | None = None,
    run_hy_smi: bool = False,
    sys_module: str = "/sys/module",
) -> StackFacts:
    """The stack facts of ``env``'s target.

    ``live``: the target runs on this host (not an unpacked image), so its devices and the
    host's driver apply. Cards come from ``hy_smi_output`` (a recorded file), else from a live
    ``hy-smi`` run when ``run_hy_smi`` (audit, doctor), else stay unknown (check stays fast).
    """
    facts = StackFacts()
    dtk = dtk_release(env.root)
    facts.dtk, facts.dtk_source = dtk.get("release"), dtk.get("source")
    if hip := dtk_hip(env.root):
        facts.hip, facts.hip_source = hip
    if build := torch_build(env):
        facts.torch_version = build[0]
        facts.torch_hip, facts.torch_cuda = build[1].get("hip"), build[1].get("cuda")
    if hy_smi_output is not None or (live and run_hy_smi):
        _read_cards(facts, hy_smi_output)
    if live:
        facts.module_driver = module_driver(sys_module)
        facts.devices = device_nodes(env.root)
    return facts
