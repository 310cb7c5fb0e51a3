"""The identity of a target for every report: kind, pid/container, root, python."""

from __future__ import annotations

import re
from typing import Any

_SITE_PYTHON = re.compile(r"/lib/python(\d\.\d+)/(?:site|dist)-packages$")


def python_version(env: Any) -> str | None:
    """The target's Python (``X.Y``): what its reader said, else the ``lib/pythonX.Y`` folder of
    its first site that has one; None when neither tells."""
    said = env.target.get("python_version")
    if said:
        return str(said)
    for site in env.sites:
        if m := _SITE_PYTHON.search(str(site)):
            return m.group(1)
    return None


def identity(env: Any) -> dict:
    """``env.target`` completed with the root and, when the reader did not say, the Python
    version of `python_version`."""
    target = dict(env.target)
    target.setdefault("root", str(env.root.path))
    if not target.get("python_version"):
        version = python_version(env)
        if version:
            target["python_version"] = version
    return target
