"""Where candidates come from: find-links folders and simple indexes (PEP 503 HTML, PEP 691 JSON).

Each source lists the wheels of a project (:class:`FileLink`) and serves their core metadata:
from the wheel zip for a folder, from the PEP 658/714 ``.metadata`` file for an index that offers
one (no wheel download), else by downloading the wheel. Only wheels are considered.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urldefrag, urljoin

from dtkguard.decision import canonical
from dtkguard.errors import InputError
from dtkguard.resolve.http import JSON_ACCEPT, Fetcher

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from packaging.version import Version


class FileLink:
    """One wheel file of one project version in one source (equal only to itself).

    A plain class, not a dataclass: building the sources (what a cached lock checks) then
    imports neither dataclasses nor packaging, and a link is made as fast as one."""

    def __init__(  # noqa: PLR0913  (a link's fields, as a dataclass's __init__ takes them)
        self,
        project: str,
        version: Version,
        filename: str,
        source: Source,
        url: str | None = None,
        path: Path | None = None,
        hashes: dict[str, str] | None = None,
        size: int | None = None,
        upload_time: str | None = None,
        requires_python: str | None = None,
        tags: frozenset[str] = frozenset(),
        metadata_url: str | None = None,
        metadata_hashes: dict[str, str] | None = None,
        yanked: bool = False,
        yank_reason: str = "",
    ) -> None:
        self.project = project
        self.version = version
        self.filename = filename
        self.source = source
        self.url = url
        self.path = path
        self.hashes: dict[str, str] = {} if hashes is None else hashes
        self.size = size
        self.upload_time = upload_time
        self.requires_python = requires_python
        self.tags = tags
        self.metadata_url = metadata_url
        self.metadata_hashes = metadata_hashes
        self.yanked = yanked
        #: PEP 592: the reason the index gave for the yank ("" when none)
        self.yank_reason = yank_reason

    @property
    def vendor(self) -> bool:
        return self.source.vendor

    @property
    def is_sdist(self) -> bool:
        return not self.filename.endswith(".whl")

    def __repr__(self) -> str:
        return f"<{self.filename} from {self.source.label}>"


def _parse_wheel(filename: str) -> tuple[str, Version, frozenset[str]] | None:
    """(project, version, tags) of a wheel or an sdist (no tags) file name, else None."""
    from packaging.utils import (
        InvalidSdistFilename,
        InvalidWheelFilename,
        parse_sdist_filename,
        parse_wheel_filename,
    )

    if filename.endswith((".tar.gz", ".zip")):
        try:
            name, version = parse_sdist_filename(filename)
        except (InvalidSdistFilename, ValueError):
            return None
        return str(name), version, frozenset()
    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, ValueError):
        return None
    return str(name), version, frozenset(str(t) for t in tags)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Source:
    """A place that lists wheels. ``vendor`` sources hold the policy's vendor builds."""

    label: str = ""
    vendor: bool = False
    index_url: str | None = None

    def links(self, project: str) -> list[FileLink]:
        raise NotImplementedError

    def prefetch(self, project: str) -> None:
        """Start listing ``project`` in the background (no-op by default)."""

    def metadata(self, link: FileLink) -> bytes:
        raise NotImplementedError

    def complete(self, link: FileLink) -> None:
        """Fill in ``hashes`` and ``size`` when the listing did not carry them."""

    @contextmanager
    def local_file(self, link: FileLink) -> Iterator[Path]:
        """The file of ``link`` on disk for as long as the block runs."""
        if link.path is None:
            raise InputError(f"{link.filename} has no file here", self.label)
        yield link.path


class FindLinks(Source):
    """A flat folder of wheels (``--find-links DIR``); paths are kept as given for the lock."""

    def __init__(self, path: str | os.PathLike[str], vendor: bool = False) -> None:
        self.path = Path(path)
        self.label = str(path)
        self.vendor = vendor
        self._projects: dict[str, list[FileLink]] | None = None
        self._lock = threading.Lock()

    def _scan(self) -> dict[str, list[FileLink]]:
        with self._lock:
            if self._projects is None:
                projects: dict[str, list[FileLink]] = {}
                try:
                    names = sorted(os.listdir(self.path))
                except OSError as exc:
                    raise InputError(
                        f"cannot read find-links folder: {exc.strerror or exc}",
                        str(self.path),
                        field="--find-links",
                    ) from None
                for name in names:
                    parsed = _parse_wheel(name)
                    if parsed is None:
                        continue
                    project, version, tags = parsed
                    projects.setdefault(project, []).append(
                        FileLink(project, version, name, self, path=self.path / name, tags=tags)
                    )
                self._projects = projects
            return self._projects

    def links(self, project: str) -> list[FileLink]:
        return self._scan().get(project, [])

    def fingerprint(self) -> list[list[Any]]:
        """Every entry of the folder with what tells a changed file: name, size, mtime, ctime
        (no user can set it back: a file rewritten in place with its size, mtime and inode
        kept has a new one), inode and device; followed through symlinks."""
        out: list[list[Any]] = []
        folder = os.fspath(self.path)
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            return [["unreadable", str(exc)]]
        for name in names:
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                out.append([name, None])
                continue
            out.append([name, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev])
        return out

    def metadata(self, link: FileLink) -> bytes:
        from dtkguard.resolve.lazywheel import read_zip_metadata

        assert link.path is not None
        return read_zip_metadata(link.path)

    def complete(self, link: FileLink) -> None:
        if link.path is not None and not link.hashes:
            link.hashes = {"sha256": sha256_file(link.path)}
            link.size = link.path.stat().st_size


def _anchors(text: str) -> list[tuple[dict[str, str | None], str]]:
    """The ``<a>`` tags of an HTML page: (attributes, text)."""
    import html.parser

    class _Anchors(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.anchors: list[tuple[dict[str, str | None], str]] = []
            self._current: dict[str, str | None] | None = None
            self._text: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "a":
                self._current = dict(attrs)
                self._text = []

        def handle_data(self, data: str) -> None:
            if self._current is not None:
                self._text.append(data)

        def handle_endtag(self, tag: str) -> None:
            if tag == "a" and self._current is not None:
                self.anchors.append((self._current, "".join(self._text).strip()))
                self._current = None

    parser = _Anchors()
    parser.feed(text)
    return parser.anchors


def _hash_attr(value: str | None) -> dict[str, str] | None:
    """``data-core-metadata`` value: ``true`` -> {}, ``sha256=<hex>`` -> {"sha256": hex}."""
    if value is None or value.lower() == "false":
        return None
    algo, sep, digest = value.partition("=")
    return {algo.lower(): digest.lower()} if sep else {}


class SimpleIndex(Source):
    """A PEP 503/691 simple index over http(s) or ``file://`` (PEP 658/714 metadata files)."""

    def __init__(
        self,
        url: str,
        fetcher: Fetcher,
        vendor: bool = False,
        credentials: tuple[str, str] | None = None,
    ) -> None:
        if "://" not in url:
            url = Path(url).absolute().as_uri()
        url = fetcher.credentials.add(url, credentials)  # never kept in a URL
        fetcher.reader(url if url.endswith("/") else url + "/")
        self.url = url if url.endswith("/") else url + "/"
        self.index_url = self.url
        self.label = self.url
        self.vendor = vendor
        self.fetcher = fetcher
        self._pages: dict[str, list[FileLink]] = {}
        #: project -> its page's URL (worked out once: every listing asks three times)
        self._urls: dict[str, str] = {}
        self._lock = threading.Lock()
        self._reading: dict[str, threading.Lock] = {}
        self._read: dict[str, bytes] = {}
        #: project -> (HTTP status, sha256 of the page) of every page read: what a cached
        #: resolution made from this index is checked against
        self.pages_read: dict[str, tuple[int, str]] = {}
        #: True once something was read that the pages do not pin by a sha256 (a metadata
        #: file or a wheel listed without one): no resolution is cached then
        self.unpinned = False

    def page_url(self, project: str) -> str:
        return self._page_url(project)

    def page_state(self, project: str) -> tuple[int, str]:
        """(status, sha256 of the body) of ``project``'s page as the index answers now."""
        resp = self.fetcher.get(self._page_url(project), self._accept())
        return resp.status, hashlib.sha256(resp.body).hexdigest()

    def prefetch_pages(self, projects: Iterator[str] | list[str]) -> None:
        """Start fetching these pages (also over ``file://``, for a cached resolution's check)."""
        self.fetcher.prefetch([self._page_url(p) for p in projects], self._accept())

    def _page_url(self, project: str) -> str:
        hit = self._urls.get(project)
        if hit is None:
            hit = self._urls[project] = urljoin(self.url, f"{project}/")
        return hit

    def _accept(self) -> str:
        return "*/*" if self.url.startswith("file:") else JSON_ACCEPT

    def prefetch(self, project: str) -> None:
        if not self.url.startswith("file:") and project not in self._pages:
            self.fetcher.prefetch([self._page_url(project)], self._accept())

    def links(self, project: str) -> list[FileLink]:
        with self._lock:
            hit = self._pages.get(project)
        if hit is not None:
            return hit
        resp = self.fetcher.get(self._page_url(project), self._accept())
        with self._lock:
            self.pages_read[project] = (resp.status, hashlib.sha256(resp.body).hexdigest())
        if resp.status == 404 or resp.status == 410:
            links: list[FileLink] = []
        elif resp.status in (401, 403):
            raise InputError(
                f"index answered HTTP {resp.status} for {project}: it needs credentials that "
                "work (in the URL as https://USER:PASSWORD@HOST/..., in $NETRC or ~/.netrc, or "
                "uv's UV_INDEX_<NAME>_USERNAME/_PASSWORD)",
                self.url,
                field="index",
            )
        elif resp.status != 200:
            raise InputError(
                f"index answered HTTP {resp.status} for {project}", self.url, field="index"
            )
        elif "json" in resp.content_type:
            links = self._parse_json(resp.url, resp.body, project)
        else:
            links = self._parse_html(resp.url, resp.body, project)
        links = [link for link in links if link.project == project]
        self.fetcher.release(self._page_url(project), self._accept(), base=self.url)
        with self._lock:  # a page parsed twice (prefetch race): the first list wins
            return self._pages.setdefault(project, links)

    def _link(self, page: str, href: str, filename: str | None) -> FileLink | None:
        url, frag = urldefrag(self.fetcher.credentials.add(urljoin(page, href)))
        filename = filename or url.rsplit("/", 1)[-1]
        parsed = _parse_wheel(filename)
        if parsed is None:
            return None
        link = FileLink(parsed[0], parsed[1], filename, self, url=url, tags=parsed[2])
        algo, sep, digest = frag.partition("=")
        if sep:
            link.hashes = {algo.lower(): digest.lower()}
        return link

    def _parse_html(self, page: str, body: bytes, project: str) -> list[FileLink]:
        out = []
        for attrs, _text in _anchors(body.decode("utf-8", "replace")):
            href = attrs.get("href")
            if not href:
                continue
            link = self._link(page, href, None)
            if link is None:
                continue
            link.requires_python = attrs.get("data-requires-python") or None
            meta = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
            link.metadata_hashes = _hash_attr(meta)
            if link.metadata_hashes is not None:
                # `_link` made the link from its href: its url is set
                link.metadata_url = link.url + ".metadata"  # type: ignore[operator]
            link.yanked = "data-yanked" in attrs
            link.yank_reason = (attrs.get("data-yanked") or "").strip()
            out.append(link)
        return out

    def _parse_json(self, page: str, body: bytes, project: str) -> list[FileLink]:
        try:
            doc = json.loads(body)
        except ValueError as exc:
            raise InputError(f"bad PEP 691 page for {project}: {exc}", page) from None
        out = []
        for item in doc.get("files", []):
            link = self._link(page, item.get("url", ""), item.get("filename"))
            if link is None:
                continue
            link.hashes = {k.lower(): v.lower() for k, v in (item.get("hashes") or {}).items()}
            link.requires_python = item.get("requires-python") or None
            link.size = item.get("size")
            link.upload_time = item.get("upload-time")
            meta = item.get("core-metadata", item.get("dist-info-metadata"))
            if meta:
                link.metadata_hashes = meta if isinstance(meta, dict) else {}
                # `_link` made the link from its url: it is set
                link.metadata_url = link.url + ".metadata"  # type: ignore[operator]
            yanked = item.get("yanked")
            link.yanked = bool(yanked)
            link.yank_reason = yanked.strip() if isinstance(yanked, str) else ""
            out.append(link)
        return out

    def metadata(self, link: FileLink) -> bytes:
        if link.metadata_url:  # a metadata file is pinned by its own listed sha256 only
            pinned = (link.metadata_hashes or {}).get("sha256")
        else:  # read from the wheel: pinned by the wheel's
            pinned = link.hashes.get("sha256")
        if not pinned:
            self.unpinned = True
        if link.metadata_url:
            resp = self.fetcher.get(link.metadata_url)
            self.fetcher.release(link.metadata_url, base=self.url)
            if resp.status == 200:
                want = (link.metadata_hashes or {}).get("sha256")
                if want and hashlib.sha256(resp.body).hexdigest() != want:
                    raise InputError(
                        f"metadata of {link.filename} does not match its sha256",
                        link.metadata_url,
                    )
                return resp.body
        return self._lazy_metadata(link)

    def _lazy_metadata(self, link: FileLink) -> bytes:
        """From the wheel itself, once per file even when threads ask together."""
        from dtkguard.resolve.lazywheel import read_metadata

        assert link.url is not None
        with self._lock:
            gate = self._reading.setdefault(link.url, threading.Lock())
        with gate:
            hit = self._read.get(link.url)
            if hit is None:
                hit = self._read[link.url] = read_metadata(self.fetcher, link)
                with self._lock:
                    self.fetcher.stats["wheels"] += 1
        return hit

    def complete(self, link: FileLink) -> None:
        """Only a listing without a sha256 makes dtkguard download the wheel (streamed)."""
        if not link.hashes.get("sha256"):
            from dtkguard.resolve.lazywheel import sha256_of

            self.unpinned = True
            link.hashes["sha256"], size = sha256_of(self.fetcher, link)
            link.size = link.size or size

    @contextmanager
    def local_file(self, link: FileLink) -> Iterator[Path]:
        """Download ``link`` to a temporary file (streamed, its sha256 checked when listed)."""
        import tempfile

        assert link.url is not None
        with tempfile.TemporaryDirectory(prefix="dtkguard-dl-") as tmp:
            path = Path(tmp) / link.filename
            digest = hashlib.sha256()
            with self.fetcher.stream(link.url) as resp, path.open("wb") as fh:
                if resp.status != 200:
                    raise InputError(
                        f"cannot download {link.filename}: HTTP {resp.status}", link.url
                    )
                for chunk in iter(lambda: resp.read(1 << 20), b""):
                    digest.update(chunk)
                    fh.write(chunk)
            want = link.hashes.get("sha256")
            if want and digest.hexdigest() != want:
                raise InputError(f"{link.filename} does not match its sha256", link.url)
            link.hashes.setdefault("sha256", digest.hexdigest())
            link.size = link.size or path.stat().st_size
            yield path

    def wheel_bytes(self, link: FileLink) -> bytes:
        assert link.url is not None
        resp = self.fetcher.get(link.url)
        if resp.status != 200:
            raise InputError(f"cannot download {link.filename}: HTTP {resp.status}", link.url)
        return resp.body


class InstalledEnv(Source):
    """The dists of an installed environment (:mod:`dtkguard.env`): metadata without files.

    Its links have no URL or path (``installed`` holds the dist); ``lock --from-env`` uses it
    for the metadata of dists that no wheel source has, so their requirements still count in
    the closure check.
    """

    def __init__(self, env: Any) -> None:
        from packaging.version import Version

        self.env = env
        self.label = f"installed:{env.target.python or env.target.path or '/'}"
        self._by_name: dict[str, list[FileLink]] = {}
        for dist in env.dists:
            try:
                version = Version(dist.version)
            except ValueError:
                continue
            name = canonical(dist.name)
            link = FileLink(name, version, Path(dist.location).name, self)
            # only this source's links carry the installed Dist they stand for
            link.installed = dist  # type: ignore[attr-defined]
            self._by_name.setdefault(name, []).append(link)

    def links(self, project: str) -> list[FileLink]:
        return self._by_name.get(project, [])

    def metadata(self, link: FileLink) -> bytes:
        dist = link.installed  # type: ignore[attr-defined]  # set by `__init__` above
        lines = [f"Name: {dist.name}", f"Version: {dist.version}"]
        if dist.requires_python:
            lines.append(f"Requires-Python: {dist.requires_python}")
        lines += [f"Requires-Dist: {r}" for r in dist.requires_dist]
        return ("\n".join(lines) + "\n\n").encode()


def build_sources(
    policy: Any,
    fetcher: Fetcher,
    *,
    vendor_find_links: Sequence[str] = (),
    vendor_indexes: Sequence[str] = (),
    find_links: Sequence[str] = (),
    index_url: str | None = None,
    extra_index_urls: Sequence[str] = (),
    env_extras: bool = False,
) -> list[Source]:
    """Vendor sources (policy first, then the command line), then public ones; with
    ``env_extras`` also the extra indexes of pip's and uv's environment variables."""
    sources: list[Source] = []
    policy_fl = tuple(policy.find_links) if policy is not None else ()
    policy_ix = tuple(policy.indexes) if policy is not None else ()
    for path in (*policy_fl, *vendor_find_links):
        sources.append(FindLinks(path, vendor=True))
    for url in (*policy_ix, *vendor_indexes):
        sources.append(SimpleIndex(url, fetcher, vendor=True))
    for path in find_links:
        sources.append(FindLinks(path))
    for url in ([index_url] if index_url else []) + list(extra_index_urls):
        sources.append(SimpleIndex(url, fetcher))
    from dtkguard.resolve.indexes import env_extra_indexes

    for url, cred in env_extra_indexes() if env_extras else ():
        sources.append(SimpleIndex(url, fetcher, credentials=cred))
    return sources
