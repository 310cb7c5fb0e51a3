"""The identity of a target: which one an Environment was read from, and its Python.

Every reader (`dtkguard.env.environment`, `.process_target`, `.container`) fills one
`TargetIdentity`; what a reader cannot tell is None, never dtkguard's own interpreter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from dtkguard.record import record

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from typing import Any

_SITE_PYTHON = r"/lib(?:64)?/python(\d\.\d+)/(?:site|dist)-packages$"  # compiled on first use

#: the keys a report prints for each kind, in order, after ``kind`` (what `check` shows)
_PRINTED: dict[str, tuple[str, ...]] = {
    "python": ("python", "prefix"),
    "path": ("path",),
    "root": ("root",),
    "pid": ("pid", "root", "python", "prefix", "python_version"),
    "container": ("pid", "root", "python", "prefix", "python_version", "container", "runtime"),
}


@record(frozen=True)
class TargetIdentity:
    """Which target was read (``kind``: python, path, root, pid, container) and what is known of
    its interpreter; None is unknown."""

    kind: str
    #: the host folder the target's files are read through ("/" for python and path)
    root: str = "/"
    #: the interpreter and its ``sys.prefix``, as the target sees them
    python: str | None = None
    prefix: str | None = None
    #: the site folders given with ``--path``, joined with ``os.pathsep``
    path: str | None = None
    pid: int | None = None
    container: str | None = None
    #: the container runtime asked (docker, podman)
    runtime: str | None = None
    #: ``X.Y`` of the target's Python
    python_version: str | None = None
    #: the marker values ``implementation_name``, ``sys_platform``, ``platform_machine``
    implementation: str | None = None
    platform: str | None = None
    machine: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in _PRINTED:
            raise ValueError(f"not a kind of target: {self.kind}")

    def to_json(self, *, complete: bool = False) -> dict[str, Any]:
        """The target as reports print it: the keys of its kind (an unknown one as ""), and with
        ``complete`` (audit) also the root and the Python version when known."""
        out: dict[str, Any] = {"kind": self.kind}
        for key in _PRINTED[self.kind]:
            value = getattr(self, key)
            out[key] = "" if value is None else value
        if complete:
            out.setdefault("root", self.root)
            if not out.get("python_version") and self.python_version:
                out["python_version"] = self.python_version
        return out

    @property
    def live(self) -> bool:
        """A running system (this machine, a process, a container) whose devices and processes
        can be asked, not an image on disk."""
        return self.kind != "root"

    def where(self) -> str:
        """The one value that names the target in a message (container, pid, folder, python)."""
        return str(getattr(self, self.kind) or self.root)

    def markers(self) -> dict[str, str]:
        """The PEP 508 marker values known of the target's Python (only those)."""
        known = {
            "python_version": self.python_version,
            "python_full_version": f"{self.python_version}.0" if self.python_version else None,
            "implementation_name": self.implementation,
            "sys_platform": self.platform,
            "platform_machine": self.machine,
        }
        return {k: v for k, v in known.items() if v}


def site_pythons(sites: Iterable[Any]) -> list[str]:
    """The ``X.Y`` of each ``lib/pythonX.Y/{site,dist}-packages`` among ``sites``, first seen
    first, each once."""
    found = (m.group(1) for site in sites if (m := re.search(_SITE_PYTHON, str(site))))
    return list(dict.fromkeys(found))


def first_site_python(sites: Iterable[Any]) -> str | None:
    """The Python of the first site folder named ``lib/pythonX.Y``; None when none is."""
    return next(iter(site_pythons(sites)), None)
