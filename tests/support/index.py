"""A real simple repository (PEP 503 HTML + PEP 691 JSON + PEP 658/714 metadata) for tests.

:func:`serve_index` serves a directory of wheels and sdists over HTTP on 127.0.0.1 from a
background thread; :func:`write_static_index` writes the same tree to disk for ``file://`` use.

Layout: ``/simple/`` (project list), ``/simple/<normalised-name>/`` (project page; other spellings
redirect there), ``/files/<filename>`` and, for wheels, ``/files/<filename>.metadata``.
The directory is rescanned on every project request, so wheels added while serving show up.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import shutil
import tarfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

from .wheels import read_wheel_metadata

__all__ = [
    "HTML_TYPE",
    "JSON_TYPE",
    "IndexServer",
    "ServedRequest",
    "serve_index",
    "write_static_index",
]

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "application/vnd.pypi.simple.v1+html"
API_VERSION = "1.1"


@dataclass(frozen=True)
class _File:
    filename: str
    project: str  # normalised
    path: Path
    sha256: str
    size: int
    metadata: bytes | None  # core metadata of a wheel
    requires_python: str | None

    @property
    def metadata_sha256(self) -> str | None:
        return None if self.metadata is None else hashlib.sha256(self.metadata).hexdigest()


@dataclass(frozen=True)
class _Options:
    """What the served index says beyond the files: PEP 658 metadata, PEP 592 yanks (file name
    -> reason, ``True`` for none given), ``requires-python`` per file name (over the metadata's)."""

    metadata: bool = True
    yanked: Mapping[str, str | bool] = field(default_factory=dict)
    requires_python: Mapping[str, str] = field(default_factory=dict)
    ranges: bool = True
    #: project pages carry an ``ETag`` (of their bytes) and answer ``If-None-Match`` with 304
    validators: bool = False
    #: a ``Cache-Control`` value for project pages (None: the header is not sent)
    cache_control: str | None = None

    def python(self, f: _File) -> str | None:
        return self.requires_python.get(f.filename, f.requires_python)


_cache: dict[tuple[str, int, int], _File] = {}
_cache_lock = threading.Lock()


def _scan_file(path: Path) -> _File | None:
    name = path.name
    try:
        if name.endswith(".whl"):
            project = parse_wheel_filename(name)[0]
        elif name.endswith((".tar.gz", ".zip")):
            project = parse_sdist_filename(name)[0]
        else:
            return None
    except ValueError:
        return None
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    digest = hashlib.sha256()
    with path.open("rb") as fh:  # big wheels: never the whole file in memory
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    metadata = read_wheel_metadata(path) if name.endswith(".whl") else None
    requires_python = None
    info = metadata if metadata is not None else _pkg_info(path)
    if info is not None:
        requires_python = BytesParser().parsebytes(info).get("Requires-Python")
    entry = _File(
        filename=name,
        project=str(project),
        path=path,
        sha256=digest.hexdigest(),
        size=st.st_size,
        metadata=metadata,
        requires_python=requires_python,
    )
    with _cache_lock:
        _cache[key] = entry
    return entry


def _pkg_info(path: Path) -> bytes | None:
    """An sdist's ``{name}-{version}/PKG-INFO`` (for its ``data-requires-python``)."""
    if not path.name.endswith(".tar.gz"):
        return None
    with tarfile.open(path) as tf:
        for member in tf.getmembers():
            if member.name.count("/") == 1 and member.name.endswith("/PKG-INFO"):
                fh = tf.extractfile(member)
                return fh.read() if fh is not None else None
    return None


_scans: dict[tuple[str, int], dict[str, list[_File]]] = {}


def _scan(wheel_dir: Path) -> dict[str, list[_File]]:
    """The folder's projects; rescanned only when the folder changes (a file added, removed or
    renamed into place changes its mtime), so a page costs what a real index's would."""
    key = (str(wheel_dir), Path(wheel_dir).stat().st_mtime_ns)
    with _cache_lock:
        hit = _scans.get(key)
    if hit is not None:
        return hit
    projects = _scan_uncached(wheel_dir)
    with _cache_lock:
        _scans[key] = projects
    return projects


def _scan_uncached(wheel_dir: Path) -> dict[str, list[_File]]:
    projects: dict[str, list[_File]] = {}
    for path in sorted(Path(wheel_dir).iterdir()):
        if path.is_file():
            entry = _scan_file(path)
            if entry is not None:
                projects.setdefault(entry.project, []).append(entry)
    return projects


def _versions(files: list[_File]) -> list[str]:
    out = set()
    for f in files:
        if f.filename.endswith(".whl"):
            out.add(str(parse_wheel_filename(f.filename)[1]))
        else:
            out.add(str(parse_sdist_filename(f.filename)[1]))
    return sorted(out)


def _root_html(projects: list[str]) -> str:
    links = "".join(f'    <a href="{p}/">{p}</a>\n' for p in projects)
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        f'    <meta name="pypi:repository-version" content="{API_VERSION}">\n'
        "    <title>Simple index</title>\n  </head>\n  <body>\n"
        f"{links}  </body>\n</html>\n"
    )


def _root_json(projects: list[str]) -> dict[str, object]:
    return {"meta": {"api-version": API_VERSION}, "projects": [{"name": p} for p in projects]}


def _project_html(project: str, files: list[_File], prefix: str, opts: _Options) -> str:
    links = []
    for f in files:
        attrs = [f'href="{prefix}{f.filename}#sha256={f.sha256}"']
        if opts.python(f):
            attrs.append(f'data-requires-python="{html.escape(opts.python(f) or "")}"')
        yank = opts.yanked.get(f.filename)
        if yank is not None and yank is not False:
            attrs.append(f'data-yanked="{html.escape(yank if isinstance(yank, str) else "")}"')
        if opts.metadata and f.metadata is not None:
            value = f"sha256={f.metadata_sha256}"
            attrs.append(f'data-dist-info-metadata="{value}"')
            attrs.append(f'data-core-metadata="{value}"')
        links.append(f"    <a {' '.join(attrs)}>{html.escape(f.filename)}</a><br/>\n")
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        f'    <meta name="pypi:repository-version" content="{API_VERSION}">\n'
        f"    <title>Links for {project}</title>\n  </head>\n  <body>\n"
        f"    <h1>Links for {project}</h1>\n{''.join(links)}  </body>\n</html>\n"
    )


def _project_json(
    project: str, files: list[_File], prefix: str, opts: _Options
) -> dict[str, object]:
    out = []
    for f in files:
        item: dict[str, object] = {
            "filename": f.filename,
            "url": f"{prefix}{f.filename}",
            "hashes": {"sha256": f.sha256},
            "size": f.size,
            "yanked": opts.yanked.get(f.filename, False),
        }
        if opts.python(f):
            item["requires-python"] = opts.python(f)
        if opts.metadata and f.metadata is not None:
            item["core-metadata"] = {"sha256": f.metadata_sha256}
            item["dist-info-metadata"] = {"sha256": f.metadata_sha256}
        out.append(item)
    return {
        "meta": {"api-version": API_VERSION},
        "name": project,
        "versions": _versions(files),
        "files": out,
    }


def _negotiate(accept: str | None, fmt: str | None) -> str | None:
    """The response content type for an Accept header (None: 406)."""
    if fmt:
        accept = fmt
    if not accept:
        return "text/html"
    best: tuple[float, int, str] | None = None
    supported = {
        "application/vnd.pypi.simple.v1+json": JSON_TYPE,
        "application/vnd.pypi.simple.latest+json": JSON_TYPE,
        "application/vnd.pypi.simple.v1+html": HTML_TYPE,
        "application/vnd.pypi.simple.latest+html": HTML_TYPE,
        "text/html": "text/html",
        "*/*": "text/html",
        "text/*": "text/html",
    }
    for order, part in enumerate(accept.split(",")):
        fields = [x.strip() for x in part.split(";")]
        media = fields[0].lower()
        q = 1.0
        for param in fields[1:]:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        if media in supported and q > 0:
            cand = (q, -order, supported[media])
            if best is None or cand[:2] > best[:2]:
                best = cand
    return best[2] if best else None


@dataclass(frozen=True)
class ServedRequest:
    """One request the index answered."""

    path: str
    accept: str
    status: int
    content_type: str


@dataclass
class IndexServer:
    """A running index. ``url`` ends with ``/simple/``; ``requests`` lists every path asked for."""

    url: str
    wheel_dir: Path
    requests: list[str] = field(default_factory=list)
    log: list[ServedRequest] = field(default_factory=list)
    #: bytes of distribution files sent (whole files and ranges)
    file_bytes: int = 0
    #: ``Range`` headers of the file requests that had one
    ranges: list[str] = field(default_factory=list)
    #: ``Authorization`` headers seen (every request, in order; "" when none was sent)
    authorizations: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return self.url[: -len("/simple/")]

    def downloads(self) -> list[str]:
        """File names of distributions (not ``.metadata`` files) fetched so far."""
        return [
            unquote(p.rsplit("/", 1)[-1])
            for p in self.requests
            if p.startswith("/files/") and not p.endswith(".metadata")
        ]

    def metadata_fetches(self) -> list[str]:
        """File names whose PEP 658 ``.metadata`` was fetched so far (without the suffix)."""
        return [
            unquote(p.rsplit("/", 1)[-1])[: -len(".metadata")]
            for p in self.requests
            if p.startswith("/files/") and p.endswith(".metadata")
        ]

    def clear(self) -> None:
        """Forget the requests seen so far."""
        self.requests.clear()
        self.log.clear()


def _byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """(start, end inclusive) of a ``Range: bytes=...`` header (one range), else None."""
    if not header or not header.startswith("bytes=") or "," in header:
        return None
    first, _, last = header[len("bytes=") :].partition("-")
    try:
        if not first:
            start, end = max(0, size - int(last)), size - 1
        else:
            start, end = int(first), min(size - 1, int(last)) if last else size - 1
    except ValueError:
        return None
    return (start, end) if start <= end else None


def _authorized(state: IndexServer, header: str | None, auth: tuple[str, str] | None) -> bool:
    state.authorizations.append(header or "")
    if auth is None:
        return True
    want = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    return header == want


class _Handler(BaseHTTPRequestHandler):
    """The index's answers; `_make_handler` gives each server its own state and options."""

    state: IndexServer
    opts: _Options
    auth: tuple[str, str] | None
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms stalls

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _head(self, status: int, ctype: str, length: int, extra: dict[str, str]) -> None:
        # Log before answering: a client that has its response must see its request logged.
        accept = self.headers.get("Accept", "")
        self.state.log.append(ServedRequest(self.path, accept, status, ctype))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(length))
        self.send_header("Vary", "Accept")
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()

    def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None):
        self._head(status, ctype, len(body), extra or {})
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        self.state.requests.append(self.path)
        if not _authorized(self.state, self.headers.get("Authorization"), self.auth):
            self._send(401, b"credentials needed\n", "text/plain",
                       {"WWW-Authenticate": 'Basic realm="test index"'})  # fmt: skip
            return
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        fmt = (parse_qs(parts.query).get("format") or [None])[0]
        if fmt:
            fmt = fmt.replace(" ", "+")  # an unencoded "+" arrives as a space
        if path in ("/simple", "/simple/") or path.startswith("/simple/"):
            self._simple(path, fmt)
        elif path.startswith("/files/") and "/" not in path[len("/files/") :]:
            self._file(path[len("/files/") :])
        else:
            self._send(404, b"not found\n", "text/plain")

    def _simple(self, path: str, fmt: str | None) -> None:
        ctype = _negotiate(self.headers.get("Accept"), fmt)
        if ctype is None:
            self._send(406, b"not acceptable\n", "text/plain")
            return
        projects = _scan(self.state.wheel_dir)
        rest = path[len("/simple") :].strip("/")
        if not rest:
            if not path.endswith("/"):
                self._send(301, b"", "text/plain", {"Location": "/simple/"})
                return
            names = sorted(projects)
            if ctype == JSON_TYPE:
                body = json.dumps(_root_json(names), indent=1).encode()
            else:
                body = _root_html(names).encode()
            self._send(200, body, ctype)
            return
        norm = canonicalize_name(rest)
        if norm != rest or not path.endswith("/"):
            self._send(301, b"", "text/plain", {"Location": f"/simple/{norm}/"})
            return
        files = projects.get(norm)
        if not files:
            self._send(404, b"no such project\n", "text/plain")
            return
        if ctype == JSON_TYPE:
            doc = _project_json(norm, files, "../../files/", self.opts)
            body = json.dumps(doc, indent=1).encode()
        else:
            body = _project_html(norm, files, "../../files/", self.opts).encode()
        self._send_page(body, ctype)

    def _send_page(self, body: bytes, ctype: str) -> None:
        """A project page, with its validator and caching header when the index says them."""
        extra: dict[str, str] = {}
        if self.opts.cache_control is not None:
            extra["Cache-Control"] = self.opts.cache_control
        if self.opts.validators:
            extra["ETag"] = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
            if self.headers.get("If-None-Match") == extra["ETag"]:
                self._send(304, b"", ctype, extra)
                return
        self._send(200, body, ctype, extra)

    def _file(self, name: str) -> None:
        is_meta = name.endswith(".metadata")
        target = self.state.wheel_dir / (name[: -len(".metadata")] if is_meta else name)
        entry = _scan_file(target) if target.is_file() else None
        if entry is None:
            self._send(404, b"not found\n", "text/plain")
        elif is_meta:
            if entry.metadata is None or not self.opts.metadata:
                self._send(404, b"no metadata\n", "text/plain")
            else:
                self._send(200, entry.metadata, "application/octet-stream")
        else:
            self._stream(entry)

    def _stream(self, entry: _File) -> None:
        """The file, or the one byte range asked for (206), read in chunks."""
        header = self.headers.get("Range")
        span = _byte_range(header, entry.size) if self.opts.ranges else None
        extra = {"Accept-Ranges": "bytes" if self.opts.ranges else "none"}
        status, start, end = 200, 0, entry.size - 1
        if span is not None:
            self.state.ranges.append(header or "")
            status, (start, end) = 206, span
            extra["Content-Range"] = f"bytes {start}-{end}/{entry.size}"
        self._head(status, "application/octet-stream", end - start + 1, extra)
        if self.command == "HEAD":
            return
        with entry.path.open("rb") as fh:
            fh.seek(start)
            left = end - start + 1
            while left > 0:
                chunk = fh.read(min(left, 1 << 20))
                if not chunk:
                    break
                self.wfile.write(chunk)
                left -= len(chunk)
                self.state.file_bytes += len(chunk)


def _make_handler(
    state: IndexServer, opts: _Options, auth: tuple[str, str] | None
) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"state": state, "opts": opts, "auth": auth})


class _Server(ThreadingHTTPServer):
    """socketserver's listen backlog is 5: a client that opens its connections at once (8 for
    dtkguard) on a busy machine has SYNs dropped and waits the kernel's 1 s retransmit, which
    no real index makes it wait (the benchmarks measured that stall, not the tools)."""

    request_queue_size = 128


@contextmanager
def serve_index(
    wheel_dir: Path,
    *,
    metadata: bool = True,
    yanked: Mapping[str, str | bool] | None = None,
    requires_python: Mapping[str, str] | None = None,
    auth: tuple[str, str] | None = None,
    ranges: bool = True,
    validators: bool = False,
    cache_control: str | None = None,
) -> Iterator[IndexServer]:
    """Serve ``wheel_dir`` as a simple index on 127.0.0.1 (a free port) until the block ends.

    ``metadata=False`` hides the PEP 658/714 attributes and ``.metadata`` files, so clients
    must download the wheels (or read their zip directories with ``Range`` requests, which
    files always answer) to read their metadata. ``yanked`` marks files yanked (PEP 592:
    ``{filename: reason}``, ``True`` for no reason), ``requires_python`` sets a file's
    ``data-requires-python``, ``auth=(user, password)`` makes every request need HTTP Basic
    credentials (401 otherwise), ``ranges=False`` ignores ``Range`` headers (whole files, 200).
    ``validators=True`` gives project pages an ``ETag`` and answers a matching
    ``If-None-Match`` with 304; ``cache_control`` is sent with project pages as given.
    """
    state = IndexServer(url="", wheel_dir=Path(wheel_dir))
    opts = _Options(metadata, dict(yanked or {}), dict(requires_python or {}), ranges,
                    validators, cache_control)  # fmt: skip
    httpd = _Server(("127.0.0.1", 0), _make_handler(state, opts, auth))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/simple/"
    thread = threading.Thread(target=httpd.serve_forever, name="test-index", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def write_static_index(wheel_dir: Path, out_dir: Path, *, metadata: bool = True) -> Path:
    """Write a static PEP 503 tree (with PEP 658 sidecars) and return its ``simple`` directory.

    Files are copied to ``out_dir/files/``; each page is ``index.html`` (plus ``index.json`` in
    the PEP 691 shape for inspection). Use ``path.as_uri()`` as pip's or uv's ``--index-url``.
    """
    out_dir = Path(out_dir)
    files_dir = out_dir / "files"
    simple = out_dir / "simple"
    files_dir.mkdir(parents=True, exist_ok=True)
    simple.mkdir(parents=True, exist_ok=True)
    projects = _scan(Path(wheel_dir))
    for project, files in projects.items():
        page = simple / project
        page.mkdir(exist_ok=True)
        opts = _Options(metadata)
        (page / "index.html").write_text(_project_html(project, files, "../../files/", opts))
        doc = _project_json(project, files, "../../files/", opts)
        (page / "index.json").write_text(json.dumps(doc, indent=1))
        for f in files:
            shutil.copyfile(f.path, files_dir / f.filename)
            if metadata and f.metadata is not None:
                (files_dir / f"{f.filename}.metadata").write_bytes(f.metadata)
    names = sorted(projects)
    (simple / "index.html").write_text(_root_html(names))
    (simple / "index.json").write_text(json.dumps(_root_json(names), indent=1))
    return simple
