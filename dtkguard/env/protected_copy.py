"""The store's copy of an env's protected files: their digests and their bytes.

``protected.json`` in the env's store folder (`dtkguard.env.store.EnvStore.protected`) holds,
per absolute path, what the file was when the guard was installed: ``{"kind": "file", "sha256",
"size", "mode", "ino", "ctime_ns"[, "pyc": true]}`` or ``{"kind": "link", "target"}`` (the
symlinks of ``bin/python*``). ``blobs/<sha256>`` holds each file's bytes, so `restore` can put
back a protected file whatever happened to it (a patched pip, a deleted finder, a wiped env).

`changed` is the fast pass of `check`: size, inode and ``st_ctime_ns`` (which ``os.utime``
cannot set back); only a file whose stat differs is hashed, and one found equal gets its new
inode and ctime recorded (best effort), so it is not hashed again. A ``.pyc`` compares its code
(all but the 16-byte header) and may be missing (Python writes it again).
"""

from __future__ import annotations

import contextlib
import os
import stat

from dtkguard.util.atomic import atomic_write_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from dtkguard.env.store import EnvStore
    from dtkguard.util.json_types import JSON


def _entry(path: str) -> dict[str, JSON] | None:
    """What the store keeps of ``path`` now; None when it does not exist."""
    from dtkguard.env.baseline import pyc_body_sha256, sha256_file

    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return {"kind": "link", "target": os.readlink(path)}
    if not stat.S_ISREG(st.st_mode):
        return None
    entry = {
        "kind": "file",
        "sha256": sha256_file(path),
        "size": st.st_size,
        "mode": stat.S_IMODE(st.st_mode),
        "ino": st.st_ino,
        "ctime_ns": st.st_ctime_ns,
    }
    if path.endswith(".pyc"):
        entry.update(pyc=True, code=pyc_body_sha256(path))
    return entry


def load(es: EnvStore) -> dict[str, dict[str, JSON]]:
    """``protected.json`` of the env ({} when there is none or it does not read)."""
    try:
        from dtkguard.env import store_path
        from dtkguard.util.safe_read import read_json

        data = read_json(es.text(store_path.PROTECTED_FILE), what="protected list")
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return dict(files) if isinstance(files, dict) else {}


def _save(es: EnvStore, files: dict[str, dict[str, JSON]]) -> None:
    from dtkguard.env import store_path
    from dtkguard.util.text import dumps

    text = dumps({"files": files}, indent=1, sort_keys=True) + "\n"
    atomic_write_text(es.text(store_path.PROTECTED_FILE), text, 0o600)


def record(es: EnvStore, paths: Iterable[str | os.PathLike[str]]) -> dict[str, dict[str, JSON]]:
    """Record the digests of ``paths`` (the env's protected set) and copy their bytes into
    ``blobs/``; paths that do not exist are left out. Returns what was recorded."""
    es.create()
    es.blobs.mkdir(mode=0o700, exist_ok=True)
    files: dict[str, dict[str, JSON]] = {}
    for raw in sorted({os.fspath(p) for p in paths}):
        entry = _entry(raw)
        if entry is None or (entry["kind"] == "file" and not entry["sha256"]):
            continue
        if entry["kind"] == "file":
            blob = es.blobs / entry["sha256"]
            if not blob.is_file():
                import shutil

                tmp = blob.with_name(blob.name + ".tmp")
                shutil.copyfile(raw, tmp)
                os.chmod(tmp, 0o600)
                os.replace(tmp, blob)
        files[raw] = entry
    _save(es, files)
    return files


def _differs(path: str, want: dict[str, JSON]) -> str | None:
    """None when ``path`` is as recorded (updating ``want``'s stat when a hash says so);
    else "missing" or "modified"."""
    try:
        st = os.lstat(path)
    except OSError:
        return None if want.get("pyc") else "missing"
    if want["kind"] == "link":
        ok = stat.S_ISLNK(st.st_mode) and os.readlink(path) == want["target"]
        return None if ok else "modified"
    if not stat.S_ISREG(st.st_mode):
        return "modified"
    same_stat = st.st_size == want["size"] and stat.S_IMODE(st.st_mode) == want["mode"]
    if not want.get("pyc") and not same_stat:
        return "modified"
    if (st.st_ino, st.st_ctime_ns) == (want.get("ino"), want.get("ctime_ns")):
        return None
    from dtkguard.env.baseline import pyc_body_sha256, sha256_file

    same = (
        pyc_body_sha256(path) == want.get("code")
        if want.get("pyc")
        else sha256_file(path) == want["sha256"]
    )
    if not same:
        return "modified"
    want["ino"], want["ctime_ns"] = st.st_ino, st.st_ctime_ns
    return None


def changed(es: EnvStore) -> list[tuple[str, str]]:
    """(path, "missing" | "modified") of every protected file that is not as recorded."""
    files = load(es)
    seen = {p: (w.get("ino"), w.get("ctime_ns")) for p, w in files.items()}
    out = [(p, what) for p, want in sorted(files.items()) if (what := _differs(p, want))]
    if any((w.get("ino"), w.get("ctime_ns")) != seen[p] for p, w in files.items()):
        with contextlib.suppress(OSError):  # the fast pass of the next run
            _save(es, files)
    return out


def repair(es: EnvStore, paths: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """Put back each protected file that is not as recorded (or only ``paths``) from the
    store's copy; returns (path, "restored" | why not)."""
    files = load(es)
    wanted = set(paths) if paths is not None else None
    out = []
    for path, what in changed(es):
        if wanted is not None and path not in wanted:
            continue
        out.append((path, _put_back(es, path, files[path], what)))
    return out


def _put_back(es: EnvStore, path: str, want: dict[str, JSON], what: str) -> str:
    import shutil

    parent = os.path.dirname(path)
    tmp = os.path.join(parent, f".{os.path.basename(path)}.dtkguard-restore")
    try:
        os.makedirs(parent, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if want["kind"] == "link":
            os.symlink(want["target"], tmp)
        else:
            blob = es.blobs / want["sha256"]
            if not blob.is_file():
                return f"the store has no copy of it ({what})"
            shutil.copyfile(blob, tmp)
            os.chmod(tmp, want["mode"])
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return f"cannot write it: {exc.strerror or exc}"
    fresh = _entry(path)
    if fresh is not None and fresh["kind"] == "file":
        want["ino"], want["ctime_ns"] = fresh["ino"], fresh["ctime_ns"]
        files = load(es)
        files[path] = want
        with contextlib.suppress(OSError):
            _save(es, files)
    return "restored"
