"""The protected files of an env as the store records them (`dtkguard.env.protected_copy`).

The set itself is defined once, in `dtkguard.protected` (the guard's own files and their byte
code, pip's files, ``bin/python*``, ``bin/pip*``, the uv shim, ``bin/dtkpip``, ``bin/activate*``,
the site ``pip.conf``); here each file is named once (its folder resolved, so a venv's
``lib64 -> lib`` does not copy it twice; a symlink such as ``bin/python`` stays itself), and
``pyvenv.cfg`` is added: a venv re-created with other options is another env.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.env.interpreter import Interpreter


def protected_paths(interp: Interpreter) -> list[Path]:
    """The protected files of ``interp``'s env that exist now, each once."""
    from dtkguard.protected import protected_paths as table

    sites = list(dict.fromkeys(str(p) for p in (interp.purelib, interp.platlib) if p))
    scripts = str(interp.scripts or interp.prefix / "bin")
    names = [*table(str(interp.prefix), sites, scripts), str(interp.prefix / "pyvenv.cfg")]
    out: dict[str, None] = {}
    for name in names:
        folder = os.path.realpath(os.path.dirname(name))
        path = os.path.join(folder, os.path.basename(name))
        if os.path.lexists(path) and not os.path.isdir(path):
            out.setdefault(path, None)
    return [Path(p) for p in sorted(out)]
