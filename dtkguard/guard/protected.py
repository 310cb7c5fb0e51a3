"""The files of an env the guard protects, as `restore` repairs them and `check` compares them.

Until the one definition of the protected set (issue 22's stdlib module) is merged, this is
the set that issue names: the guard's own modules in site-packages (hook, finder, tripwire,
decision copy, ``.pth``) and their byte code, pip's own files (its RECORD), ``bin/python*``,
``bin/pip*``, ``bin/uv`` (the shim), ``bin/dtkpip``, ``bin/activate*``, and ``pyvenv.cfg``
(a venv re-created with other options is another env).
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.env.interpreter import Interpreter

_BIN_PATTERNS = ("python*", "pip*", "uv", "dtkpip", "activate*", "Activate*")


def _guard_modules(purelib: Path, modules: tuple[str, ...]) -> list[Path]:
    out = []
    for module in modules:
        out.append(purelib / module)
        if module.endswith(".py"):
            out += sorted((purelib / "__pycache__").glob(module[:-3] + ".*.pyc"))
    return out


def _pip_files(purelib: Path) -> list[Path]:
    """Every file pip's own RECORD lists (its scripts in ``bin/`` too)."""
    from dtkguard.env.record import rows_of

    out: list[Path] = []
    for info in sorted(purelib.glob("pip-*.dist-info")):
        try:
            text = (info / "RECORD").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for row in rows_of(text):
            if row:
                out.append(Path(os.path.normpath(purelib / row[0])))
    return out


def protected_paths(interp: Interpreter, modules: tuple[str, ...]) -> list[Path]:
    """The protected files of ``interp``'s env that exist now (``modules``: the file names of
    the guard's own files in site-packages, `dtkguard.guard.layers.GUARD_MODULES`)."""
    purelib = interp.purelib
    scripts = interp.scripts or interp.prefix / "bin"
    paths = _guard_modules(purelib, modules) + _pip_files(purelib)
    for pattern in _BIN_PATTERNS:
        paths += sorted(scripts.glob(pattern))
    paths.append(interp.prefix / "pyvenv.cfg")
    return [p for p in dict.fromkeys(paths) if os.path.lexists(p)]
