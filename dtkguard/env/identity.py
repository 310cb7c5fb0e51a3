"""The identity of a target for every report: kind, pid/container, root, python."""

from __future__ import annotations

import re
from typing import Any

_SITE_PYTHON = re.compile(r"/lib/python(\d\.\d+)/(?:site|dist)-packages$")


def identity(env: Any) -> dict:
    """``env.target`` completed with the root and, when the reader did not say, the Python
    version of the ``lib/pythonX.Y`` folder of its first site."""
    target = dict(env.target)
    target.setdefault("root", str(env.root.path))
    if not target.get("python_version"):
        for site in env.sites:
            if m := _SITE_PYTHON.search(str(site)):
                target["python_version"] = m.group(1)
                break
    return target
