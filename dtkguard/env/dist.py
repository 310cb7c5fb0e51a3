"""Installed distributions, read without importing them: ``*.dist-info`` and ``*.egg-info``
(directories and files), and the legacy layouts of setuptools: ``*.egg`` directories and zip
files, ``*.egg-link`` (develop installs) and the entries of ``easy-install.pth``. Every path is
resolved inside the target's root."""

from __future__ import annotations

import os
from functools import cached_property

from dtkguard.decision import canonical
from dtkguard.env.root import Root, child
from dtkguard.lightclass import field, record
from dtkguard.util.purepath import join, parent
from dtkguard.util.purepath import name as name_of
from dtkguard.util.safe_read import read_head
from dtkguard.util.text import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Protocol

    from dtkguard.env.json_shapes import DistDict
    from dtkguard.util.json_types import JSON

    class SiteReader(Protocol):
        """Reads a site's entries for `scan_site` (`dtkguard.env.scan_cache.SiteScan`)."""

        def read(self, root: Root, site: str, entry: str, group: str = "") -> Dist | str: ...

        def keep(self) -> None: ...


#: METADATA larger than this is read only this far (headers come first)
METADATA_LIMIT = 1 << 20
SMALL_FILE_LIMIT = 1 << 16
#: the headers of METADATA a `Dist` keeps: all that its readers use (a site scan's cache
#: keeps no more: `dtkguard.env.scan_cache`)
DIST_HEADERS = ("name", "version", "requires-dist", "requires-python")


@record
class Dist:
    """One installed distribution."""

    name: str
    version: str
    #: host path of the .dist-info / .egg-info directory (or .egg-info file), as text
    path_text: str
    #: host path of the site directory that holds it, as text
    site_text: str
    root: Root = field(repr=False, default_factory=Root)
    #: which interpreter prefix it belongs to (several under an image root)
    group: str = ""
    #: the METADATA headers it is read by (`DIST_HEADERS`), lower-cased
    headers: dict[str, list[str]] = field(default_factory=dict, repr=False)
    #: an ``.egg`` or a develop install (``.egg-link``, ``easy-install.pth``): on sys.path
    #: beside the site's own dists, so never hidden behind one of the same name
    legacy: bool = False

    if TYPE_CHECKING:  # a caller may give the paths as `Path`s (they are kept as text)

        def __init__(
            self,
            name: str,
            version: str,
            path_text: str | os.PathLike[str],
            site_text: str | os.PathLike[str],
            root: Root = ...,
            group: str = "",
            headers: dict[str, list[str]] = ...,
            legacy: bool = False,
        ) -> None: ...

    def __post_init__(self) -> None:
        if not isinstance(self.path_text, str) or not isinstance(self.site_text, str):
            self.path_text = os.fspath(self.path_text)
            self.site_text = os.fspath(self.site_text)

    @cached_property
    def key(self) -> str:
        return canonical(self.name)

    @property
    def path(self) -> Path:
        """Host path of the .dist-info / .egg-info directory (or .egg-info file)."""
        from pathlib import Path

        return Path(self.path_text)

    @property
    def site(self) -> Path:
        """Host path of the site directory that holds it."""
        from pathlib import Path

        return Path(self.site_text)

    @property
    def location(self) -> str:
        """The dist-info path as the target sees it."""
        return self.root.inner(self.path_text)

    def small_file(self, name: str) -> str | None:
        """The text of the small metadata file ``name`` of this dist (None: absent, unreadable)."""
        if not self.root.is_dir(self.path_text):
            return None
        try:
            return read_head(
                child(self.root, self.path_text, name),
                SMALL_FILE_LIMIT,
                follow=False,
                root=self.root,
            ).decode("utf-8", "replace")
        except OSError:
            return None

    @cached_property
    def installer(self) -> str | None:
        text = self.small_file("INSTALLER")
        return text.strip() or None if text is not None else None

    @cached_property
    def requested(self) -> bool:
        folder = self.path_text
        return self.root.is_dir(folder) and self.root.lexists(os.path.join(folder, "REQUESTED"))

    @cached_property
    def direct_url(self) -> dict[str, JSON] | None:
        text = self.small_file("direct_url.json")
        try:
            data = loads(text) if text else None
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    @property
    def record(self) -> Path | None:
        """Host path of RECORD, None when there is none."""
        from pathlib import Path

        path = self.record_text
        return None if path is None else Path(path)

    @property
    def record_text(self) -> str | None:
        """`record` as text (``str(self.record)``)."""
        if not self.root.is_dir(self.path_text):
            return None
        path = child(self.root, self.path_text, "RECORD")
        return path if self.root.is_file(path) else None

    @property
    def requires_dist(self) -> list[str]:
        return self.headers.get("requires-dist", [])

    @property
    def requires_python(self) -> str | None:
        values = self.headers.get("requires-python")
        return values[0] if values else None

    def to_dict(self) -> DistDict:
        return {
            "name": self.name,
            "version": self.version,
            "location": self.location,
            "installer": self.installer,
            "requested": self.requested,
            "direct_url": self.direct_url,
        }


def parse_headers(data: bytes) -> dict[str, list[str]]:
    """RFC 822 headers of METADATA/PKG-INFO, lower-cased keys, continuation lines joined."""
    end = data.find(b"\n\n")
    text = (data if end < 0 else data[:end]).decode("utf-8", "replace")
    headers: dict[str, list[str]] = {}
    last: list[str] | None = None
    for line in text.splitlines():
        if line[:1] in (" ", "\t") and last is not None:
            last[-1] += "\n" + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        last = headers.setdefault(key.strip().lower(), [])
        last.append(value.strip())
    return headers


def read_dist(root: Root, site: str | os.PathLike[str], entry: str, group: str = "") -> Dist | str:
    """Read one ``*.dist-info`` / ``*.egg-info`` entry; a string describes why it could not be."""
    site = os.fspath(site)
    if root.is_host and entry.endswith(".dist-info"):
        # the common case in one open: a directory with its METADATA; anything else (no such
        # file, a file, a link, unreadable) is read the long way, and answered as before
        path = join(site, entry)
        try:
            meta = os.path.join(path, "METADATA")
            data = read_head(meta, METADATA_LIMIT, follow=False, root=root)
        except OSError:
            pass
        else:
            return _from_metadata(data, path, site, root, group, site, entry)
    try:  # a symlink loop or a link that cannot be resolved inside the root is a warning
        path = child(root, site, entry)
        if root.is_dir(path):
            name = "METADATA" if entry.endswith(".dist-info") else "PKG-INFO"
            meta = child(root, path, name)
        else:
            meta = path  # an .egg-info file is the PKG-INFO itself
        data = read_head(meta, METADATA_LIMIT, follow=False, root=root)
    except OSError as exc:
        return f"{root.inner(join(site, entry))}: cannot read metadata: {exc.strerror or exc}"
    return _from_metadata(data, path, site, root, group, site, entry)


def _from_metadata(
    data: bytes, path: str, site: str, root: Root, group: str, base: str, entry: str
) -> Dist | str:
    """A Dist from METADATA/PKG-INFO bytes; a string (naming ``base/entry``) when Name or
    Version is missing."""
    return from_headers(parse_headers(data), path, site, root, group, base, entry)


def from_headers(
    headers: dict[str, list[str]],
    path: str,
    site: str,
    root: Root,
    group: str,
    base: str,
    entry: str,
) -> Dist | str:
    """A Dist of parsed METADATA/PKG-INFO headers (its `DIST_HEADERS`), as `_from_metadata`."""
    name = (headers.get("name") or [""])[0]
    version = (headers.get("version") or [""])[0]
    if not name or not version:
        return f"{root.inner(join(base, entry))}: broken metadata (no Name or Version)"
    kept = {k: headers[k] for k in DIST_HEADERS if k in headers}
    return Dist(name, version, path, site, root, group, kept)


def read_egg(
    root: Root, site: str | os.PathLike[str], egg: str | os.PathLike[str], group: str = ""
) -> Dist | str:
    """An ``.egg`` directory (``EGG-INFO/PKG-INFO``) or zip file, installed into ``site``."""
    site, egg = os.fspath(site), os.fspath(egg)
    if root.is_dir(egg):
        return (
            read_dist(root, egg, "EGG-INFO", group)
            if root.exists(join(egg, "EGG-INFO"))
            else (f"{root.inner(egg)}: an .egg without EGG-INFO")
        )
    import stat
    import zipfile

    try:
        fd = root.open(egg, os.O_RDONLY | os.O_NONBLOCK, follow=root.is_host)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return f"{root.inner(egg)}: not a regular file"
            with zipfile.ZipFile(fh) as zf, zf.open("EGG-INFO/PKG-INFO") as member:
                data = member.read(METADATA_LIMIT)
    except (OSError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        return f"{root.inner(egg)}: cannot read the zipped egg: {exc}"
    return _from_metadata(data, egg, site, root, group, parent(egg), name_of(egg))


#: a path line of a ``.pth`` or ``.egg-link`` longer than PATH_MAX is no path
MAX_PATH_LINE = 4096


def _confined(root: Root, base: str, text: str) -> str | None:
    """A path written in a ``.pth`` or ``.egg-link`` (relative to ``base``), inside the root."""
    from dtkguard.env.root import ConfinementError

    inner = text if text.startswith("/") else os.path.join(root.inner(base), text)
    try:
        return root.resolve_text(os.path.normpath(inner))
    except (ConfinementError, OSError):
        return None


def _legacy(root: Root, site: str, entry: str, group: str) -> list[Dist | str]:
    """Distributions an ``.egg``, ``.egg-link`` or ``easy-install.pth`` entry of a site adds."""
    path = join(site, entry)
    if entry.endswith(".egg"):
        return [read_egg(root, site, child(root, site, entry), group)]
    try:
        text = read_head(
            child(root, site, entry), SMALL_FILE_LIMIT, follow=False, root=root
        ).decode("utf-8", "replace")
    except OSError as exc:
        return [f"{root.inner(path)}: cannot read: {exc.strerror or exc}"]
    out: list[Dist | str] = []
    lines = [line.strip() for line in text.splitlines()]
    targets = lines[:1] if entry.endswith(".egg-link") else lines
    for line in targets:
        if not line or line.startswith(("#", "import ", "import\t")):
            continue
        if "\0" in line or len(line) > MAX_PATH_LINE:  # no path: Python skips it too
            out.append(f"{root.inner(path)}: a line that is no path (a NUL, or over 4 KiB)")
            continue
        where = _confined(root, site, line)
        if where is None:
            out.append(f"{root.inner(path)}: {line}: cannot be resolved inside the root")
        elif name_of(where).endswith(".egg"):
            out.append(read_egg(root, site, where, group))
        elif root.is_dir(where):  # a develop install: PROJECT/NAME.egg-info
            try:
                infos = sorted(n for n in root.listdir(where) if n.endswith(".egg-info"))
            except OSError:
                infos = []
            out += [read_dist(root, where, n, group) for n in infos]
    return out


def scan_site(
    root: Root, site: str | os.PathLike[str], group: str = "", reader: SiteReader | None = None
) -> tuple[list[Dist], list[str]]:
    """All distributions in one site directory, and warnings for what could not be read;
    ``reader``: reads its metadata folders instead of `read_dist` (a cache), told when done.

    Legacy installs (``.egg``, ``.egg-link``, ``easy-install.pth``) come after the site's own
    metadata, each once."""
    site = os.fspath(site)
    dists: list[Dist] = []
    warnings: list[str] = []
    try:
        entries = sorted(root.listdir(site))
    except OSError as exc:
        return [], [f"{root.inner(site)}: cannot list: {exc.strerror or exc}"]
    results: list[Dist | str] = []
    legacy: list[Dist | str] = []
    read = reader.read if reader is not None else read_dist
    for entry in entries:
        if entry.endswith((".dist-info", ".egg-info")):
            results.append(read(root, site, entry, group))
        elif entry.endswith((".egg", ".egg-link")) or entry == "easy-install.pth":
            legacy += _legacy(root, site, entry, group)
    if reader is not None:
        reader.keep()
    seen: set[str] = set()
    for result in legacy:
        if isinstance(result, Dist):
            result.legacy = True
    for result in results + legacy:
        if isinstance(result, Dist):
            if result.path_text in seen:
                continue
            seen.add(result.path_text)
            dists.append(result)
        else:
            warnings.append(result)
    return dists, warnings
