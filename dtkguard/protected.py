"""The protected set: the files of an environment the guard stands on, defined once.

Standard library only, no dtkguard imports: dtkguard's library imports it (``guard install``,
``check``, restore, the store's digests) and ``guard install`` copies it beside the pip hook as
``_dtkguard_protected.py``, as it does with ``decision.py``.

What is protected, and who alone may write it (the *writer*, a canonical dist name, or None):

* the guard's layers in every site directory: ``dtkguard-pip-hook.pth`` and the modules
  ``_dtkguard_*.py`` (hook, finder, tripwire, the copies of ``decision.py``, ``elf.py``,
  ``records.py``, ``sitefacts.py``, ``buildwatch.py``, ``pipoverride.py`` and this module; the
  whole ``_dtkguard`` prefix is reserved) and their byte code (any ``__pycache__/_dtkguard*``
  file): nobody;
* pip itself: every file of pip's RECORD, anything under ``pip/`` and ``pip-*.dist-info`` in a
  site directory (a module added there shadows what the hook wraps): only a ``pip`` wheel, and
  only a pip the hook supports (:data:`SUPPORTED_PIP`);
* the scripts directory: ``python*`` (nobody), ``pip*`` (pip), ``activate*`` (nobody),
  ``dtkpip``/``dtkuv``/``dtkguard`` (dtkguard), and ``uv`` while it is dtkguard's shim (nobody);
* the site-level ``pip.conf`` of the prefix and the guard's own state files the caller names:
  nobody.

Paths are compared as given and after ``realpath``: both spellings of a protected file are in
the table, and callers resolve what they judge.
"""

from __future__ import annotations

import fnmatch
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

#: the guard's module names in a site directory (their ``.py`` and byte code are protected)
GUARD_MODULES = (
    "_dtkguard_pip_hook",
    "_dtkguard_decision",
    "_dtkguard_tripwire",
    "_dtkguard_finder",
    "_dtkguard_protected",
    "_dtkguard_elf",
    "_dtkguard_records",
    "_dtkguard_sitefacts",
    "_dtkguard_buildwatch",
    "_dtkguard_pipoverride",
)
GUARD_PTH = "dtkguard-pip-hook.pth"
#: the copy of this module beside the hook
COPY_NAME = "_dtkguard_protected.py"
#: pip releases the hook knows how to wrap: [oldest, first unsupported)
SUPPORTED_PIP = ((22, 2), (27, 0))
#: the uv shim's marker (the same text as ``dtkguard.guard.uvplan.SHIM_MARKER``)
SHIM_MARKER = "dtkguard-uv-shim"
#: (pattern of a file name in the scripts directory, writer)
SCRIPTS: tuple[tuple[str, str | None], ...] = (
    ("python", None),
    ("python*", None),
    ("pip", "pip"),
    ("pip*", "pip"),
    ("activate", None),
    ("activate*", None),
    ("Activate.ps1", None),
    ("deactivate*", None),
    ("dtkpip", "dtkguard"),
    ("dtkuv", "dtkguard"),
    ("dtkguard", "dtkguard"),
)
#: what each kind of protected file is, for messages and docs
KINDS = {
    "guard": "a file of the dtkguard guard itself",
    "pip": "a file of pip itself (the guard lives inside pip)",
    "interpreter": "the environment's interpreter or activation script",
    "uv-shim": "the uv shim of the guard",
    "dtkguard": "a dtkguard command of the environment",
}
_WRITER = {"pip": "pip", "dtkguard": "dtkguard"}
#: every name the guard may ever put in a site directory starts so (reserved)
GUARD_PREFIX = "_dtkguard"


_NORM: dict[str, str] = {}


def _norm(path: str | os.PathLike[str]) -> str:
    path = str(path)
    out = _NORM.get(path)
    if out is None:
        out = _NORM[path] = os.path.normpath(os.path.abspath(path))
    return out


class _Resolver:
    """``realpath`` for the paths of one table, each folder resolved once: its parent's answer
    reused, then one ``lstat`` of its own last part; the symlinks among a folder's files listed
    once (``scandir``). Invariant: ``folder(p) == os.path.realpath(p)`` for a normalised
    absolute ``p`` (every part of a resolved folder is a real folder), as of this table."""

    def __init__(self) -> None:
        self.dirs: dict[str, str] = {}
        self.links: dict[str, set[str]] = {}

    def folder(self, path: str) -> str:
        """``realpath`` of the normalised absolute folder ``path``."""
        real = self.dirs.get(path)
        if real is None:
            parent, name = os.path.split(path)
            if not name or parent == path:
                real = os.path.realpath(path)
            else:
                real = os.path.join(self.folder(parent), name)
                if os.path.islink(real):
                    real = os.path.realpath(real)
            self.dirs[path] = real
        return real

    def is_link(self, folder: str, name: str) -> bool:
        """Is ``name`` in the resolved ``folder`` a symlink (the folder listed once)?"""
        links = self.links.get(folder)
        if links is None:
            links = self.links[folder] = set()
            try:
                with os.scandir(folder) as entries:
                    links.update(e.name for e in entries if e.is_symlink())
            except OSError:
                pass
        return name in links

    def both(self, path: str | os.PathLike[str], norm: bool = True) -> set[str]:
        """The path as given (normalised unless ``norm`` is False: it is, and absolute) and
        resolved (its folder resolved; the last part too when it is a symlink)."""
        given = _norm(path) if norm else str(path)
        cut = given.rfind("/")
        tail = given[cut + 1 :]
        if cut < 0 or not tail or tail in (".", ".."):  # a root: resolved whole
            return {given, os.path.realpath(given)}
        real_head = self.folder(given[:cut] or "/")
        real = real_head + tail if real_head.endswith("/") else real_head + "/" + tail
        if self.is_link(real_head, tail):
            return {given, real, os.path.realpath(real)}
        return {given, real}


def _normal(path: str) -> str:
    """``path`` (absolute, joined from a normalised folder and a RECORD row) normalised:
    as given when no part of it can be ``.``, ``..`` or empty."""
    if "/." in path or "//" in path or path.endswith("/"):
        return os.path.normpath(path)
    return path


def pip_version_supported(version: str | None) -> bool:
    """Is pip ``version`` (text) one the hook wraps? Unparsable text is not."""
    parts: list[int] = []
    for piece in str(version or "").split("+", 1)[0].split("."):
        digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
        if digits != piece:
            break
    if len(parts) < 2:
        return False
    low, high = SUPPORTED_PIP
    return low <= tuple(parts[:2]) < high


def _pip_record(site: str, resolver: _Resolver | None = None) -> set[str]:
    """Absolute paths of the files pip's installed RECORD lists in ``site`` (and the
    dist-info folder itself), as given and resolved."""
    resolver = resolver or _Resolver()
    site = _norm(site)
    out: set[str] = set()
    try:
        names = os.listdir(site)
    except OSError:
        return out
    for entry in names:
        if not (entry.startswith("pip-") and entry.endswith(".dist-info")):
            continue
        info = os.path.join(site, entry)
        out |= resolver.both(info)
        try:
            with open(os.path.join(info, "RECORD"), encoding="utf-8") as fh:
                rows = fh.read().splitlines()
        except OSError:
            continue
        for row in rows:
            rel = row.rsplit(",", 2)[0] if row.count(",") >= 2 else row
            if rel:
                path = rel if rel.startswith("/") else site + "/" + rel
                out |= resolver.both(_normal(path), norm=False)
    return out


def is_shim(path: str | os.PathLike[str]) -> bool:
    """Is ``path`` dtkguard's uv shim (a small script with the marker)?"""
    try:
        with open(path, "rb") as fh:
            return SHIM_MARKER.encode() in fh.read(4096)
    except OSError:
        return False


def protected_paths(
    prefix: str, site_dirs: Iterable[str], scripts: str, guard_files: Iterable[str] = ()
) -> dict[str, str]:
    """{absolute path: kind} of the protected files of one environment that exist now (plus
    the guard's layer files the caller names in ``guard_files``, existing or not).

    ``prefix``: ``sys.prefix``; ``site_dirs``: its site-packages directories; ``scripts``: its
    scripts directory (``bin``). The kinds are the keys of :data:`KINDS`."""
    table: dict[str, str] = {}
    resolver = _Resolver()  # one per table: a folder swapped for a symlink since is seen

    def add(path: str, kind: str) -> None:
        for p in resolver.both(path):
            table.setdefault(p, kind)

    bin_dir = _norm(scripts)

    for site in site_dirs:
        for name in (*(m + ".py" for m in GUARD_MODULES), GUARD_PTH):
            add(os.path.join(site, name), "guard")
        cache = os.path.join(site, "__pycache__")
        for entry in _listdir(cache):
            if entry.startswith(GUARD_PREFIX):
                add(os.path.join(cache, entry), "guard")
        for path in _pip_record(site, resolver):
            if not table.get(path) and (path.rpartition("/")[0] or "/") != bin_dir:
                table[path] = "pip"
    for entry in _listdir(scripts):
        kind = script_kind(entry, os.path.join(scripts, entry))
        if kind is not None:
            add(os.path.join(scripts, entry), kind)
    add(os.path.join(prefix, "pip.conf"), "guard")
    for path in guard_files:
        add(path, "guard")
    return table


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def script_kind(name: str, path: str | None = None) -> str | None:
    """The kind of the scripts-directory file ``name`` (None: not protected). ``uv`` is
    protected while ``path`` is dtkguard's shim."""
    if name == "uv":
        return "uv-shim" if path is not None and is_shim(path) else None
    for pattern, writer in SCRIPTS:
        if fnmatch.fnmatchcase(name, pattern):
            return "interpreter" if writer is None else writer
    return None


def protected_kind(
    path: str,
    site_dirs: Iterable[str],
    scripts: str | None,
    table: Mapping[str, str] | None = None,
) -> str | None:
    """The kind of protected file ``path`` (absolute, normalised; pass the resolved path too)
    is, by name (the rules above, for files that do not exist yet) or by ``table``
    (:func:`protected_paths`); None when it is not protected."""
    sites = tuple(map(str, site_dirs))
    last = _LAST_FINDER.get("last")
    if not (last and last[0] == sites and last[1] == scripts and last[2] is table):
        last = _LAST_FINDER["last"] = (sites, scripts, table, kind_finder(sites, scripts, table))
    return last[3](path)


if TYPE_CHECKING:
    _Finder = tuple[
        tuple[str, ...], "str | None", "Mapping[str, str] | None", "Callable[[str], str | None]"
    ]
#: {"last": (site dirs, scripts, table, their `kind_finder`)} of the last `protected_kind` call
_LAST_FINDER: dict[str, _Finder] = {}


def kind_finder(
    site_dirs: Iterable[str],
    scripts: str | None,
    table: Mapping[str, str] | None = None,
) -> Callable[[str], str | None]:
    """`protected_kind` of one environment, its folders normalised once: for many paths."""
    sites = [(s, s + "/", s + "/__pycache__") for s in map(_norm, site_dirs)]
    bin_dir = _norm(scripts) if scripts else None
    known = table if table is not None else {}
    # by name, a file's kind is its folder's unless the folder is a site's top, its
    # __pycache__ or the scripts folder (where it is the file's own name)
    special = {bin_dir, *(site for site, _, _ in sites), *(cache for _, _, cache in sites)}
    by_folder: dict[str, str | None] = {}

    def kind(path: str) -> str | None:
        found = known.get(path)
        if found is not None:
            return found
        head, _, base = path.rpartition("/")
        if head in by_folder:
            return by_folder[head]
        found = by_name(path, head, base)
        if head not in special:
            by_folder[head] = found
        return found

    def by_name(path: str, head: str, base: str) -> str | None:
        for site, inside, cache in sites:
            if head == site and (base == GUARD_PTH or base.startswith(GUARD_PREFIX)):
                return "guard"
            if head == cache and base.startswith(GUARD_PREFIX):
                return "guard"
            if path.startswith(inside):
                top = path[len(inside) :].partition("/")[0]
                if top == "pip" or (top.startswith("pip-") and top.endswith(".dist-info")):
                    return "pip"
        if head == bin_dir:
            return script_kind(base, path)
        return None

    return kind


def may_write(kind: str, dist: str, version: str | None = None) -> bool:
    """May distribution ``dist`` (canonical name) at ``version`` write a protected file of
    ``kind``? pip's files: only a pip the hook supports (an unknown version is not)."""
    writer = _WRITER.get(kind)
    if writer is None or writer != dist:
        return False
    return writer != "pip" or pip_version_supported(version)
