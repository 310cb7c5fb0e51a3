"""Credentials for indexes, and URLs that never show them.

Where they come from, first match wins: the userinfo of an index URL (``https://user:pass@host``,
given on the command line, in pip's configuration or in an environment variable), uv's
``UV_INDEX_<NAME>_USERNAME``/``_PASSWORD`` for an index named in ``UV_INDEX``, then the
``machine`` entry for the host in ``$NETRC`` (default ``~/.netrc``), as pip and uv read them.
They are sent as HTTP Basic to that scheme, host and port only. Every URL dtkguard keeps
(sources, lock entries, inputs, messages) has its userinfo taken out; :func:`redact` shows a URL
with the password as ``****`` where the user should recognise it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from urllib.parse import SplitResult, quote, unquote, urlsplit, urlunsplit

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from typing import Any


def _origin(parts: SplitResult) -> tuple[str, str, int | None]:
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


def _without_userinfo(parts: SplitResult) -> str:
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """``(url without userinfo, (user, password) or None)``."""
    if "://" not in url or "@" not in url.split("://", 1)[1].split("/", 1)[0]:
        return url, None
    parts = urlsplit(url)
    user = unquote(parts.username or "")
    password = unquote(parts.password or "")
    return _without_userinfo(parts), (user, password)


def redact(url: str) -> str:
    """``https://user:****@host/simple/`` (``****`` alone for a token without a user)."""
    clean, cred = split_userinfo(url)
    if cred is None:
        return url
    scheme, rest = clean.split("://", 1)
    who = f"{cred[0]}:****" if cred[0] and cred[1] else "****"
    return f"{scheme}://{who}@{rest}"


def env_name(name: str) -> str:
    """uv's spelling of an index name in a variable: ``my-mirror`` -> ``MY_MIRROR``."""
    return "".join(c if c.isalnum() else "_" for c in name).upper()


class Credentials:
    """Basic credentials by origin, filled from URLs; ``$NETRC`` / ``~/.netrc`` as fallback."""

    def __init__(self, use_netrc: bool = True) -> None:
        self._by_origin: dict[tuple[str, str, int | None], tuple[str, str]] = {}
        self._lock = threading.Lock()
        self._netrc: Any = None if use_netrc else False  # a netrc.netrc once read

    def add(self, url: str, cred: tuple[str, str] | None = None) -> str:
        """Remember the userinfo of ``url`` (or ``cred``) for its origin; the clean URL."""
        clean, found = split_userinfo(url)
        cred = cred or found
        if cred is not None:
            with self._lock:
                self._by_origin.setdefault(_origin(urlsplit(clean)), cred)
        return clean

    def _from_netrc(self, host: str) -> tuple[str, str] | None:
        with self._lock:
            import netrc  # on first use: it imports shlex

            if self._netrc is None:
                path = os.environ.get("NETRC") or str(Path.home() / ".netrc")
                try:
                    self._netrc = netrc.netrc(path)
                except (OSError, netrc.NetrcParseError):
                    self._netrc = False
            found = self._netrc
        if not isinstance(found, netrc.netrc):
            return None
        entry = found.authenticators(host)
        if entry is None:
            return None
        login, _account, password = entry
        return login or "", password or ""

    def _lookup(self, url: str) -> tuple[str, str] | None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            return None
        with self._lock:
            cred = self._by_origin.get(_origin(parts))
        return cred or self._from_netrc((parts.hostname or "").lower())

    def with_userinfo(self, url: str) -> tuple[str, str]:
        """(``url`` with its credentials put back, the password): only for handing to pip."""
        cred = self._lookup(url)
        if cred is None:
            return url, ""
        scheme, rest = url.split("://", 1)
        user, password = (quote(c, safe="") for c in cred)
        return f"{scheme}://{user}:{password}@{rest}", cred[1]

    def header(self, url: str) -> str | None:
        """The ``Authorization`` value for ``url``, or None."""
        cred = self._lookup(url)
        if cred is None:
            return None
        import base64

        token = base64.b64encode(f"{cred[0]}:{cred[1]}".encode()).decode()
        return f"Basic {token}"
