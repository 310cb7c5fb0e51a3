"""Fetch index pages, metadata files and wheels over http(s) and file:// (standard library only).

Every URL is fetched at most once per run (responses are cached in memory) and may be prefetched
on a small thread pool, so the resolver finds metadata waiting when it asks for it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import SplitResult, unquote, urljoin, urlsplit

from dtkguard import __version__
from dtkguard.errors import InputError
from dtkguard.lightclass import field, record
from dtkguard.resolve.auth import Credentials, redact

TYPE_CHECKING = False  # typing (Protocol) costs ~3 ms at start-up: a cache hit needs none
if TYPE_CHECKING:
    import email.message
    import http.client
    from concurrent.futures import Future, ThreadPoolExecutor
    from typing import Protocol

    from dtkguard.resolve.pagecache import PageCache

JSON_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01"
)
USER_AGENT = f"dtkguard/{__version__}"


@record(frozen=True)
class Response:
    url: str  # after redirects
    status: int
    content_type: str
    body: bytes
    #: the caching headers (`pagecache.KEPT`), lower-case
    headers: dict[str, str] = field(default_factory=dict)


def _kept(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    from dtkguard.resolve.pagecache import KEPT

    return {k.lower(): v for k, v in items if k.lower() in KEPT}


@record(frozen=True)
class Streamed:
    """A response whose body is read in pieces: ``read(n)``; ``headers`` lower-cased."""

    url: str
    status: int
    headers: dict[str, str]
    read: Callable[[int], bytes]


if TYPE_CHECKING:  # what the annotations below name (never instantiated)

    class _Closing(Protocol):
        def close(self) -> None: ...

    class _Answer(Protocol):
        """What :meth:`Fetcher.stream` reads of a response: http.client's, or `_UrllibResponse`."""

        @property
        def status(self) -> int: ...

        def getheader(self, name: str, /) -> str | None: ...

        def getheaders(self) -> list[tuple[str, str]]: ...

        def read(self, n: int, /) -> bytes: ...

        def close(self) -> None: ...

    class _Urllib(Protocol):
        """What urllib's ``urlopen`` returns, or the `urllib.error.HTTPError` it raises."""

        @property
        def headers(self) -> email.message.Message: ...

        @property
        def code(self) -> int: ...

        def read(self, n: int, /) -> bytes: ...

        def close(self) -> None: ...


class _UrllibResponse:
    """http.client's interface over what urllib returns (the proxied path of :meth:`stream`)."""

    def __init__(self, resp: _Urllib) -> None:
        self._resp = resp
        self.status: int = getattr(resp, "status", None) or resp.code

    def getheader(self, name: str) -> str | None:
        return self._resp.headers.get(name)

    def getheaders(self) -> list[tuple[str, str]]:
        return list(self._resp.headers.items())

    def read(self, n: int = -1) -> bytes:
        return self._resp.read(n)

    def close(self) -> None:
        self._resp.close()


class Unreachable(InputError):
    """A source could not be reached at all (connection refused, DNS, timeout): exit 2."""


class Fetcher:
    """A caching, prefetching fetcher. ``stats`` counts what went over the wire."""

    def __init__(
        self, workers: int = 8, timeout: float = 30.0, pages: PageCache | None = None
    ) -> None:
        self.timeout = timeout
        #: index pages kept across runs with their validators (None: every page fetched)
        self.pages = pages
        #: Basic credentials by origin (URL userinfo, uv's variables, netrc)
        self.credentials = Credentials()
        self._pool: ThreadPoolExecutor | None = None
        self._workers = workers
        self._futures: dict[tuple[str, str], Future[Response]] = {}
        self._released: set[tuple[str, str]] = set()
        self._readers: dict[str, int] = {}
        self._release_counts: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        #: `_proxied`'s answer per host, asked once per run (it reads the whole environment)
        self._proxy: dict[str, bool] = {}
        #: ``fresh``: pages served from the page cache without a request; ``not-modified``:
        #: pages a conditional request confirmed (304)
        self.stats = {"requests": 0, "bytes": 0, "wheels": 0, "fresh": 0, "not-modified": 0}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _submit(self, url: str, accept: str) -> Future[Response]:
        key = (url, accept)
        with self._lock:
            fut = self._futures.get(key)
            if fut is None:
                if self._pool is None:
                    from concurrent.futures import ThreadPoolExecutor  # on first use

                    self._pool = ThreadPoolExecutor(
                        self._workers, thread_name_prefix="dtkguard-fetch"
                    )
                fut = self._pool.submit(self._fetch, url, accept)
                self._futures[key] = fut
        return fut

    def prefetch(self, urls: Iterable[str], accept: str = "*/*") -> None:
        """Start fetching ``urls`` in the background (errors surface on :meth:`get`)."""
        for url in urls:
            if (url, accept) not in self._released:
                self._submit(url, accept)

    def reader(self, base: str) -> None:
        """One more source reads the index at ``base`` (two sources may share an index: the
        vendor and the public one)."""
        with self._lock:
            self._readers[base] = self._readers.get(base, 0) + 1

    def release(self, url: str, accept: str = "*/*", base: str | None = None) -> None:
        """Free the body of ``url`` once every source reading ``base`` has parsed it; it is
        not fetched again in this run."""
        key = (url, accept)
        with self._lock:
            done = self._release_counts[key] = self._release_counts.get(key, 0) + 1
            if done < self._readers.get(base or "", 1):
                return
            self._futures.pop(key, None)
            self._released.add(key)

    @contextmanager
    def stream(self, url: str, **headers: str) -> Iterator[Streamed]:
        """A response read in pieces (wheels: never the whole body in memory), with
        ``headers`` (``Range``) added; redirects followed, credentials sent to their origin."""
        url = self.credentials.add(url)
        if url.startswith("file:"):
            path = file_path(url)
            try:
                fh = path.open("rb")
            except OSError as exc:
                raise Unreachable(f"cannot read {path}: {exc.strerror or exc}") from None
            with fh:
                yield Streamed(url, 200, {"content-length": str(path.stat().st_size)}, fh.read)
            return
        for _ in range(5):
            conn, resp = self._open(url, headers)
            try:
                location = resp.getheader("Location")
                if resp.status in (301, 302, 303, 307, 308) and location:
                    url = urljoin(url, location)
                    continue
                got = {k.lower(): v for k, v in resp.getheaders()}
                with self._lock:
                    self.stats["requests"] += 1
                yield Streamed(url, resp.status, got, self._counting(resp.read))
                return
            finally:
                resp.close()
                conn.close()
        raise Unreachable(f"too many redirects from {_origin(url)}", field="index")

    def _counting(self, read: Callable[[int], bytes]) -> Callable[[int], bytes]:
        def counted(n: int = -1) -> bytes:
            data = read(n)
            with self._lock:
                self.stats["bytes"] += len(data)
            return data

        return counted

    def _open(self, url: str, headers: dict[str, str]) -> tuple[_Closing, _Answer]:
        import http.client
        import urllib.error
        import urllib.request

        parts = urlsplit(url)
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        if self._proxied(parts.hostname or ""):
            req = urllib.request.Request(url, headers=self.headers(url, **headers))
            try:
                resp = urllib.request.urlopen(req, timeout=self.timeout)
            except urllib.error.HTTPError as exc:
                resp = exc
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise Unreachable(f"cannot reach {_origin(url)}: {reason}", field="index") from None
            return resp, _UrllibResponse(resp)
        conn = cls(parts.hostname or "", parts.port, timeout=self.timeout)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            conn.request("GET", path or "/", headers=self.headers(url, **headers))
            return conn, conn.getresponse()
        except OSError as exc:
            conn.close()
            raise Unreachable(f"cannot reach {_origin(url)}: {exc}", field="index") from None

    def get(self, url: str, accept: str = "*/*") -> Response:
        """The response for ``url`` (404 and other HTTP errors are responses, not raised)."""
        key = (url, accept)
        with self._lock:
            fut = self._futures.get(key)
        if fut is None:
            if url.startswith("file:"):
                return self._fetch(url, accept)
            fut = self._submit(url, accept)
        return fut.result()

    def headers(self, url: str, accept: str = "*/*", **extra: str) -> dict[str, str]:
        """Request headers for ``url``: Accept, User-Agent, its origin's credentials."""
        out = {"Accept": accept, "User-Agent": USER_AGENT, **extra}
        auth = self.credentials.header(url)
        if auth:
            out["Authorization"] = auth
        return out

    def _fetch(self, url: str, accept: str) -> Response:
        url = self.credentials.add(url)
        if url.startswith("file:"):
            return _fetch_file(url)
        if self.pages is not None and self.pages.enabled and accept != "*/*":
            return self._fetch_page(url, accept)
        return self._fetch_net(url, accept, {})

    def _fetch_page(self, url: str, accept: str) -> Response:
        """An index page through the page cache (:mod:`.pagecache`)."""
        from dtkguard.resolve.pagecache import CachedPage, max_age, storable

        assert self.pages is not None
        key = self.pages.key(url, accept, self.credentials.header(url))
        page = self.pages.load(key)
        if page is not None and page.fresh():
            with self._lock:
                self.stats["fresh"] += 1
            return Response(page.url, page.status, _ctype(page.headers), page.body, page.headers)
        resp = self._fetch_net(url, accept, page.conditional() if page is not None else {})
        if resp.status == 304 and page is not None:
            with self._lock:
                self.stats["not-modified"] += 1
            headers = {**page.headers, **resp.headers}
            if headers != page.headers or max_age(headers):  # new validators, or freshness
                self.pages.save(key, CachedPage(page.status, page.url, headers, page.body))
            return Response(page.url, page.status, _ctype(headers), page.body, headers)
        if storable(resp.status, resp.headers):
            self.pages.save(key, CachedPage(resp.status, resp.url, resp.headers, resp.body))
        return resp

    def _proxied(self, host: str) -> bool:
        hit = self._proxy.get(host)
        if hit is None:
            hit = self._proxy[host] = _proxied(host)
        return hit

    def _fetch_net(self, url: str, accept: str, extra: dict[str, str]) -> Response:
        import http.client

        parts = urlsplit(url)
        if not self._proxied(parts.hostname or ""):
            try:
                return self._fetch_keepalive(url, parts, accept, extra)
            except (OSError, http.client.HTTPException):
                self._drop_connection(parts)  # stale keep-alive connection: retry plainly
        import urllib.error  # the plain path (a proxy, or a retry): urllib's
        import urllib.request

        req = urllib.request.Request(url, headers=self.headers(url, accept, **extra))
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                body, status, final = resp.read(), resp.status, resp.url
                headers = _kept(resp.headers.items())
        except urllib.error.HTTPError as exc:
            body, status, final = b"", exc.code, url
            headers = _kept(exc.headers.items())
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise Unreachable(f"cannot reach {_origin(url)}: {reason}", field="index") from None
        with self._lock:
            self.stats["requests"] += 1
            self.stats["bytes"] += len(body)
            if urlsplit(url).path.endswith(".whl"):
                self.stats["wheels"] += 1
        return Response(final, status, _ctype(headers), body, headers)

    def _connection(self, parts: SplitResult) -> http.client.HTTPConnection:
        import http.client

        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        key = (parts.scheme, parts.netloc)
        conn = conns.get(key)
        if conn is None:
            cls = (
                http.client.HTTPSConnection
                if parts.scheme == "https"
                else http.client.HTTPConnection
            )
            conn = conns[key] = cls(parts.hostname or "", parts.port, timeout=self.timeout)
        return conn

    def _drop_connection(self, parts: SplitResult) -> None:
        conns = getattr(self._local, "conns", {})
        conn = conns.pop((parts.scheme, parts.netloc), None)
        if conn is not None:
            conn.close()

    def _fetch_keepalive(
        self, url: str, parts: SplitResult, accept: str, extra: dict[str, str]
    ) -> Response:
        """GET over a per-thread persistent connection, following redirects."""
        for _ in range(5):
            conn = self._connection(parts)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            conn.request("GET", path or "/", headers=self.headers(url, accept, **extra))
            resp = conn.getresponse()
            body = resp.read()
            if resp.status in (301, 302, 303, 307, 308) and resp.getheader("Location"):
                url = urljoin(url, resp.getheader("Location"))
                parts = urlsplit(url)
                continue
            if resp.getheader("Connection", "").lower() == "close":
                self._drop_connection(parts)
            with self._lock:
                self.stats["requests"] += 1
                self.stats["bytes"] += len(body)
                if parts.path.endswith(".whl"):
                    self.stats["wheels"] += 1
            headers = _kept(resp.getheaders())
            return Response(url, resp.status, _ctype(headers), body, headers)
        raise Unreachable(f"too many redirects from {_origin(url)}", field="index")


def _ctype(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";")[0].strip().lower()


def _proxied(host: str) -> bool:
    """True when urllib would use a proxy for ``host`` (then urllib does the request). On
    POSIX urllib reads its proxies only from ``*_proxy`` variables: without one, none (and
    urllib.request, with email and tempfile, is not imported)."""
    system = sys.platform == "darwin" or os.name == "nt"  # system settings, read by urllib
    if not system and not any(name.lower().endswith("_proxy") for name in os.environ):
        return False
    import urllib.request

    proxies = urllib.request.getproxies()
    return bool(proxies) and not urllib.request.proxy_bypass(host)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return redact(f"{parts.scheme}://{parts.netloc}{parts.path}")


def file_path(url: str) -> Path:
    """The local path of a ``file://`` URL."""
    return Path(unquote(urlsplit(url).path))


def _fetch_file(url: str) -> Response:
    path = file_path(url)
    if path.is_dir():
        path = path / "index.html"
    try:
        return Response(url, 200, "", path.read_bytes())
    except FileNotFoundError:
        return Response(url, 404, "", b"")
    except OSError as exc:
        raise Unreachable(f"cannot read {path}: {exc.strerror or exc}", field="index") from None
