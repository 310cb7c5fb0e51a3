"""RECORD files and a wheel's layout: rows, digests and ``.dist-info`` names, defined once.

Standard library only, no dtkguard imports: dtkguard's library imports it (``check``,
``audit --verify-files``, the baseline, ``lock --from-env``, restore's repacking, dtkuv's
effects) and ``guard install`` copies it beside the pip hook as ``_dtkguard_records.py``, as
it does with ``decision.py``.

A RECORD row is ``path,algo=digest,size`` (PEP 376 and the binary distribution format): the
digest urlsafe base64 without ``=`` padding, hash and size empty for RECORD itself and for
files an installer does not hash. Rows are read one line at a time and leniently: a NUL is
dropped, a line that is not CSV is a None row for the caller to count, and hex digests (which
some tools write) are accepted and said to be hex.
"""

from __future__ import annotations

import binascii

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

DIST_INFO = ".dist-info"
RECORD = "RECORD"
#: digest sizes by algorithm; the rest asked of hashlib once (RECORD files name sha256)
_DIGEST_SIZES: dict[str, int] = {"sha256": 32, "sha384": 48, "sha512": 64}
_URLSAFE = bytes.maketrans(b"-_", b"+/")
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_PAD = (b"", b"=", b"==", b"===")


# -- rows ---------------------------------------------------------------------------------


def rows_of(text: str) -> Iterator[list[str] | None]:
    """RECORD's CSV rows, one per line; None for a line that is not CSV (binary garbage)."""
    for line in text.replace("\0", "").splitlines():
        if not line.strip():
            continue
        if '"' not in line:  # what csv makes of a line without quotes, at a tenth of the cost
            yield line.split(",")
            continue
        import csv

        try:
            yield next(csv.reader([line]))
        except (csv.Error, StopIteration):
            yield None


#: the paths of the last RECORDs read, by their whole text (never stale): one guarded install
#: reads a vendor build's RECORD for the hook's snapshot, the file judgement and the baseline
_PATHS: dict[str, tuple[str, ...]] = {}


def paths_of(text: str) -> list[str]:
    """The path of every RECORD row that has one, in order (hash and size not looked at)."""
    got = _PATHS.get(text)
    if got is None:
        if '"' in text:
            got = tuple(row[0] for row in rows_of(text) if row and row[0])
        else:  # rows_of's rows without quotes, only their first field
            lines = text.replace("\0", "").splitlines()
            got = tuple(h for line in lines if line.strip() for h in (line.partition(",")[0],) if h)
        if len(_PATHS) >= 4:
            _PATHS.pop(next(iter(_PATHS)))
        _PATHS[text] = got
    return list(got)


def record_bytes(info: str, files: Iterable[tuple[str, bytes]]) -> bytes:
    """The RECORD of a wheel whose dist-info folder is ``info``: a sha256 row per (archive
    name, bytes) in the order given, then RECORD's own row."""
    rows = [f"{arc},{hash_field(data)},{len(data)}" for arc, data in files]
    rows.append(f"{info}/{RECORD},,")
    return ("\n".join(rows) + "\n").encode()


# -- digests ------------------------------------------------------------------------------


def decode_digest(algo: str, value: str) -> tuple[bytes, bool] | None:
    """The raw digest of a RECORD hash value, and whether it was (nonconforming) hex."""
    size = _DIGEST_SIZES.get(algo)
    if size is None:
        import hashlib  # here: sha256 (the known size) is all a check decodes

        size = _DIGEST_SIZES[algo] = hashlib.new(algo).digest_size
    if len(value) == size * 2:
        try:
            return bytes.fromhex(value), True
        except ValueError:
            pass
    try:  # base64.urlsafe_b64decode, without its per-call layers
        raw = binascii.a2b_base64(value.encode("ascii").translate(_URLSAFE) + _PAD[-len(value) % 4])
    except (binascii.Error, ValueError):
        return None
    return (raw, False) if len(raw) == size else None


def encode_digest(raw: bytes) -> str:
    """A raw digest as RECORD writes it: urlsafe base64 without ``=`` padding."""
    return binascii.b2a_base64(raw, newline=False).translate(_TO_URLSAFE).rstrip(b"=").decode()


def hash_field(data: bytes) -> str:
    """The hash field of a RECORD row for ``data``: ``sha256=<urlsafe base64>``."""
    import hashlib

    return "sha256=" + encode_digest(hashlib.sha256(data).digest())


# -- wheel layout -------------------------------------------------------------------------


def split_dist_info(entry: str) -> tuple[str, str] | None:
    """(name, version) of a ``name-version.dist-info`` folder name as written (the version
    empty when the name has none); None for any other name."""
    if not entry.endswith(DIST_INFO):
        return None
    name, _, version = entry[: -len(DIST_INFO)].partition("-")
    return name, version


def is_info_member(member: str, file: str) -> bool:
    """Whether the zip member ``member`` is ``file`` of a top-level ``*.dist-info`` folder."""
    return member.count("/") == 1 and member.endswith(f"{DIST_INFO}/{file}")


def info_member(members: Iterable[str], file: str) -> str | None:
    """The one member ``*.dist-info/<file>`` at a wheel's top; None when there is none or
    more than one (a wheel holds exactly one dist-info folder)."""
    found = [m for m in members if is_info_member(m, file)]
    return found[0] if len(found) == 1 else None
