"""The baseline `guard install` records: what the env held, and the vendor builds byte for byte.

``<prefix>/dtkguard/baseline.json`` (listed in the guard's manifest with its own sha256, so
`guard status` reports it tampered or missing and `guard remove` removes it). JSON, one object:

``format``
    ``"dtkguard-baseline/1"``.
``created``, ``python``, ``prefix``, ``policy``
    When (UTC, ISO 8601), for which interpreter (as given to `guard install`) and prefix, and
    the name of the policy whose vendor builds were recorded.
``restore``
    The one command that puts the vendor builds back: ``dtkguard restore --python <python>``.
``dists``
    Every distribution installed at that time: ``{canonical name: {"name", "version",
    "site", "dist_info"}}`` (``site``: the absolute site directory as the interpreter sees it;
    ``dist_info``: the metadata directory's name inside it).
``vendor``
    Every vendor build of the policy that was installed (name and exact version as pinned):
    ``{canonical name: {"name", "version", "site", "dist_info", "top_level": [module, ...],
    "record": {"sha256", "digest", "size", "mtime_ns", "ino", "ctime_ns"}, "files": {path:
    {"sha256", "size", "mtime_ns", "ino", "ctime_ns"[, "pyc": true][, "needed": [soname,
    ...]]}}}}`` (``ino`` and ``ctime_ns`` since the store; a baseline without them is compared
    by mtime). ``record.sha256`` is the hex sha256 of the installed RECORD file;
    ``record.digest`` is `record_digest` of it (the build's identity: the same for the wheel's
    RECORD and any install of it by pip or uv). ``files`` holds every RECORD row with a hash (a
    shared object's also ``needed``: its ELF DT_NEEDED names, so that a swapped binary is named
    by what it links), keyed by the row's path as written in RECORD (relative to ``site``;
    scripts start with ``../``), each verified against RECORD while recording (a vendor build
    whose files differ from its RECORD is refused: no baseline of damage), plus the ``.pyc``
    files pip lists without a hash, marked ``"pyc": true``, whose ``sha256`` covers all but the
    16-byte header. ``direct_url``: the build's ``direct_url.json`` (PEP 610) as a dict, or
    null: where pip installed it from (a path or URL), so that a restore can install it the same
    way.
``lock``
    ``null``, or with `guard install --lock L`: ``{"path", "sha256" (of the lock file),
    "packages": {canonical name: {"version", "wheels": [{"name", "hashes": {algo: hex}}]}}}``.

`is_baseline_build` answers "is this (name, version, RECORD digest or file digests) the
vendor build of the baseline?"; `compare` finds what changed (a fast pass on size, inode and
``st_ctime_ns``, then hashing only the files whose stat changed). `dtkguard.guard.baseline`
records it.
"""

from __future__ import annotations

import os

from dtkguard.env.root import Root
from dtkguard.errors import InputError
from dtkguard.lightclass import field, record
from dtkguard.util.purepath import pure_path
from dtkguard.util.sha import sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from dtkguard.util.json_types import JSON

FORMAT = "dtkguard-baseline/1"


# --- reading ---------------------------------------------------------------------------------


def restore_command(python: str) -> str:
    """The one command that restores a guarded env's vendor builds."""
    return f"dtkguard restore --python {python}"


def baseline_path(prefix: str | os.PathLike[str]) -> Path:
    """The reference baseline of the env at ``prefix``: in the guard's store."""
    from dtkguard.env.store import env_store

    return env_store(prefix).baseline


def baseline_text(prefix: str | os.PathLike[str]) -> str:
    """`baseline_path` as text (``str(baseline_path(prefix))``), without importing pathlib."""
    from dtkguard.env.store import env_store
    from dtkguard.env.store_path import BASELINE_FILE

    return env_store(prefix).text(BASELINE_FILE)


def legacy_baseline_path(prefix: str | os.PathLike[str]) -> Path:
    """``<prefix>/dtkguard/baseline.json``: where a guard before the store (or an image built
    elsewhere) keeps its baseline; `check` reads it when the store knows no such env."""
    from pathlib import Path

    return Path(legacy_baseline_text(prefix))


def legacy_baseline_text(prefix: str | os.PathLike[str]) -> str:
    """`legacy_baseline_path` as text, without importing pathlib."""
    from dtkguard.env.interpreter import STATE_DIR
    from dtkguard.env.store_path import BASELINE_FILE
    from dtkguard.util.purepath import join

    return join(os.fspath(prefix), STATE_DIR, BASELINE_FILE)


def sha256_file(path: str | os.PathLike[str]) -> str | None:
    """Hex sha256 of a regular file (verify's reader: no FIFOs, no devices); None if unreadable."""
    from dtkguard.env.filehash import hash_file

    status, digest, _, _ = hash_file(os.fspath(path), "sha256", False)
    return digest.hex() if status == "ok" else None


def file_stat(path: str | os.PathLike[str], root: Root | None = None) -> dict[str, int] | None:
    """What a baseline keeps of a file's stat: size, mtime, inode and ctime (``os.utime`` can
    set the mtime back, `cp -p`, `rsync -t` and `tar` do; nothing sets the ctime back)."""
    try:
        st = root.stat(path) if root is not None else os.stat(path)
    except OSError:
        return None
    return _stat_fields(st)


def _stat_fields(st: os.stat_result) -> dict[str, int]:
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ino": st.st_ino,
        "ctime_ns": st.st_ctime_ns,
    }


def size_mtime(path: str) -> tuple[int, int] | None:
    """(size, mtime_ns) of ``path``; None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def pyc_body_sha256(path: str | os.PathLike[str], root: Root | None = None) -> str | None:
    """Hex sha256 of a ``.pyc`` after its 16-byte header (which holds the source's mtime and
    size): the same for every compile of the same source by the same Python, so a pyc that
    Python or an installer wrote again is told from a planted one."""
    from dtkguard.util.safe_read import read_capped

    try:
        data = read_capped(pure_path(os.fspath(path)), 64 << 20, root=root)
    except OSError:
        return None
    return sha256_hex(data[16:])


#: a baseline of the 23 DAS vendor builds is about 10 MB (torch's 20,000 files)
MAX_BASELINE_BYTES = 64 << 20


#: the last baseline `load` parsed and validated in this process: (its bytes, its data)
_parsed: tuple[bytes, dict[str, Any]] | None = None


def load(path: str | os.PathLike[str], root: Root | None = None) -> dict[str, Any] | None:
    """A baseline file; None when there is none; `InputError` when it is not a baseline: not
    a regular file, past `MAX_BASELINE_BYTES`, not JSON (nesting, huge integers), or a field
    of the wrong type (`validate`).

    The file is read on every call; the same bytes as the last call's are not parsed and
    validated again (a dtkpip or dtkuv run reads the baseline in its verdict and once more to
    follow the change): that data is shared, so callers read it and never change it in place
    (`dtkguard.guard.baseline.follow_baseline` copies what it changes)."""
    global _parsed
    from dtkguard.util.safe_read import read_capped, reason
    from dtkguard.util.text import json_loads, parse_int_checked_after

    try:
        raw = read_capped(path, MAX_BASELINE_BYTES, what="baseline", root=root)
        if _parsed is not None and _parsed[0] == raw:
            return _parsed[1]
        # `validate` checks every integer's type; the interpreter bounds their digits
        data = json_loads(raw, parse_int=parse_int_checked_after())
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"not a readable baseline: {reason(exc)}", file=str(path)) from None
    except ValueError as exc:
        raise InputError(f"not a readable baseline: {exc}", file=str(path)) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"not a dtkguard baseline (format {FORMAT})", file=str(path))
    problem = validate(data)
    if problem:
        raise InputError(f"not a dtkguard baseline: {problem}", file=str(path))
    _parsed = (raw, data)
    return data


def table_lines(text: str) -> dict[str, str]:
    """{top-level key: its line, without the comma} of a baseline text written one table a
    line in sorted order (`dtkguard.guard.baseline.dumps`); {} for any other layout."""
    raw = text.encode("utf-8", "surrogatepass")
    return {k: raw[s:e].decode("utf-8", "surrogatepass") for k, (s, e) in table_spans(raw).items()}


#: the bytes of a line `table_spans` decodes to find its key (a longer key: the whole line)
_KEY_BYTES = 4096


def table_spans(raw: bytes) -> dict[str, tuple[int, int]]:
    """`table_lines` of UTF-8 bytes as {key: (start, end) of its line in ``raw``}: only the
    start of each line is decoded (a change of ``dists`` does not decode the vendor builds'
    line of megabytes)."""
    import json  # on use, as elsewhere in this module

    if not (raw.startswith(b"{\n") and raw.endswith(b"\n}\n")):
        return {}
    decoder = json.JSONDecoder()
    out: dict[str, tuple[int, int]] = {}
    start, stop = 2, len(raw) - 3
    while start <= stop:
        end = raw.find(b"\n", start, stop)
        end = stop if end < 0 else end
        found = _key_at(decoder, raw, start, min(end, start + _KEY_BYTES))
        if found is None and end > start + _KEY_BYTES:  # the key may run past the head
            found = _key_at(decoder, raw, start, end)
        if found is None or (out and found <= max(out)):
            return {}
        out[found] = (start, end - 1 if raw[end - 1 : end] == b"," else end)
        start = end + 1
    return out


def _key_at(decoder: Any, raw: bytes, start: int, end: int) -> str | None:
    """The JSON string ``raw[start:end]`` starts with when ``": "`` follows it, else None."""
    try:
        head = raw[start:end].decode("utf-8", "surrogatepass")
        key, at = decoder.raw_decode(head)
    except (ValueError, RecursionError):
        return None
    return key if isinstance(key, str) and head[at : at + 2] == ": " else None


def _vouched(path: str | os.PathLike[str]) -> bytes | None:
    """The bytes of the baseline at ``path`` when the guard's manifest beside it vouches for
    them (their sha256: the guard wrote them, whole and valid); None otherwise. The answer is
    kept while neither file changed (`_vouch_key`): a dtkuv or dtkpip run asks up to three
    times (its verdict's two checks, then the baseline's follow) of a baseline of megabytes."""
    from dtkguard.util.safe_read import read_capped, read_json

    global _last_vouched
    key = _vouch_key(path)
    if key is not None and _last_vouched is not None and _last_vouched[0] == key:
        return _last_vouched[1]
    raw: bytes | None
    try:
        raw = read_capped(path, MAX_BASELINE_BYTES, what="baseline")
        listed = read_json(_manifest_beside(path), 16 << 20)  # no RecursionError
        if _sha256_of(raw) != listed["files"][str(path)]["sha256"]:
            raw = None
    except (OSError, ValueError, KeyError, TypeError):
        raw = None
    if key is not None and key == _vouch_key(path):  # neither changed while they were read
        _last_vouched = (key, raw)
    return raw


def _manifest_beside(path: str | os.PathLike[str]) -> str:
    """``str(Path(path).parent / "manifest.json")``."""
    from dtkguard.env.store_path import MANIFEST_FILE
    from dtkguard.util.purepath import join, parent

    return join(parent(pure_path(os.fspath(path))), MANIFEST_FILE)


def _vouch_key(path: str | os.PathLike[str]) -> tuple[object, ...] | None:
    """The baseline's and its manifest's identity now (device, inode, size, mtime, ctime: the
    guard replaces both files whole); None when either cannot be read."""
    out: list[object] = [str(path)]
    for name in (path, _manifest_beside(path)):
        try:
            st = os.stat(name)
        except OSError:
            return None
        out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(out)


#: the last answer of `_vouched`: (`_vouch_key`, bytes or None)
_last_vouched: tuple[tuple[object, ...], bytes | None] | None = None


def vouched_spans(path: str | os.PathLike[str]) -> tuple[bytes, dict[str, tuple[int, int]]] | None:
    """(bytes, `table_spans`) of the baseline at ``path`` when the manifest vouches for its
    bytes (`_vouched`), they are UTF-8 and one table a line; None otherwise (`load` it whole)."""
    import json  # on use, as elsewhere in this module

    global _split
    raw = _vouched(path)
    if raw is None:
        return None
    if _split is None or _split[0] != raw:
        if not raw.isascii():  # what dumps writes is ASCII; anything else is checked
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return None
        _split = (raw, table_spans(raw))
    _, spans = _split
    if "vendor" not in spans or line_of(raw, spans, "format") != f'"format": {json.dumps(FORMAT)}':
        return None
    return raw, dict(spans)


#: the last bytes `vouched_spans` split: (bytes, `table_spans`)
_split: tuple[bytes, dict[str, tuple[int, int]]] | None = None


def line_of(raw: bytes, spans: dict[str, tuple[int, int]], key: str) -> str | None:
    """The text of table ``key``'s line (`table_spans`); None when there is none."""
    if key not in spans:
        return None
    start, end = spans[key]
    return raw[start:end].decode("utf-8")


def line_value(lines: dict[str, str], key: str) -> Any:
    """The value of table ``key``'s line (`table_lines`); `ValueError` when it is no JSON."""
    import json  # on use, as elsewhere in this module

    from dtkguard.util.text import json_loads, parse_int_checked_after

    return json_loads(lines[key][len(json.dumps(key)) + 2 :], parse_int=parse_int_checked_after())


def _one_line(raw: bytes, key: str) -> str | None:
    """The line of top-level table ``key`` in a baseline written one table a line, found
    without reading the others (a raw newline is never inside a JSON value); None when it
    is not there exactly once."""
    import json  # on use, as elsewhere in this module

    head = f"\n{json.dumps(key)}: ".encode()
    start = raw.find(head)
    if start < 0 or raw.find(head, start + 1) >= 0:
        return None
    end = raw.find(b"\n", start + 1)
    line = raw[start + 1 : end if end >= 0 else len(raw)]
    try:
        return line.removesuffix(b",").decode("utf-8")
    except UnicodeDecodeError:
        return None


def load_dists(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``dists`` table of the baseline at ``path`` (None: no baseline), validated as
    `load` validates it; only that line is read when the manifest vouches for the file's
    bytes (`_vouched`) and it is one table a line, else the file is `load`ed whole
    (`InputError` as there)."""
    import json  # on use, as elsewhere in this module

    raw = _vouched(path)
    lines = {k: _one_line(raw, k) for k in ("format", "dists")} if raw is not None else {}
    if lines.get("format") == f'"format": {json.dumps(FORMAT)}' and lines.get("dists"):
        try:
            dists = line_value(lines, "dists")  # type: ignore[arg-type]
        except ValueError:
            dists = None
        if isinstance(dists, dict) and validate({"dists": dists, "vendor": {}}) is None:
            return dists
    data = load(path)
    return data["dists"] if data is not None else None


def loaded_text(data: dict[str, Any]) -> str | None:
    """The text `load` parsed ``data`` from (the very object it returned), else None."""
    if _parsed is None or _parsed[1] is not data:
        return None
    try:
        return _parsed[0].decode("utf-8")
    except UnicodeDecodeError:
        return None


def _wrong(value: Any, fields: Mapping[str, type | tuple[type, ...]], where: str) -> str | None:
    if not isinstance(value, dict):
        return f"{where}: not a table"
    for key, kind in fields.items():
        if key in value and not isinstance(value[key], kind):
            return f"{where}.{key}: not a {getattr(kind, '__name__', 'value of its type')}"
    return None


_DIST = {"name": str, "version": str, "site": str, "dist_info": str}
_FILE = {"sha256": str, "size": int, "mtime_ns": int, "pyc": bool}
_RECORD = {"sha256": str, "digest": str, "size": int, "mtime_ns": int}


def validate(data: dict[str, Any]) -> str | None:
    """The first field of a baseline that has the wrong type ("vendor.torch.files.X.size: not
    a int"); None when every field dtkguard reads is as `record` writes it."""
    for table in ("dists", "vendor"):
        if not isinstance(data.get(table), dict):
            return f"no '{table}' table"
    for key, entry in data["dists"].items():
        problem = _wrong(entry, _DIST, f"dists.{key}")
        if problem:
            return problem
    for key, entry in data["vendor"].items():
        where = f"vendor.{key}"
        problem = _wrong(entry, {**_DIST, "record": dict, "files": dict}, where)
        if problem or any(k not in entry for k in (*_DIST, "record", "files")):
            return (
                problem
                or f"{where}: a field of name, version, site, dist_info, record, files is missing"
            )
        problem = _wrong(entry["record"], _RECORD, f"{where}.record") or next(
            (
                p
                for rel, f in entry["files"].items()
                if (p := _wrong(f, _FILE, f"{where}.files.{rel}"))
            ),
            None,
        )
        if problem:
            return problem
    return None


#: the last bytes `_sha256_of` hashed and their hex digest
_hashed: tuple[bytes, str] | None = None


def _sha256_of(data: bytes) -> str:
    """Hex sha256 of ``data``; the same bytes as the last call's are not hashed again."""
    global _hashed
    if _hashed is None or _hashed[0] != data:
        _hashed = (data, sha256_hex(data))
    return _hashed[1]


def tampered(inner: str, host: str | os.PathLike[str], root: Root | None = None) -> bool:
    """The baseline's digest differs from the one the guard's manifest holds (its paths are
    the ones the guarded interpreter sees, so an image's own manifest is read by inner path);
    both read confined to ``root``."""
    from dtkguard.util.safe_read import read_capped

    try:
        from dtkguard.util.text import json_loads

        text = read_capped(_manifest_beside(host), 16 << 20, root=root)
        entry = json_loads(text.decode("utf-8"))["files"][inner]
        data = read_capped(host, MAX_BASELINE_BYTES, root=root)
        recorded: object = entry["sha256"]  # the manifest's JSON, unchecked
        return _sha256_of(data) != recorded
    except (OSError, ValueError, KeyError, TypeError):
        return False  # no manifest (a copied baseline): it stands on its own


# --- identity -------------------------------------------------------------------------------


#: dist-info files that come from the wheel itself; the others (INSTALLER, REQUESTED,
#: direct_url.json, uv_cache.json, RECORD ...) each installer writes in its own way, so they
#: differ between two installs of the very same build
WHEEL_METADATA = ("METADATA", "WHEEL", "entry_points.txt", "top_level.txt")


def _installer_written(rel: str) -> bool:
    head, _, base = rel.rpartition("/")
    return head.endswith(".dist-info") and "/" not in head and base not in WHEEL_METADATA


def record_digest(text: str) -> str:
    """The identity of a build from its RECORD: hex sha256 over the sorted ``path,sha256``
    rows of the files the wheel itself ships (not what the installer writes: INSTALLER,
    REQUESTED, direct_url.json, uv_cache.json, ``.pyc``, scripts). The same for the wheel's
    RECORD and for any installed copy of it, by pip or uv."""
    from dtkguard.records import decode_digest, rows_of

    lines = []
    for row in rows_of(text):
        if row is None or len(row) != 3 or not row[1] or _installer_written(row[0]):
            continue
        if not comparable(row[0]):
            continue
        algo, _, value = row[1].partition("=")
        decoded = decode_digest("sha256", value) if algo.lower() == "sha256" else None
        lines.append(f"{row[0]},{decoded[0].hex() if decoded else row[1]}")
    return sha256_hex("\n".join(sorted(lines)).encode())


def comparable(rel: str) -> bool:
    """Files a wheel and its installed copy share (`dtkguard.decision` decides)."""
    from dtkguard.decision import comparable as shared

    return shared(rel)


def is_baseline_build(
    baseline: dict[str, Any],
    name: str,
    version: str,
    *,
    record_sha256: str | None = None,
    files: dict[str, str] | None = None,
    wheel_sha256: str | None = None,
) -> bool | None:
    """Is (name, version) with these digests the vendor build the baseline recorded?
    `dtkguard.decision.baseline_build` decides, as it does inside the pip hook."""
    from dtkguard.decision import baseline_build

    return baseline_build(baseline, name, version, record_sha256, files, wheel_sha256)


# --- comparing -------------------------------------------------------------------------------


@record
class Change:
    """What happened to one vendor build of the baseline."""

    key: str
    name: str
    version: str
    #: the dist-info as the target sees it
    dist_info: str
    #: "missing" (dist-info gone), "record" (RECORD differs) or "files"
    kind: str
    #: (RECORD path, "modified" | "missing") for kind "files"
    files: list[tuple[str, str]] = field(default_factory=list)


@record
class CompareStats:
    """How much work a comparison did: files stat'ed and files hashed; ``seen``: the
    ``[ino, ctime_ns, sha256]`` of files a hash found equal to the recorded digest since the
    baseline was recorded (the store's stat cache: not hashed again while they stay so),
    ``verified``: those this comparison found."""

    stated: int = 0
    hashed: int = 0
    seen: dict[str, list[JSON]] = field(default_factory=dict)
    verified: dict[str, list[JSON]] = field(default_factory=dict)


def _host(root: Root, inner: str) -> str:
    if root.is_host:
        return inner
    try:
        return str(root.resolve(inner))
    except OSError:
        return os.path.join(str(root.path), inner.lstrip("/"))


def _unchanged(st: os.stat_result, recorded: dict[str, Any], seen: list[JSON] | None) -> bool:
    """The fast pass: the same inode and ctime as recorded (or as when a hash last found the
    bytes equal to the recorded digest: ``seen``, ``[ino, ctime_ns, sha256]``); a baseline
    without them: the same mtime."""
    if seen is not None and list(seen) == [st.st_ino, st.st_ctime_ns, recorded.get("sha256")]:
        return True
    if "ctime_ns" in recorded:
        return (st.st_ino, st.st_ctime_ns) == (recorded.get("ino"), recorded["ctime_ns"])
    return st.st_mtime_ns == recorded.get("mtime_ns")


def _changed(
    root: Root,
    path: str,
    recorded: dict[str, Any],
    stats: CompareStats,
    confined: str,
    fresh: dict[str, dict[str, int]] | None = None,
) -> str | None:
    """None when the file is as recorded; else "missing" or "modified". Hashes only when the
    size is equal and the inode or ctime is not; a file found equal that way goes into
    ``fresh`` (path -> its stat now, `file_stat`'s fields)."""
    from dtkguard.env.filehash import hash_file

    stats.stated += 1
    host = _host(root, path) if confined else path
    try:
        st = root.stat(host)
    except OSError:
        return "missing"
    if st.st_size != recorded.get("size"):
        return "modified"
    if _unchanged(st, recorded, stats.seen.get(path)):
        return None
    stats.hashed += 1
    if recorded.get("pyc"):
        same = pyc_body_sha256(host, root) == recorded.get("sha256")
    else:
        status, digest, _, _ = hash_file(host, "sha256", confined)
        same = status == "ok" and digest.hex() == recorded.get("sha256")
    if same:
        stats.verified[path] = [st.st_ino, st.st_ctime_ns, recorded.get("sha256")]
        if fresh is not None:
            fresh[path] = _stat_fields(st)
        return None
    return "modified"


def _record_changed(
    root: Root,
    inner: str,
    recorded: dict[str, Any],
    stats: CompareStats,
    confined: str,
    fresh: dict[str, dict[str, int]] | None = None,
) -> bool:
    """The RECORD is another build's: its `record_digest` differs (a reinstall of the same
    build by another installer rewrites the file, not the digest)."""
    if _changed(root, inner, recorded, stats, confined, fresh) is None:
        return False
    if "digest" not in recorded:
        return True
    from dtkguard.util.safe_read import read_capped

    host = pure_path(_host(root, inner))
    try:
        text = read_capped(host, 64 << 20, root=root).decode("utf-8", "replace")
    except OSError:
        return True
    if record_digest(text) != recorded["digest"]:
        return True
    st = file_stat(host, root)
    if fresh is not None and st is not None:
        fresh[inner] = st
    return False


def compare(
    baseline: dict[str, Any],
    root: Root | None = None,
    stats: CompareStats | None = None,
    fresh: dict[str, dict[str, int]] | None = None,
) -> list[Change]:
    """Every vendor build of the baseline that is gone, not the recorded build, or changed.

    Files the installer writes itself (INSTALLER, REQUESTED, direct_url.json, ...) are not
    compared. A ``.pyc`` is derived: a missing one is not a change (Python writes it again);
    one whose code (all but the header) differs is (a planted ``.pyc``)."""
    root = root or Root()
    stats = stats if stats is not None else CompareStats()
    confined = "" if root.is_host else str(root.path)  # the root files are opened in
    out: list[Change] = []
    for key, entry in sorted(baseline.get("vendor", {}).items()):
        site = entry["site"]
        dist_info = os.path.join(site, entry["dist_info"])
        label = (key, entry["name"], entry["version"], dist_info)
        if not root.is_dir(_host(root, dist_info)):
            out.append(Change(*label, "missing"))
            continue
        record = f"{dist_info}/RECORD"
        if _record_changed(root, record, entry["record"], stats, confined, fresh):
            out.append(Change(*label, "record"))
        files = []
        for rel, recorded in sorted(entry["files"].items()):
            if _installer_written(rel):
                continue
            inner = os.path.normpath(os.path.join(site, rel))
            what = _changed(root, inner, recorded, stats, confined, fresh)
            if what == "missing" and rel.endswith(".pyc"):
                continue  # derived: Python writes it again from the source
            if what is not None:
                files.append((rel, what))
        if files:
            out.append(Change(*label, "files", files))
    return out
