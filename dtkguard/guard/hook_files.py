"""The names of the pip hook's files in a site-packages, and their source in dtkguard (light:
dtkpip asks whether this dtkguard's hook is present before every install)."""

from __future__ import annotations

from pathlib import Path

HOOK_MODULE = "_dtkguard_pip_hook.py"
HOOK_PTH = "dtkguard-pip-hook.pth"
#: the start-up finder the ``.pth`` line imports (per environment: it names the policy)
FINDER_MODULE = "_dtkguard_finder.py"


def hook_source(name: str) -> str:
    """A file of the pip hook, from the installed package data (``dtkguard.plugins.pip``) or a
    source checkout (``plugins/pip``)."""
    here = Path(__file__).resolve().parents[1]
    for folder in (here / "plugins" / "pip", here.parent / "plugins" / "pip"):
        try:
            return (folder / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
    raise FileNotFoundError(name)
