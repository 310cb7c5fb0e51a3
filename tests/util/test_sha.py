"""`dtkguard.util.sha`: hashlib's SHA-256 digests without loading OpenSSL."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from dtkguard.util.sha import LARGE, sha256_hex
from tests.support.cli import REPO


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"abc",
        b"/opt/conda",
        "é/\udcff".encode("utf-8", "surrogateescape"),
        bytes(range(256)) * 300,
        b"x" * (LARGE - 1),
        b"y" * LARGE,  # hashlib's from here on
    ],
)
def test_the_same_digest_as_hashlib(data: bytes) -> None:
    assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_the_store_key_and_the_interpreter_cache_load_no_openssl() -> None:
    code = (
        "import sys; from dtkguard.env import interp_cache, store;"
        "store.env_key('/opt/conda'); interp_cache._file(sys.executable);"
        "print('_hashlib' in sys.modules, 'hashlib' in sys.modules)"
    )
    assert _printed(code) == ["False", "False"]


def test_small_data_loads_no_openssl_and_large_data_does() -> None:
    code = (
        "import sys; from dtkguard.util.sha import LARGE, sha256_hex;"
        "sha256_hex(b'a' * (LARGE - 1)); print('_hashlib' in sys.modules);"
        "sha256_hex(b'a' * LARGE); print('_hashlib' in sys.modules)"
    )
    assert _printed(code) == ["False", "True"]


def _printed(code: str) -> list[str]:
    """What ``python -c code`` printed in a fresh interpreter of this checkout, as words."""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return out.split()
