"""A running process as a target: its interpreter and site-packages, read through /proc/N.

Nothing of the process runs. The interpreter comes from ``/proc/N/cmdline`` (argv[0], which keeps
a venv's ``bin/python`` that ``/proc/N/exe`` resolves away), ``VIRTUAL_ENV`` in
``/proc/N/environ``, ``/proc/N/exe`` and the ``libpython``/``site-packages`` files in
``/proc/N/maps``; its prefix and version from ``pyvenv.cfg`` and ``lib/pythonX.Y``. Every path is
resolved inside ``/proc/N/root`` with `Root`, absolute symlinks included (syft#3396).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dtkguard.env import procfiles
from dtkguard.env.environment import Environment, collect_sites
from dtkguard.env.identity import TargetIdentity, first_site_python
from dtkguard.env.root import ConfinementError, Root
from dtkguard.errors import TargetError
from dtkguard.util.safe_read import read_head

_PY_NAME = re.compile(r"^python(\d(?:\.\d+)?)?$")
_LIBPY = re.compile(r"/libpython(\d\.\d+)[^/]*\.so")
_SITE_IN_MAPS = re.compile(r"(/\S*/(?:site|dist)-packages)/")


def _cfg(root: Root, prefix: str) -> dict[str, str] | None:
    """``pyvenv.cfg`` of a prefix as a dict, None when it is not a venv."""
    try:
        data = read_head(root.resolve(f"{prefix}/pyvenv.cfg"), 1 << 16, follow=False, root=root)
    except (OSError, ConfinementError):
        return None
    out = {}
    for line in data.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


def _versions(root: Root, prefix: str, hint: str | None) -> list[str]:
    """``X.Y`` candidates: the hint first, then every ``lib/pythonX.Y`` under the prefix."""
    found = [hint] if hint else []
    for inner in root.glob(f"{prefix.lstrip('/')}/lib/python3.*"):
        version = inner.rsplit("python", 1)[1]
        if re.fullmatch(r"\d\.\d+", version) and version not in found:
            found.append(version)
    return found


def _interpreters(proc: str, cwd: str, environ: dict[str, str]) -> list[str]:
    """Inner paths the process's interpreter may have been started as, best first."""
    out: list[str] = []
    argv = procfiles.cmdline(proc)
    if argv and argv[0]:
        arg0 = argv[0]
        if "/" in arg0:
            out.append(arg0 if arg0.startswith("/") else os.path.normpath(f"{cwd}/{arg0}"))
        elif _PY_NAME.match(arg0):
            for entry in environ.get("PATH", "").split(":"):
                if entry.startswith("/"):
                    out.append(f"{entry}/{arg0}")
    if environ.get("VIRTUAL_ENV"):
        out.append(environ["VIRTUAL_ENV"].rstrip("/") + "/bin/python")
    exe = procfiles.link(proc, "exe")
    if exe:
        out.append(exe)
    return out


def _maps(proc: str) -> tuple[str | None, list[str]]:
    """The libpython version and the site directories of files mapped by the process."""
    raw = procfiles.read(proc, "maps", 8 << 20)
    if raw is None:
        return None, []
    text = raw.decode("utf-8", "replace")
    lib = _LIBPY.search(text)
    sites = list(dict.fromkeys(m.group(1) for m in _SITE_IN_MAPS.finditer(text)))
    return (lib.group(1) if lib else None), sites


def from_pid(pid: int | str, proc_root: str = "/proc") -> Environment:
    """The Environment of process ``pid``; `TargetError` (exit 3) when it cannot be read. Its
    Python is the interpreter's ``lib/pythonX.Y``, else the mapped libpython's, else the first
    site folder's; its platform is Linux (it has a /proc)."""
    pid = _pid(pid)
    proc = f"{proc_root}/{pid}"
    started = procfiles.start_time(proc)
    root = _readable_root(proc, pid)
    environ = procfiles.environ(proc) or {}
    cwd = procfiles.link(proc, "cwd") or "/"
    libver, mapped_sites = _maps(proc)
    prefix, python, version = _interpreter(root, proc, cwd, environ, libver)
    sites = _sites(root, environ, prefix, version, mapped_sites)
    if not sites:
        raise TargetError(
            f"process {pid} does not look like a Python process (no interpreter found)"
        )
    found: list[tuple[Path, str]] = []
    for inner in dict.fromkeys(sites):
        try:
            host = root.resolve(inner)
        except (ConfinementError, OSError):
            continue
        if root.is_dir(host):
            found.append((host, ""))
    target = TargetIdentity(
        "pid",
        root=str(root.path),
        python=python,
        prefix=prefix,
        pid=pid,
        python_version=version or libver or first_site_python(host for host, _ in found),
        platform="linux",
    )
    env = collect_sites(Environment(target, root, []), found)
    env.process = (proc, started) if started else None
    return env


def still_running(env: Environment) -> None:
    """`TargetError` (exit 3) when the process ``env`` was read from has exited (or its pid is
    another process's) since it was opened: what was read of it may be half gone, and a report
    of files that vanished with it would be false findings."""
    if env.process is None:
        return
    proc, started = env.process
    if procfiles.start_time(proc) != started:
        pid = os.path.basename(proc)
        raise TargetError(f"process {pid} exited while it was read: no report of it")


def _pid(pid: int | str) -> int:
    try:
        number = int(pid)
        if number <= 0:
            raise ValueError
    except ValueError:
        raise TargetError(f"not a process id: {pid}") from None
    return number


def _readable_root(proc: str, pid: int) -> Root:
    """The process's root filesystem, or `TargetError` naming why it cannot be listed."""
    if not os.path.isdir(proc):
        raise TargetError(f"no such process: {pid}")
    root = Root(f"{proc}/root")
    try:
        os.listdir(root.path)
    except PermissionError:
        raise TargetError(
            f"cannot read process {pid}: permission denied on {root.path} "
            "(run as its user or as root)"
        ) from None
    except OSError as exc:
        raise TargetError(f"cannot read process {pid}: {exc.strerror or exc}") from None
    return root


def _interpreter(
    root: Root, proc: str, cwd: str, environ: dict[str, str], libver: str | None
) -> tuple[str | None, str | None, str | None]:
    """(prefix, interpreter, X.Y) of the first candidate interpreter that exists in the root
    and has a ``lib/pythonX.Y``; Nones when none does."""
    for exe in _interpreters(proc, cwd, environ):
        match = _PY_NAME.match(os.path.basename(exe))
        if not match:
            continue
        candidate = os.path.dirname(os.path.dirname(exe)) or "/"
        try:
            if not root.exists(root.resolve(exe)):
                continue
        except (ConfinementError, OSError):
            continue
        cfg = _cfg(root, candidate)
        hint = (cfg or {}).get("version_info") or (cfg or {}).get("version") or match.group(1)
        hint = ".".join(hint.split(".")[:2]) if hint and "." in hint else libver
        versions = _versions(root, candidate, hint)
        if versions:
            return candidate, exe, versions[0]
    return None, None, None


def _sites(
    root: Root,
    environ: dict[str, str],
    prefix: str | None,
    version: str | None,
    mapped_sites: list[str],
) -> list[str]:
    """Inner paths of the process's site folders: ``$PYTHONPATH``, the prefix's site-packages
    (and the base's, for a venv that includes them), then those ``/proc/N/maps`` shows."""
    sites = [e for e in environ.get("PYTHONPATH", "").split(":") if e.startswith("/")]
    if prefix and version:
        cfg = _cfg(root, prefix)
        sites.append(f"{prefix}/lib/python{version}/site-packages")
        if cfg is not None:
            if cfg.get("include-system-site-packages", "").lower() == "true" and cfg.get("home"):
                base = os.path.dirname(cfg["home"].rstrip("/")) or "/"
                sites += _base_sites(base, version)
        else:
            sites += _base_sites(prefix, version)[1:]
    sites += [s for s in mapped_sites if s not in sites]
    return sites


def _base_sites(prefix: str, version: str) -> list[str]:
    """Site directories of a base interpreter (CPython, Debian, conda layouts)."""
    prefix = prefix.rstrip("/") or ""
    return [
        f"{prefix}/lib/python{version}/site-packages",
        f"{prefix}/local/lib/python{version}/dist-packages",
        f"{prefix}/lib/python3/dist-packages",
        f"{prefix}/lib/python{version}/dist-packages",
    ]
