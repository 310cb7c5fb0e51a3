"""A persistent HTTP cache of index pages, with their validators, as pip and uv keep one.

A project page fetched over http(s) is kept with its ``ETag``, ``Last-Modified`` and
``Cache-Control`` (entries in ``<cache root>/pages-v1/``, the checked store of
:mod:`.metacache`: a damaged or planted entry is a miss). The next fetch of that page:

- while ``Cache-Control: max-age`` (less the ``Age`` it came with) has not passed, and without
  ``no-cache``: the stored page, no request (HTTP's freshness, what pip and uv do);
- else a conditional request (``If-None-Match``, ``If-Modified-Since``): on ``304 Not
  Modified`` the stored page, on anything else the new answer (stored in its place).

A page answered with ``no-store``, or with neither a validator nor a max-age, is not kept.
Entries are keyed by URL, Accept and the digest of the credentials sent (another user's page
is never served).
"""

from __future__ import annotations

import hashlib
import json
import re
import time

from dtkguard.lightclass import field, record
from dtkguard.resolve.metacache import MetadataCache

#: the response headers kept with a page (lower-case)
KEPT = ("etag", "last-modified", "cache-control", "age", "content-type")
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*\"?(\d+)\"?\s*(?:,|$)", re.IGNORECASE)


def directives(cache_control: str) -> set[str]:
    """The bare directive names of a ``Cache-Control`` value, lower-case."""
    return {part.split("=", 1)[0].strip().lower() for part in cache_control.split(",")}


def max_age(headers: dict[str, str]) -> int | None:
    """Seconds the page stays fresh from when it was stored (None: not said)."""
    m = _MAX_AGE.search(headers.get("cache-control", ""))
    if m is None:
        return None
    try:
        age = int(headers.get("age", "0").strip() or 0)
    except ValueError:
        age = 0
    return int(m.group(1)) - max(age, 0)


def storable(status: int, headers: dict[str, str]) -> bool:
    if status != 200 or "no-store" in directives(headers.get("cache-control", "")):
        return False
    return bool(headers.get("etag") or headers.get("last-modified") or max_age(headers))


@record
class CachedPage:
    status: int
    url: str
    headers: dict[str, str]
    body: bytes
    stored: float = field(default_factory=time.time)

    def fresh(self, now: float | None = None) -> bool:
        if "no-cache" in directives(self.headers.get("cache-control", "")):
            return False
        seconds = max_age(self.headers)
        now = time.time() if now is None else now
        return seconds is not None and 0 <= now - self.stored < seconds

    def conditional(self) -> dict[str, str]:
        """The headers that ask the server whether the stored page is still current."""
        out = {}
        if self.headers.get("etag"):
            out["If-None-Match"] = self.headers["etag"]
        if self.headers.get("last-modified"):
            out["If-Modified-Since"] = self.headers["last-modified"]
        return out


class PageCache(MetadataCache):
    """``load``/``save`` index pages by (URL, Accept, credentials)."""

    FOLDER = "pages-v1"

    @staticmethod
    def key(url: str, accept: str, authorization: str | None) -> str:
        who = hashlib.sha256((authorization or "").encode()).hexdigest()
        return f"page\0{url}\0{accept}\0{who}"

    def load(self, key: str) -> CachedPage | None:
        raw = self.get(key)
        if raw is None:
            return None
        head, sep, body = raw.partition(b"\n")
        if not sep:
            return None
        try:
            meta = json.loads(head)
            return CachedPage(int(meta["status"]), str(meta["url"]),
                              {str(k): str(v) for k, v in meta["headers"].items()}, body,
                              float(meta["stored"]))  # fmt: skip
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def save(self, key: str, page: CachedPage) -> None:
        meta = {"status": page.status, "url": page.url, "headers": page.headers,
                "stored": page.stored}  # fmt: skip
        self.put(key, json.dumps(meta, sort_keys=True).encode() + b"\n" + page.body)
