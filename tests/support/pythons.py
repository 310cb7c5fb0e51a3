"""Other Python interpreters on this machine (PATH, else pyenv's versions), for recipe tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def _works(exe: str, version: str) -> bool:
    try:
        out = subprocess.run(
            [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except OSError:
        return False
    return out.returncode == 0 and out.stdout.strip() == version


def find_python(version: str) -> str | None:
    """A working ``pythonX.Y`` executable (a pyenv shim that cannot run it does not count)."""
    candidates = [shutil.which(f"python{version}")]
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates += sorted(
        map(str, Path(root).glob(f"versions/{version}.*/bin/python{version}")), reverse=True
    )
    return next((c for c in candidates if c and _works(c, version)), None)
