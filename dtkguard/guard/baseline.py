"""Recording the baseline `guard install` keeps, and the import tripwire's extract of it.

The file's format, reading it and comparing a target with it are `dtkguard.env.baseline` (the
baseline rules read it too); here `record` writes it from a guarded interpreter, `refreshed`
takes in the stat of a reinstall of the same build, and `tripwire_text` is the small extract the
import tripwire reads.
"""

from __future__ import annotations

import json
import os
import time

from dtkguard.decision import canonical
from dtkguard.env.baseline import (
    FORMAT,
    comparable,
    compare,
    file_stat,
    record_digest,
    restore_command,
    sha256_file,
    table_lines,
)
from dtkguard.env.baseline import (
    pyc_body_sha256 as pyc_body_sha256,  # re-exported: guard/layers.py calls it from here
)
from dtkguard.env.root import Root
from dtkguard.errors import DtkguardError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from dtkguard.env.dist import Dist
    from dtkguard.env.interpreter import Interpreter
    from dtkguard.lock.read import Lock
    from dtkguard.policy.compiled import CompiledPolicy

TRIPWIRE_FILE = "tripwire.txt"
#: files besides RECORD the import tripwire stats per vendor build (the largest ones)
TRIPWIRE_LARGEST = 3


class BaselineError(DtkguardError):
    """A vendor build cannot be recorded (its files differ from its RECORD). Exit 1."""

    exit_code = 1


# --- recording ---------------------------------------------------------------------------


def _top_level(dist: Dist, rels: list[str]) -> list[str]:
    """Importable top-level names: ``top_level.txt`` when present, else from RECORD paths."""
    text = dist.small_file("top_level.txt")
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
        st = file_stat(job.host)
        if st is None:  # vanished since verify: refuse rather than record a hole
            raise BaselineError(f"{job.inner} vanished while recording the baseline")
        digest = job.digest.hex() if job.algo == "sha256" and job.inner not in relocated else None
        files[rel] = {"sha256": digest or sha256_file(job.host), **st}
        needed = _needed(rel, job.host)
        if needed is not None:
            files[rel]["needed"] = needed
    files.update(_pyc_files(dist))
    record = dist.record
    assert record is not None
    rst: Mapping[str, int | None] = file_stat(record) or {"size": None, "mtime_ns": None}
    return {
        "name": dist.name,
        "version": dist.version,
        "site": site,
        "dist_info": dist.path.name,
        "top_level": _top_level(dist, list(files)),
        "record": {
            "sha256": sha256_file(record),
            "digest": record_digest(record.read_text(encoding="utf-8", errors="replace")),
            **rst,
        },
        "files": files,
        "direct_url": dist.direct_url,
    }


def _needed(rel: str, host: str) -> list[str] | None:
    """The DT_NEEDED names of a shared object the vendor build ships (None: not ELF, or not
    readable as ELF), recorded so that a swapped binary is named by what it links."""
    from dtkguard.elf import ElfError
    from dtkguard.env.binaries import looks_shared, read_binary

    if not looks_shared(rel):
        return None
    try:
        linkage = read_binary(host)
    except (OSError, ElfError):
        return None
    return list(linkage.needed) if linkage is not None else None


def _pyc_files(dist: Dist) -> dict[str, dict[str, Any]]:
    """The ``.pyc`` files pip compiled and listed in RECORD without a hash: their body digest."""
    from dtkguard.env.root import read_capped
    from dtkguard.records import rows_of

    record = dist.record
    if record is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    text = read_capped(record, 64 << 20).decode("utf-8", "replace")
    for row in rows_of(text):
        if row is None or len(row) != 3 or row[1] or not row[0].endswith(".pyc"):
            continue
        path = os.path.normpath(os.path.join(dist.site, row[0]))
        st, body = file_stat(path), pyc_body_sha256(path)
        if st is not None and body is not None:
            out[row[0]] = {"sha256": body, **st, "pyc": True}
    return out


def lock_data(lock: Lock) -> dict[str, Any]:
    """What the baseline records of the lock it was made with: every package's version and
    wheels (an installed entry of ``[tool.dtkguard]``: none), the lock's path and digest."""
    from dtkguard.lock.read import file_name, files, version_of

    packages: dict[str, Any] = {
        p.name: {
            "version": version_of(p),
            "wheels": [
                {"name": file_name(f), "hashes": dict(f.hashes)}
                for f in files(p)
                if (getattr(f, "name", None) or f.path or f.url or "").endswith(".whl")
            ],
        }
        for p in lock.pylock.packages
    }
    for item in lock.dtkguard.installed:
        packages[item.key] = {"version": item.version, "wheels": []}
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


def dumps(data: dict[str, Any], previous: tuple[dict[str, Any], str] | None = None) -> str:
    """The baseline's text: one line per top-level table (``indent`` would make json use its
    pure-Python encoder, 3x slower on a 10,000-file torch, and every change rewrites it).
    ``previous``: (data as `load` returned it, the text it was parsed from): a table that is
    still that very object keeps its line of that text (a change that moves ``dists`` does
    not encode the vendor builds' 10,000 files again)."""
    lines = table_lines(previous[1]) if previous is not None else {}
    if previous is not None and set(lines) != set(previous[0]):
        lines = {}  # not one line per table of that data
    parts = [
        lines[k] if k in lines and data[k] is previous[0][k]  # type: ignore[index]
        else f"{json.dumps(k)}: {json.dumps(data[k], sort_keys=True)}"
        for k in sorted(data)
    ]  # fmt: skip
    return "{\n" + ",\n".join(parts) + "\n}\n"


# --- identity -------------------------------------------------------------------------------


# --- comparing -------------------------------------------------------------------------------


def refreshed(baseline: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The baseline with the size and mtime of every file whose bytes are still the recorded
    ones (a reinstall of the same build); changed files keep their old stat, so they stay
    reported. Returns (baseline, number of entries refreshed)."""
    import copy

    fresh: dict[str, dict[str, int]] = {}
    compare(baseline, fresh=fresh)
    data = copy.deepcopy(baseline)
    count = 0
    for entry in data.get("vendor", {}).values():
        site = entry["site"]
        rows = [(os.path.join(site, entry["dist_info"], "RECORD"), entry["record"])]
        rows += [(os.path.normpath(os.path.join(site, r)), f) for r, f in entry["files"].items()]
        for path, recorded in rows:
            if path in fresh:
                recorded.update(fresh[path])
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
    vendor = baseline.get("vendor")
    tops: set[str] = set()
    for entry in vendor.values() if isinstance(vendor, dict) else ():
        listed = entry.get("top_level") if isinstance(entry, dict) else None
        if isinstance(listed, list):
            tops.update(t for t in listed if isinstance(t, str))
    return sorted(tops)


# --- following approved changes ------------------------------------------------------------

#: the tools whose journalled changes the guard judged before they ran
APPROVING_TOOLS = ("dtkpip", "dtkuv")


def refused(policy: CompiledPolicy | None, name: str, version: str) -> list[tuple[str, str]]:
    """Why the decision core does not let ``name`` at ``version`` be in the environment:
    (rule, message) of each refusal; [] when it may be there."""
    from dtkguard.decision import decide, refusals

    data = policy.decision_json() if policy is not None else {}
    today = time.strftime("%Y-%m-%d")  # `datetime.date.today().isoformat()`, without datetime
    found = refusals(decide(data, [(name, version)], today))
    return [(p.rule, p.message) for p in found]


def allowed(policy: CompiledPolicy | None, name: str, version: str) -> bool:
    """Does the decision core let ``name`` at ``version`` be in the environment?"""
    return not refused(policy, name, version)


def _move(data: dict[str, Any], interp: Interpreter, changes: Any) -> list[str]:
    """Apply an approved transaction's changes to the baseline's ``dists``: what the policy
    allows, never a vendor build the baseline recorded (only `guard install --rebaseline`
    moves those). ``guard_install`` keeps the dists of `guard install` (``--to guard-install``)."""
    from dtkguard.env.environment import from_python
    from dtkguard.env.store import env_store
    from dtkguard.guard.hook_policy import read_policy_json

    policy = read_policy_json(env_store(interp.prefix).policy) or read_policy_json(
        interp.policy_file
    )
    dists = data["dists"]
    # a copy of the mapping is enough: below, entries are replaced or removed, never changed
    at_install = {"created": data.get("created"), "dists": dict(dists)}
    data.setdefault("guard_install", at_install)
    installed: dict[str, Dist] = {}
    dist: Dist | None
    for dist in from_python(interp.python):
        installed.setdefault(dist.key, dist)
    moved = []
    dists = data["dists"] = dict(dists)  # the loaded data is shared (`load`): not changed
    for key, _before, after in changes:
        if key in data["vendor"]:
            continue
        dist = installed.get(key)
        if after is None or dist is None:
            if dists.pop(key, None) is not None:
                moved.append(f"-{key}")
        elif allowed(policy, dist.name, dist.version):
            entry = {"name": dist.name, "version": dist.version, "site": str(dist.site)}
            dists[key] = {**entry, "dist_info": dist.path.name}
            moved.append(f"{dist.name} {dist.version}")
    return moved


def _write_guard_file(
    interp: Interpreter, path: Any, text: str | bytes, mode: int | None = None
) -> None:
    """Write one of the guard's files and its digest into the guard's manifest in the store
    (so `guard status` and `baseline-tampered` take it as the guard's own)."""
    import hashlib

    from dtkguard.env.store import env_store
    from dtkguard.util.atomic import atomic_write_bytes, atomic_write_text

    data = text.encode() if isinstance(text, str) else text
    atomic_write_bytes(path, data, mode)
    manifest = env_store(interp.prefix).manifest
    try:
        from dtkguard.util.safe_read import read_json

        listed = read_json(manifest, what="manifest")
        entry = listed["files"][str(path)]
    except (OSError, ValueError, KeyError, TypeError):
        return  # not listed: a baseline without a manifest stands on its own
    entry["sha256"] = hashlib.sha256(data).hexdigest()
    atomic_write_text(manifest, json.dumps(listed, indent=1, sort_keys=True) + "\n")


def _tripwire_mode(path: Path) -> str | None:
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("mode\t"):
                return line.split("\t", 1)[1]
    except OSError:
        return None
    return None


def follow(
    interp: Interpreter,
    changes: Any = (),
    *,
    approved: bool = True,
    touched: Sequence[str] | None = None,
) -> list[str]:
    """`follow_baseline`, never failing the change it follows: what could not be written is
    one warning on stderr (the next `check` still compares with the baseline as it was)."""
    import sys

    try:
        return follow_baseline(interp, changes, approved=approved, touched=touched)
    except (OSError, DtkguardError) as exc:
        sys.stderr.write(f"dtkguard: warning: the baseline did not follow this change: {exc}\n")
        return []


def follow_baseline(
    interp: Interpreter,
    changes: Any = (),
    *,
    approved: bool = True,
    touched: Sequence[str] | None = None,
) -> list[str]:
    """After a journalled change (dtkpip, dtkuv, restore, undo) of ``interp``'s environment:
    move the baseline forward by the ``changes`` ([(key, before, after)]) of an ``approved``
    one, and when the vendor builds match the baseline again take in their new size and
    mtime and write the import tripwire's file again (so it is quiet after a restore).
    ``touched``: the names the change's plan installed or removed, when known: a change of
    none of the baseline's vendor builds only moves ``dists`` (what else changed a vendor
    build's files is `check`'s finding, and the tripwire's until a restore).
    Returns what moved, plus ``"refreshed"`` when the snapshot was; [] with no baseline or one
    the manifest does not vouch for."""
    from dtkguard.env.baseline import baseline_path, load, loaded_text, tampered

    path = baseline_path(interp.prefix)
    if touched is not None:
        lines = _follow_lines(interp, path, changes, touched, approved)
        if lines is not None:
            return lines
    try:
        loaded = load(path)
    except DtkguardError:
        return []
    if loaded is None or tampered(str(path), path):
        return []
    text = loaded_text(loaded)
    if text is None:
        text = path.read_text(encoding="utf-8")
    data = dict(loaded)  # shared with every reader of these bytes (`load`): copied to change
    moved = _move(data, interp, changes) if approved and changes else []
    if touched is not None and not {canonical(t) for t in touched} & set(data["vendor"]):
        _write_if_changed(interp, path, dumps(data, (loaded, text)), text)
        return moved
    stale: dict[str, dict[str, int]] = {}
    left = compare(data, fresh=stale)  # hashes only files whose stat changed
    if stale:  # files with their recorded bytes at a new stat: take that stat in
        fresh, _ = refreshed(data)
        matched = not compare(fresh)
    else:
        fresh, matched = data, not left
    if matched:
        data = fresh
    _write_if_changed(interp, path, dumps(data, (loaded, text)), text)
    if matched and _write_tripwire(interp, data):
        moved.append("refreshed")
    return moved


def _follow_lines(
    interp: Interpreter, path: Any, changes: Any, touched: Sequence[str], approved: bool
) -> list[str] | None:
    """`follow_baseline` of a change that touched no vendor build, on a baseline the manifest
    vouches for (`vouched_spans`): only its ``dists`` and ``guard_install`` lines are read and
    written again; the vendor builds' line (their 10,000 files) is kept as it is, never
    decoded. None when a name the change touched may be a vendor build's (its key is in that
    line's text, `_names_in`) or the file is not such a baseline: follow it whole."""
    from dtkguard.env.baseline import line_of, line_value, validate, vouched_spans

    found = vouched_spans(path)
    if found is None:
        return None
    raw, spans = found
    names = {canonical(t) for t in touched} | {key for key, _, _ in changes}
    if _vendor_named(raw, spans["vendor"], names):
        return None
    own = ("dists", "guard_install", "created")
    try:
        lines = {k: line_of(raw, spans, k) or "" for k in own if k in spans}
        data: dict[str, Any] = {k: line_value(lines, k) for k in lines}
    except ValueError:
        return None
    if validate({"dists": data.get("dists"), "vendor": {}}) or not isinstance(
        data.get("guard_install", {}), dict
    ):
        return None
    data["vendor"] = {}  # none of the names is a vendor build's (above)
    moved = _move(data, interp, changes) if approved and changes else []
    view = memoryview(raw)
    parts: dict[str, bytes | memoryview] = {k: view[s:e] for k, (s, e) in spans.items()}
    written: list[str] = [k for k in ("dists", "guard_install") if k in data]
    for key in written:
        parts[key] = f"{json.dumps(key)}: {json.dumps(data[key], sort_keys=True)}".encode()
    same = all(key in spans and parts[key] == raw[slice(*spans[key])] for key in written)
    if not (same and _as_written(raw, spans)):
        # one join (the vendor line is copied once), only when a line changed
        chunks: list[bytes | memoryview] = [b"{\n"]
        for key in sorted(parts):
            chunks += [parts[key], b",\n"]
        chunks[-1] = b"\n}\n"
        _write_guard_file(interp, path, b"".join(chunks))
    return moved


def _as_written(raw: bytes, spans: dict[str, tuple[int, int]]) -> bool:
    """Is ``raw`` exactly what its lines joined as `dumps` joins them give (a comma after
    every line but the last)?"""
    ends = [end for _, end in sorted(spans.values())]
    return ends[-1] == len(raw) - 3 and all(raw[e : e + 2] == b",\n" for e in ends[:-1])


def prepare_follow(interp: Interpreter, touched: Sequence[str]) -> None:
    """Read and check ahead what `follow_baseline` of a change touching ``touched`` starts
    with, while the installer runs (it changes neither file): the baseline the manifest vouches
    for, split into its lines (`vouched_spans`, kept while neither file changes), and whether
    a touched name is a vendor build's (kept for those bytes and names)."""
    from dtkguard.env.baseline import baseline_path, vouched_spans

    found = vouched_spans(baseline_path(interp.prefix))
    if found is not None:
        raw, spans = found
        _vendor_named(raw, spans["vendor"], {canonical(t) for t in touched})


#: the last answer of `_vendor_named`: (bytes, span, names, answer)
_named: tuple[bytes, tuple[int, int], frozenset[str], bool] | None = None


def _vendor_named(raw: bytes, span: tuple[int, int], names: set[str]) -> bool:
    """`_names_in`, with the last answer kept: asked ahead (`prepare_follow`) of the same
    bytes, only the names that were not asked then are looked for."""
    global _named
    if _named is not None and _named[0] is raw and _named[1] == span and names >= _named[2]:
        return _named[3] or _names_in(raw, span, names - _named[2])
    answer = _names_in(raw, span, names)
    _named = (raw, span, frozenset(names), answer)
    return answer


def _names_in(raw: bytes, span: tuple[int, int], names: set[str]) -> bool:
    """Is any of ``names`` written as a table's key (``"name": {``) in ``raw[span]``? One
    pass over the line for all the names (the vendor line is megabytes)."""
    import re

    if not names:
        return False
    keys = (re.escape(json.dumps(n).encode()) for n in sorted(names))
    return re.compile(b"(?:" + b"|".join(keys) + b"): \\{").search(raw, *span) is not None


def _write_if_changed(interp: Interpreter, path: Any, text: str | bytes, was: str | bytes) -> None:
    if text != was:
        _write_guard_file(interp, path, text)


def _write_tripwire(interp: Interpreter, data: dict[str, Any]) -> bool:
    """The tripwire's snapshot from the baseline again: the store's copy and the env's cache
    the tripwire reads at start-up (a guard layer, listed in the manifest). False: unchanged,
    or no tripwire installed."""
    from dtkguard.env.store import env_store

    cache = interp.state_dir / TRIPWIRE_FILE
    kept = env_store(interp.prefix).tripwire
    mode = _tripwire_mode(kept) or _tripwire_mode(cache)
    if mode is None:
        return False
    fresh = tripwire_text(data, mode)
    changed = False
    for path, file_mode in ((kept, 0o600), (cache, None)):
        try:
            same = path.read_text(encoding="utf-8") == fresh
        except OSError:
            same = path is kept and not path.exists()  # a guard before the store: no copy
        if not same:
            _write_guard_file(interp, path, fresh, file_mode)
            changed = True
    return changed
