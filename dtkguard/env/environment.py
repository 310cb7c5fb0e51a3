"""An Environment: the distributions of one target, however it was reached.

Targets: the active interpreter, another interpreter (``--python``, asked only for
``sys.path``), site-packages folders (``--path``) or an image root (``--root``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator

from dtkguard.env.dist import Dist, read_egg, scan_site
from dtkguard.env.identity import TargetIdentity, first_site_python
from dtkguard.env.root import ConfinementError, Root
from dtkguard.errors import TargetError
from dtkguard.lightclass import field, record
from dtkguard.util.text import loads

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from typing import Any

#: where interpreters live inside an image, relative to its root
_ROOT_SITE_GLOBS = (
    "usr/lib/python3*/site-packages",
    "usr/lib/python3*/dist-packages",
    "usr/lib/python3/dist-packages",
    "usr/lib64/python3*/site-packages",
    "usr/local/lib/python3*/site-packages",
    "usr/local/lib/python3*/dist-packages",
    "opt/conda/lib/python3*/site-packages",
    "opt/conda/envs/*/lib/python3*/site-packages",
)
#: folders searched (to a small depth) for virtual environments (pyvenv.cfg)
_VENV_HOMES = ("opt", "root", "home", "srv", "app", "workspace", "venv", "usr/local")
_VENV_DEPTH = 3


@record
class Environment:
    """The distributions of a target, in sys.path order, plus what could not be read."""

    target: TargetIdentity
    root: Root
    #: host paths of its site folders, as text
    sites: list[str]
    dists: list[Dist] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: a process target: (its /proc/N, its start time), to tell whether it outlived the read
    process: tuple[str, str] | None = None

    def __iter__(self) -> Iterator[Dist]:
        return iter(self.dists)

    def get(self, name: str, group: str | None = None) -> Dist | None:
        from dtkguard.decision import canonical

        key = canonical(name)
        return next(
            (d for d in self.dists if d.key == key and (group is None or d.group == group)), None
        )

    def groups(self) -> dict[str, list[Dist]]:
        out: dict[str, list[Dist]] = {}
        for dist in self.dists:
            out.setdefault(dist.group, []).append(dist)
        return out


def _scan(root: Root, site: str, group: str) -> tuple[list[Dist], list[str]]:
    """A site directory, or a sys.path entry that is an ``.egg`` itself (directory or zip)."""
    from dtkguard.util import purepath

    if purepath.name(site).endswith(".egg"):
        egg = read_egg(root, purepath.parent(site), site, group)
        if isinstance(egg, Dist):
            egg.legacy = True
            return [egg], []
        return [], [egg]
    if not root.is_host:
        return scan_site(root, site, group)
    from dtkguard.env.scan_cache import SiteScan  # a host's parsed METADATA kept between runs

    return scan_site(root, site, group, SiteScan(site))


def collect_sites(
    env: Environment, sites: Iterable[tuple[str | os.PathLike[str], str]]
) -> Environment:
    """``env`` with the distributions of ``sites`` ((path, how found)), first on the path wins."""
    seen: set[tuple[str, str]] = set()
    paths: set[str] = set()
    for where, group in sites:
        site = os.fspath(where)
        dists, warnings = _scan(env.root, site, group)
        env.warnings += warnings
        env.sites.append(site)
        for dist in dists:
            if dist.path_text in paths:  # an egg found on sys.path and in easy-install.pth
                continue
            # shadowed further down sys.path, as pip sees it; eggs and develop installs are
            # always reported (a second torch on sys.path is damage wherever it sits)
            if (dist.key, group) in seen and not dist.legacy:
                continue
            seen.add((dist.key, group))
            paths.add(dist.path_text)
            env.dists.append(dist)
    return env


def from_paths(paths: Iterable[str | os.PathLike[str]]) -> Environment:
    """Site directories given directly (``--path``); their Python is the ``X.Y`` of the first
    one named ``lib/pythonX.Y``."""
    from dtkguard.util import purepath

    sites = []
    for raw in paths:
        path = purepath.pure_path(os.fspath(raw))
        if not purepath.is_dir(path):
            raise TargetError(f"not a directory: {path}")
        sites.append((purepath.resolve(path), ""))
    target = TargetIdentity(
        "path",
        path=os.pathsep.join(p for p, _ in sites),
        python_version=first_site_python(p for p, _ in sites),
    )
    return collect_sites(Environment(target, Root(), []), sites)


#: the head of every snippet run in a target: ``-I -S`` leaves ``sys.prefix`` at the base
#: interpreter's in a venv (``site`` sets it), so the snippet finds ``pyvenv.cfg`` as ``site``
#: does and sets the prefix itself; ``V`` is the venv's prefix ('' outside one), ``SYS`` its
#: ``include-system-site-packages``
_VENV_HEAD = (
    "import os,sys\n"
    "def _venv():\n"
    " d=os.path.dirname(os.path.abspath(sys.executable));p=os.path.dirname(d)\n"
    " for c in (os.path.join(d,'pyvenv.cfg'),os.path.join(p,'pyvenv.cfg')):\n"
    "  if os.path.isfile(c):\n"
    "   s='true'\n"
    "   with open(c,encoding='utf-8',errors='replace') as f:\n"
    "    for l in f:\n"
    "     k,e,v=l.partition('=')\n"
    "     if e and k.strip().lower()=='include-system-site-packages':s=v.strip().lower()\n"
    "   return p,s=='true'\n"
    " return '',True\n"
    "V,SYS=_venv()\n"
    "if V:sys.prefix=sys.exec_prefix=V\n"
)


def _run_in(python: str, code: str, what: str) -> bytes:
    """stdout of ``python -I -S -c code``; the only thing dtkguard runs of a target is a short
    snippet of its own: isolated (no ``PYTHON*`` variables, no user site) and without ``site``,
    so no ``.pth`` line and no ``sitecustomize`` of the target runs (`dtkguard.env.pth`)."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    try:
        return subprocess.run(
            [python, "-I", "-S", "-c", _VENV_HEAD + code],
            capture_output=True,
            timeout=60,
            env=env,
            check=True,
        ).stdout
    except FileNotFoundError:
        raise TargetError(f"no such interpreter: {python}") from None
    except PermissionError:
        raise TargetError(f"cannot run interpreter: {python}: permission denied") from None
    except subprocess.SubprocessError as exc:
        raise TargetError(f"{python} did not report {what}: {exc}") from None


def ask_interpreter(python: str, code: str, what: str = "its sys.path") -> Any:
    """Run ``python -c code`` (code prints one JSON value) and return the value."""
    try:
        return loads(_run_in(python, code, what).decode().strip().splitlines()[-1])
    except (UnicodeDecodeError, ValueError, IndexError) as exc:
        raise TargetError(f"{python} did not report {what}: {exc}") from None


#: the head of a snippet for :func:`ask_interpreter_fields`: ``put([str, ...])`` writes them
#: between two markers (anything else a start-up hook prints around them is ignored)
_FIELDS_HEAD = (
    "import os,sys\ndef put(v):sys.stdout.buffer.write("
    "b'\\0<dtkguard>\\0'+b'\\0'.join(map(os.fsencode,v))+b'\\0</dtkguard>\\0')\n"
)


def ask_interpreter_fields(python: str, code: str, what: str) -> list[str]:
    """Run ``python -c HEAD + code`` (code calls ``put`` with a list of strings) and return
    the strings. No ``json`` in the target: importing it would double the cost of the query
    (``json`` pulls ``re``); no path holds a NUL, and the bytes are the file system's."""
    out = _run_in(python, _FIELDS_HEAD + code, what)
    _, start, rest = out.rpartition(b"\0<dtkguard>\0")
    body, end, _ = rest.partition(b"\0</dtkguard>\0")
    if not start or not end:
        raise TargetError(f"{python} did not report {what}: {out[-200:]!r}")
    return [os.fsdecode(v) for v in body.split(b"\0")]


#: what `describe_python` asks: sys.prefix, the marker values of the interpreter, sys.path
#: without site (its length first), then the site directories ``site`` would add, in order
#: (the venv's, the user's when ``site`` would enable it, the prefixes')
_DESCRIBE = (
    "import site\n"
    "u=(not V or SYS) and not os.environ.get('PYTHONNOUSERSITE') and os.getuid()==os.geteuid()"
    " and os.getgid()==os.getegid()\n"
    "b=[V,sys.base_prefix,sys.base_exec_prefix] if V and SYS else [V] if V else "
    "[sys.prefix,sys.exec_prefix]\n"
    "s=(site.getsitepackages([V]) if V else [])+([site.getusersitepackages()] if u else [])"
    "+site.getsitepackages(b)\n"
    "put([sys.prefix,'%d.%d'%sys.version_info[:2],sys.implementation.name,sys.platform,"
    "os.uname().machine,str(len(sys.path)),*sys.path,*s])"
)


def describe_python(python: str | None = None) -> tuple[list[str], TargetIdentity]:
    """(``sys.path``, identity) of an interpreter (None: the running one); of another, only
    `_DESCRIBE` runs, and only when its answer is not kept (`dtkguard.env.interp_cache`)."""
    if python is None:
        facts = [
            sys.prefix,
            f"{sys.version_info[0]}.{sys.version_info[1]}",
            sys.implementation.name,
            sys.platform,
            os.uname().machine,
            *sys.path,
        ]
        python = sys.executable
    else:
        from dtkguard.env.interp_cache import cached

        asked = python
        facts = cached(python, lambda: ask_interpreter_fields(asked, _DESCRIBE, "its sys.path"))
        facts = facts[:5] + _site_path(python, facts[5:])
    if len(facts) < 5:
        raise TargetError(f"{python} did not report its sys.path: {len(facts)} values")
    prefix, version, implementation, platform, machine, *paths = facts
    target = TargetIdentity(
        "python",
        python=python,
        prefix=prefix,
        python_version=version,
        implementation=implementation,
        platform=platform,
        machine=machine,
    )
    return [p for p in paths if p], target


def _site_path(python: str, values: list[str]) -> list[str]:
    """``sys.path`` from what `_DESCRIBE` reported: its path without site, then the site
    directories with their ``.pth`` path lines added by dtkguard (`dtkguard.env.pth`)."""
    from dtkguard.env.pth import site_path

    try:
        count = int(values[0])
    except (IndexError, ValueError):
        raise TargetError(f"{python} did not report its sys.path") from None
    return site_path(values[1 : 1 + count], values[1 + count :])


def python_sys_path(python: str) -> tuple[list[str], str]:
    """Ask an interpreter for ``sys.path`` and ``sys.prefix``; nothing else runs."""
    paths, target = describe_python(python)
    return paths, str(target.prefix)


def from_python(python: str | None = None) -> Environment:
    """The environment of an interpreter; None means the running one."""
    paths, target = describe_python(python)
    from dtkguard.util.purepath import pure_path

    sites = [(pure_path(p), "") for p in paths if os.path.isdir(p) or p.endswith(".egg")]
    return collect_sites(Environment(target, Root(), []), sites)


def active_python() -> str | None:
    """The interpreter of the activated venv/conda env when it is not dtkguard's own."""
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = os.environ.get(var)
        if prefix and os.path.realpath(prefix) != os.path.realpath(sys.prefix):
            from dtkguard.util.purepath import exists, join

            exe = join(prefix, "bin", "python")
            if exists(exe):
                return exe
    return None


def root_sites(root: Root) -> list[tuple[str, str]]:
    """Every site directory of an image root, each with its interpreter prefix (inside root)."""
    found: dict[str, tuple[str, str]] = {}

    def add(inner: str) -> None:
        try:
            host = root.resolve_text(inner)
        except ConfinementError:
            return
        if root.is_dir(host) and host not in found:
            prefix = inner.split("/lib/")[0] or "/"
            found[host] = (host, prefix)

    for pattern in _ROOT_SITE_GLOBS:
        for inner in root.glob(pattern):
            add(inner)
    for cfg in _find_venvs(root):
        venv = os.path.dirname(cfg).lstrip("/")
        for inner in root.glob(f"{venv}/lib/python3*/site-packages"):
            add(inner)
    return list(found.values())


def _find_venvs(root: Root) -> list[str]:
    """Inner paths of ``pyvenv.cfg`` files under the usual homes, every step inside the root."""
    hits: list[str] = []
    skip = ("proc", "sys", "dev", "lib", "share")
    for home in _VENV_HOMES:
        for inner in root.walk(home, _VENV_DEPTH, prune=skip, leaf="pyvenv.cfg"):
            if root.is_regular(os.path.join(root.top, inner.lstrip("/"), "pyvenv.cfg")):
                hits.append(os.path.join(inner, "pyvenv.cfg"))
    return sorted(set(hits))


def from_root(path: str | os.PathLike[str]) -> Environment:
    """Every interpreter's site directories under an image root, confined to it; its Python is
    the ``X.Y`` of the first site named ``lib/pythonX.Y`` (of an image with several, the first:
    `site_pythons` lists them all)."""
    root = Root(path)
    from dtkguard.util.purepath import is_dir

    if not is_dir(root.top):
        raise TargetError(f"not a directory: {root.top}")
    sites = root_sites(root)
    target = TargetIdentity(
        "root", root=root.top, python_version=first_site_python(p for p, _ in sites)
    )
    return collect_sites(Environment(target, root, []), sites)


def prefix_of(site_inner: str) -> str:
    """The environment prefix of a site dir: ``/v`` for ``/v/lib/python3.10/site-packages``."""
    parts = [p for p in site_inner.split("/") if p]
    if len(parts) >= 3 and parts[-3] in ("lib", "lib64") and parts[-2].startswith("python"):
        return "/" + "/".join(parts[:-3])
    return "/" + "/".join(parts[:-1]) if len(parts) > 1 else "/"
