"""sha256 without loading OpenSSL: `hashlib` loads libcrypto (several ms) on import, which the
short paths of dtkpip and dtkuv (an env's store key, the interpreter cache's file name) do not
otherwise need. CPython's own SHA-256 module (``_sha256``, ``_sha2`` from 3.12) gives the same
digests; `hashlib` is the fallback where a build has neither."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def _constructor() -> Callable[[bytes], object]:
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found]
        except ImportError:
            from hashlib import sha256
    return sha256  # type: ignore[no-any-return]


_SHA256 = _constructor()


#: from this many bytes on, OpenSSL's SHA-256 (hardware-assisted, several times CPython's own
#: per byte) pays for loading it
LARGE = 1 << 20


def sha256_hex(data: bytes) -> str:
    """The hex SHA-256 digest of ``data`` (as ``hashlib.sha256(data).hexdigest()``): CPython's
    own module for small data, `hashlib` from `LARGE` bytes on."""
    if len(data) >= LARGE:
        import hashlib

        return hashlib.sha256(data).hexdigest()
    return _SHA256(data).hexdigest()  # type: ignore[attr-defined,no-any-return]
