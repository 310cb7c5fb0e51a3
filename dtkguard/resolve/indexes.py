"""Which indexes pip and uv would use: their configuration and environment variables.

Credentials in those URLs are kept by :class:`dtkguard.resolve.auth.Credentials`, never in a
URL dtkguard writes; uv's ``UV_INDEX_<NAME>_USERNAME``/``_PASSWORD`` go with the index named
``NAME`` in ``UV_INDEX`` (``name=url`` entries).
"""

from __future__ import annotations

import os
import sys

from dtkguard.errors import InputError
from dtkguard.resolve.auth import env_name


def _named(entry: str) -> tuple[str | None, str]:
    """uv's ``name=url`` (or a plain URL): (name or None, url)."""
    name, sep, url = entry.partition("=")
    if sep and "://" not in name and "/" not in name:
        return name, url
    return None, entry


def _uv_credentials(name: str | None) -> tuple[str, str] | None:
    if name is None:
        return None
    user = os.environ.get(f"UV_INDEX_{env_name(name)}_USERNAME")
    password = os.environ.get(f"UV_INDEX_{env_name(name)}_PASSWORD")
    if user is None and password is None:
        return None
    return user or "", password or ""


def env_extra_indexes() -> list[tuple[str, tuple[str, str] | None]]:
    """Extra indexes of ``$PIP_EXTRA_INDEX_URL``, ``$UV_INDEX`` and ``$UV_EXTRA_INDEX_URL``
    (space-separated), with uv's per-index credentials: ``[(url, (user, password) or None)]``."""
    out: list[tuple[str, tuple[str, str] | None]] = []
    for var in ("PIP_EXTRA_INDEX_URL", "UV_INDEX", "UV_EXTRA_INDEX_URL"):
        for entry in os.environ.get(var, "").split():
            name, url = _named(entry)
            if url not in [u for u, _ in out]:
                out.append((url, _uv_credentials(name)))
    return out


def default_index_credentials() -> tuple[str, str] | None:
    """uv's credentials for a named ``$UV_DEFAULT_INDEX`` (``name=url``)."""
    value = os.environ.get("UV_DEFAULT_INDEX", "").split()
    return _uv_credentials(_named(value[0])[0]) if value else None


def default_index_url(python: str | None = None) -> tuple[str, str]:
    """The public index and where it was found: ``$PIP_INDEX_URL``, uv's
    ``$UV_DEFAULT_INDEX`` or ``$UV_INDEX_URL``, else the ``index-url`` that ``pip config list``
    shows (``install.`` over ``global.``, later files over earlier), else pip's built-in default
    read from pip itself. Never a literal in dtkguard."""
    for var in ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        urls = os.environ.get(var, "").split()
        if urls:
            return _named(urls[0])[1], f"${var}"
    py = python or sys.executable
    listed = _run([py, "-m", "pip", "config", "list"])
    found: dict[str, str] = {}
    for line in listed.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.endswith(".index-url"):
            found[key.split(".", 1)[0]] = value.strip().strip("'\"")
    for section in ("install", "global"):
        if found.get(section):
            return found[section], "pip's configuration"
    code = "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"
    out = _run([py, "-c", code]).strip().splitlines()
    if out and "://" in out[-1]:
        return out[-1].strip(), "pip's configuration"
    raise InputError(
        "no public index: pip cannot tell its index-url; pass --index-url or --no-index",
        field="--index-url",
    )


def _run(cmd: list[str]) -> str:
    import subprocess  # only when pip is asked

    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout if proc.returncode == 0 else ""
