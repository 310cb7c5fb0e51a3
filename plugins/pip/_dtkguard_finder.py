"""dtkguard's start-up finder: the only guard code that runs at every interpreter start.

``dtkguard guard install`` writes this file into the target's site-packages with the three
values below filled in, byte-compiles it with the target interpreter, and writes the one-line
``dtkguard-pip-hook.pth`` that imports it. Importing a module whose ``.pyc`` the interpreter
already has is cheaper than compiling a finder from the ``.pth`` line's source at every start
(``site`` exec's that line), and the ``.pyc`` is the interpreter's own: no tie to a version.

The module itself is the meta-path finder (a module with a ``find_spec`` function is one: no
class to build at start-up). It only compares names; the pip hook (``_dtkguard_pip_hook``) is
imported when pip imports its install or uninstall code, the import tripwire
(``_dtkguard_tripwire``) on the first import of a vendor top-level module.

Fail closed: the ``.pth`` line first puts ``None`` into ``sys.modules`` for pip's uninstall
module (which pip's install and uninstall commands both import), and only this module takes it
out again. Without this file (deleted, or unreadable) pip cannot install or uninstall, and
``site`` names the ``.pth`` line and the missing module at every start. Standard library only.

The three values are placeholder names no module defines, which ``guard install`` replaces with
literals (``guard/layers.planned_layers``): in this template they are undefined names, and their
lines say so to ruff (``noqa: F821``) and to mypy (``type: ignore[name-defined]``); the finder
written keeps those comments.
"""

import sys

_dtkguard = 1
#: the compiled policy the pip hook judges with (``<prefix>/dtkguard/policy.json``)
POLICY = __POLICY__  # type: ignore[name-defined]  # noqa: F821
#: the tripwire's copy of the baseline (``<prefix>/dtkguard/tripwire.txt``)
TRIPWIRE = __TRIPWIRE__  # type: ignore[name-defined]  # noqa: F821
#: top-level modules of the vendor builds (none with ``[guard] on-import = "off"``)
VENDOR_MODULES = frozenset(__VENDOR_MODULES__)  # type: ignore[name-defined]  # noqa: F821
#: the pip modules the hook wraps; the last one is the one the ``.pth`` line blocks
PIP_MODULES = (
    "pip._internal.commands.install",
    "pip._internal.commands.wheel",
    "pip._internal.commands.download",
    "pip._internal.req.req_uninstall",
)


def find_spec(name, path=None, target=None):
    """None for every module but pip's two and the vendor top-level modules."""
    if name in PIP_MODULES:
        return __import__("_dtkguard_pip_hook").find_spec(name, path, target, POLICY)
    if path is None and name in VENDOR_MODULES:
        return __import__("_dtkguard_tripwire").tripwire(name, TRIPWIRE)
    return None


if sys.modules.get(PIP_MODULES[-1], 0) is None:
    del sys.modules[PIP_MODULES[-1]]
sys.meta_path.insert(0, sys.modules[__name__])
