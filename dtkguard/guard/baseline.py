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
    "record": {"sha256", "digest", "size", "mtime_ns"}, "files": {path: {"sha256", "size",
    "mtime_ns"[, "pyc": true]}}}}``. ``record.sha256`` is the hex sha256 of the installed RECORD
    file; ``record.digest`` is `record_digest` of it (the build's identity: the same for the
    wheel's RECORD and any install of it by pip or uv). ``files`` holds every RECORD row with a
    hash, keyed by the row's path as written in RECORD (relative to ``site``; scripts start with
    ``../``), each verified against RECORD while recording (a vendor build whose files differ
    from its RECORD is refused: no baseline of damage), plus the ``.pyc`` files pip lists
    without a hash, marked ``"pyc": true``, whose ``sha256`` covers all but the 16-byte header.
    ``direct_url``: the build's ``direct_url.json`` (PEP 610) as a dict, or null: where pip
    installed it from (a path or URL), so that a restore can install it the same way.
``lock``
    ``null``, or with `guard install --lock L`: ``{"path", "sha256" (of the lock file),
    "packages": {canonical name: {"version", "wheels": [{"name", "hashes": {algo: hex}}]}}}``.

`is_baseline_build` answers "is this (name, version, RECORD digest or file digests) the
vendor build of the baseline?"; `compare` finds what changed (a fast size/mtime pass, then
hashing only the files whose stat changed); `tripwire_text` is the small extract the import
tripwire reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from dtkguard.env.root import Root
from dtkguard.errors import DtkguardError, InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from dtkguard.env.dist import Dist
    from dtkguard.guard.target import Interpreter
    from dtkguard.lock.read import Lock
    from dtkguard.policy.compiled import CompiledPolicy

FORMAT = "dtkguard-baseline/1"
FILE_NAME = "baseline.json"
TRIPWIRE_FILE = "tripwire.txt"
#: files besides RECORD the import tripwire stats per vendor build (the largest ones)
TRIPWIRE_LARGEST = 3


class BaselineError(DtkguardError):
    """A vendor build cannot be recorded (its files differ from its RECORD). Exit 1."""

    exit_code = 1


def restore_command(python: str) -> str:
    """The one command that restores a guarded env's vendor builds."""
    return f"dtkguard restore --python {python}"


def baseline_path(prefix: str | os.PathLike[str]) -> Path:
    from dtkguard.guard.target import STATE_DIR

    return Path(prefix) / STATE_DIR / FILE_NAME


def sha256_file(path: str | os.PathLike[str]) -> str | None:
    """Hex sha256 of a regular file (verify's reader: no FIFOs, no devices); None if unreadable."""
    from dtkguard.env.record import hash_file

    status, digest, _, _ = hash_file(os.fspath(path), "sha256", False)
    return digest.hex() if status == "ok" else None


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


# --- recording ---------------------------------------------------------------------------


def _top_level(dist: Dist, rels: list[str]) -> list[str]:
    """Importable top-level names: ``top_level.txt`` when present, else from RECORD paths."""
    text = dist._small("top_level.txt")
    names = {n.strip() for n in text.splitlines() if n.strip()} if text else set()
    if not names:
        for rel in rels:
            head = rel.split("/", 1)[0]
            if (
                head.startswith("..")
                or head.endswith((".dist-info", ".data"))
                or head
                in (
                    "__pycache__",
                    "",
                )
            ):
                continue
            name = head.split(".", 1)[0] if "/" not in rel else head
            if name.isidentifier():
                names.add(name)
    return sorted(n for n in names if n.isidentifier() and "/" not in n)


def _record_dist(dist: Dist) -> dict[str, Any]:
    """One vendor build: its RECORD digest and every hashed RECORD file, verified."""
    from dtkguard.audit.verify import record_jobs, verify

    root = Root()
    jobs, _ = record_jobs(dist, root)
    issues = verify([dist], root).issues
    bad = [i for i in issues if i.kind in ("modified", "missing", "unreadable", "outside")]
    if dist.record is None:
        bad += [i for i in issues if i.kind in ("no-record", "distro")]
    if bad:
        shown = ", ".join(f"{i.path} ({i.kind})" for i in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise BaselineError(
            f"{dist.name} {dist.version} does not match its own RECORD ({shown}{more}); "
            "refusing to record it as the vendor build: reinstall it from the vendor wheelhouse "
            "first"
        )
    relocated = {i.path for i in issues if i.kind == "shebang"}
    site = str(dist.site)
    files: dict[str, dict[str, Any]] = {}
    for job in jobs:
        rel = os.path.relpath(job.inner, site)
        st = _stat(job.host)
        if st is None:  # vanished since verify: refuse rather than record a hole
            raise BaselineError(f"{job.inner} vanished while recording the baseline")
        digest = job.digest.hex() if job.algo == "sha256" and job.inner not in relocated else None
        files[rel] = {"sha256": digest or sha256_file(job.host), "size": st[0], "mtime_ns": st[1]}
    files.update(_pyc_files(dist))
    record = dist.record
    assert record is not None
    rst = _stat(str(record))
    return {
        "name": dist.name,
        "version": dist.version,
        "site": site,
        "dist_info": dist.path.name,
        "top_level": _top_level(dist, list(files)),
        "record": {
            "sha256": sha256_file(record),
            "digest": record_digest(record.read_text(encoding="utf-8", errors="replace")),
            "size": rst[0] if rst else None,
            "mtime_ns": rst[1] if rst else None,
        },
        "files": files,
        "direct_url": dist.direct_url,
    }


def pyc_body_sha256(path: str | os.PathLike[str]) -> str | None:
    """Hex sha256 of a ``.pyc`` after its 16-byte header (which holds the source's mtime and
    size): the same for every compile of the same source by the same Python, so a pyc that
    Python or an installer wrote again is told from a planted one."""
    from dtkguard.env.root import read_capped

    try:
        data = read_capped(Path(path), 64 << 20)
    except OSError:
        return None
    return hashlib.sha256(data[16:]).hexdigest()


def _pyc_files(dist: Dist) -> dict[str, dict[str, Any]]:
    """The ``.pyc`` files pip compiled and listed in RECORD without a hash: their body digest."""
    from dtkguard.env.record import rows_of
    from dtkguard.env.root import read_capped

    record = dist.record
    if record is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    text = read_capped(record, 64 << 20).decode("utf-8", "replace")
    for row in rows_of(text):
        if row is None or len(row) != 3 or row[1] or not row[0].endswith(".pyc"):
            continue
        path = os.path.normpath(os.path.join(dist.site, row[0]))
        st, body = _stat(path), pyc_body_sha256(path)
        if st is not None and body is not None:
            out[row[0]] = {"sha256": body, "size": st[0], "mtime_ns": st[1], "pyc": True}
    return out


def lock_data(lock: Lock) -> dict[str, Any]:
    packages = {
        p.key: {
            "version": p.version,
            "wheels": [
                {"name": f.name or os.path.basename(f.path or f.url or ""), "hashes": f.hashes}
                for f in p.files
                if (f.name or f.path or f.url or "").endswith(".whl")
            ],
        }
        for p in lock.packages
    }
    return {"path": str(lock.path), "sha256": sha256_file(lock.path), "packages": packages}


def record(interp: Interpreter, policy: CompiledPolicy, lock: Lock | None = None) -> dict[str, Any]:
    """The baseline of ``interp`` under ``policy`` (see the module docstring for the format)."""
    from dtkguard.env.environment import from_python
    from dtkguard.rules.vendor import same_version

    env = from_python(interp.python)
    dists: dict[str, dict[str, Any]] = {}
    vendor: dict[str, dict[str, Any]] = {}
    for dist in env:
        if dist.key in dists:
            continue
        dists[dist.key] = {
            "name": dist.name,
            "version": dist.version,
            "site": str(dist.site),
            "dist_info": dist.path.name,
        }
        pin = policy.vendor_build(dist.name)
        if pin is not None and same_version(dist.version, pin):
            vendor[dist.key] = _record_dist(dist)
    return {
        "format": FORMAT,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": interp.python,
        "prefix": str(interp.prefix),
        "policy": policy.name,
        "restore": restore_command(interp.python),
        "dists": dists,
        "vendor": vendor,
        "lock": lock_data(lock) if lock is not None else None,
    }


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def load(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """A baseline file; None when there is none; `InputError` when it is not a baseline."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable baseline: {exc}", file=str(path)) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"not a dtkguard baseline (format {FORMAT})", file=str(path))
    if not isinstance(data.get("vendor"), dict) or not isinstance(data.get("dists"), dict):
        raise InputError("not a dtkguard baseline: no 'vendor' or 'dists' table", file=str(path))
    return data


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
    from dtkguard.env.record import decode_digest, rows_of

    lines = []
    for row in rows_of(text):
        if row is None or len(row) != 3 or not row[1] or _installer_written(row[0]):
            continue
        if not comparable(row[0]):
            continue
        algo, _, value = row[1].partition("=")
        decoded = decode_digest("sha256", value) if algo.lower() == "sha256" else None
        lines.append(f"{row[0]},{decoded[0].hex() if decoded else row[1]}")
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()


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


@dataclass
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


@dataclass
class CompareStats:
    """How much work a comparison did: files stat'ed and files hashed."""

    stated: int = 0
    hashed: int = 0


def _host(root: Root, inner: str) -> str:
    if root.is_host:
        return inner
    try:
        return str(root.resolve(inner))
    except OSError:
        return os.path.join(str(root.path), inner.lstrip("/"))


def _changed(
    root: Root,
    path: str,
    recorded: dict[str, Any],
    stats: CompareStats,
    confined: bool,
    fresh: dict[str, tuple[int, int]] | None = None,
) -> str | None:
    """None when the file is as recorded; else "missing" or "modified". Hashes only when the
    size is equal and the mtime is not; a file found equal that way goes into ``fresh``
    (path -> its new size and mtime)."""
    from dtkguard.env.record import hash_file

    stats.stated += 1
    host = _host(root, path) if confined else path
    st = _stat(host)
    if st is None:
        return "missing"
    if st == (recorded.get("size"), recorded.get("mtime_ns")):
        return None
    if st[0] != recorded.get("size"):
        return "modified"
    stats.hashed += 1
    if recorded.get("pyc"):
        same = pyc_body_sha256(host) == recorded.get("sha256")
    else:
        status, digest, _, _ = hash_file(host, "sha256", confined)
        same = status == "ok" and digest.hex() == recorded.get("sha256")
    if same:
        if fresh is not None:
            fresh[path] = st
        return None
    return "modified"


def _record_changed(
    root: Root,
    inner: str,
    recorded: dict[str, Any],
    stats: CompareStats,
    confined: bool,
    fresh: dict[str, tuple[int, int]] | None = None,
) -> bool:
    """The RECORD is another build's: its `record_digest` differs (a reinstall of the same
    build by another installer rewrites the file, not the digest)."""
    if _changed(root, inner, recorded, stats, confined, fresh) is None:
        return False
    if "digest" not in recorded:
        return True
    from dtkguard.env.root import read_capped

    host = Path(_host(root, inner))
    try:
        text = read_capped(host, 64 << 20).decode("utf-8", "replace")
    except OSError:
        return True
    if record_digest(text) != recorded["digest"]:
        return True
    st = _stat(str(host))
    if fresh is not None and st is not None:
        fresh[inner] = st
    return False


def compare(
    baseline: dict[str, Any],
    root: Root | None = None,
    stats: CompareStats | None = None,
    fresh: dict[str, tuple[int, int]] | None = None,
) -> list[Change]:
    """Every vendor build of the baseline that is gone, not the recorded build, or changed.

    Files the installer writes itself (INSTALLER, REQUESTED, direct_url.json, ...) are not
    compared. A ``.pyc`` is derived: a missing one is not a change (Python writes it again);
    one whose code (all but the header) differs is (a planted ``.pyc``)."""
    root = root or Root()
    stats = stats if stats is not None else CompareStats()
    confined = not root.is_host
    out: list[Change] = []
    for key, entry in sorted(baseline.get("vendor", {}).items()):
        site = entry["site"]
        dist_info = os.path.join(site, entry["dist_info"])
        label = (key, entry["name"], entry["version"], dist_info)
        if not os.path.isdir(_host(root, dist_info)):
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


def refreshed(baseline: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The baseline with the size and mtime of every file whose bytes are still the recorded
    ones (a reinstall of the same build); changed files keep their old stat, so they stay
    reported. Returns (baseline, number of entries refreshed)."""
    import copy

    fresh: dict[str, tuple[int, int]] = {}
    compare(baseline, fresh=fresh)
    data = copy.deepcopy(baseline)
    count = 0
    for entry in data.get("vendor", {}).values():
        site = entry["site"]
        rows = [(os.path.join(site, entry["dist_info"], "RECORD"), entry["record"])]
        rows += [(os.path.normpath(os.path.join(site, r)), f) for r, f in entry["files"].items()]
        for path, recorded in rows:
            if path in fresh:
                recorded["size"], recorded["mtime_ns"] = fresh[path]
                count += 1
        if rows[0][0] in fresh:
            entry["record"]["sha256"] = sha256_file(rows[0][0])
    return data, count


# --- the import tripwire's extract ---------------------------------------------------------


def tripwire_text(baseline: dict[str, Any], mode: str) -> str:
    """The import tripwire's file (``tripwire.txt``, tab-separated, read without json): per
    vendor build its RECORD and its top-level ``__init__.py``/``version.py`` and largest files,
    with the size and mtime the baseline recorded; which top-level module belongs to which
    build; the mode and the restore command. Lines::

        mode<TAB>warn|error|off
        restore<TAB>dtkguard restore --python PY
        dist<TAB>KEY<TAB>NAME VERSION
        stat<TAB>KEY<TAB>SIZE<TAB>MTIME_NS<TAB>ABSOLUTE PATH
        module<TAB>TOP-LEVEL NAME<TAB>KEY
        origin<TAB>TOP-LEVEL NAME<TAB>ABSOLUTE PATH (the file ``import NAME`` must load)
    """
    lines = [
        "# dtkguard import tripwire: written by `dtkguard guard install` from baseline.json",
        f"mode\t{mode}",
        f"restore\t{baseline.get('restore', '')}",
    ]
    for key, entry in sorted(baseline.get("vendor", {}).items()):
        site = entry["site"]
        dist_info = os.path.join(site, entry["dist_info"])
        record = entry["record"]
        lines.append(f"dist\t{key}\t{entry['name']} {entry['version']}")
        lines.append(f"stat\t{key}\t{record['size']}\t{record['mtime_ns']}\t{dist_info}/RECORD")
        files = entry["files"]
        key_files = [
            rel
            for top in entry["top_level"]
            for rel in (f"{top}/__init__.py", f"{top}/version.py", f"{top}.py")
            if rel in files
        ]
        largest = sorted(
            (r for r in files if comparable(r) and r not in key_files),
            key=lambda r: (-files[r]["size"], r),
        )[:TRIPWIRE_LARGEST]
        for rel in key_files + largest:
            f = files[rel]
            path = os.path.normpath(os.path.join(site, rel))
            lines.append(f"stat\t{key}\t{f['size']}\t{f['mtime_ns']}\t{path}")
        for top in entry["top_level"]:
            lines.append(f"module\t{top}\t{key}")
            origin = _origin(top, files)
            if origin:
                lines.append(f"origin\t{top}\t{os.path.normpath(os.path.join(site, origin))}")
    return "\n".join(lines) + "\n"


def _origin(top: str, files: dict[str, Any]) -> str | None:
    """The RECORD path ``import top`` loads: a package's ``__init__.py``, a module, an
    extension."""
    for rel in (f"{top}/__init__.py", f"{top}.py"):
        if rel in files:
            return rel
    ext = sorted(r for r in files if "/" not in r and r.startswith(top + ".") and r.endswith(".so"))
    return ext[0] if ext else None


def tripwire_modules(baseline: dict[str, Any]) -> list[str]:
    """The top-level modules of the baseline's vendor builds, for the tripwire's .pth line."""
    return sorted({top for e in baseline.get("vendor", {}).values() for top in e["top_level"]})
