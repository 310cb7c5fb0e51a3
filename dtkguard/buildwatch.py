"""The pip hook's build journal: what code run by a build must not change, watched around it.

Standard library only, no dtkguard imports: ``guard install`` copies it beside the pip hook as
``_dtkguard_buildwatch.py`` (checked by ``guard status`` as ``decision.py`` is). Just before pip
starts its first child process (every PEP 517 backend, ``setup.py`` and build-dependency
install runs in one) the hook takes a `snapshot` of `watched_paths`: (size, inode, ctime, mode,
mtime) of the protected set, the vendor builds' files and folders and the site folders, the
names in each of those folders, and the guard's store folder (read before any build code ran).
Before pip installs anything, `changed` lists what moved and `put_back` puts it back from the
store (`Sources`: the protected files' copies, the vault's or the policy's wheelhouse's wheels
of the vendor builds, each checked against the recorded sha256). dtkuv's watch of a uv run
(`dtkguard.guard.run_effects`) uses the same functions. Each is a function of the data it is
given (the hook hands it the facts and the lookups it needs), so it runs without pip.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat

# hashlib (OpenSSL), shutil and zipfile are imported where a put-back needs them: a watch that
# finds nothing moved loads none of them (several ms of a dtkuv run)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from typing import Any, TypedDict

    #: what `stat_all` keeps of a path that is there: (size, inode, ctime, mode, mtime)
    Fields = tuple[int, int, int, int, int]

    class Snapshot(TypedDict):
        """The build journal (`snapshot`)."""

        stat: dict[str, Fields | None]
        names: dict[str, set[str]]
        store: str | None

# -- the snapshot --------------------------------------------------------------------------


def watched_paths(
    protected: Iterable[str], vendor_files: Mapping[str, Iterable[str]], sites: Iterable[str]
) -> list[str]:
    """What build-time code must not change: the protected set (``protected``: its paths),
    the vendor builds' files (``vendor_files``: {name: files}) and their folders
    (``__pycache__`` aside), the site folders."""
    paths = set(protected)
    for files in vendor_files.values():
        paths.update(files)
        folders = {path.rpartition("/")[0] for path in files}
        paths.update(f for f in folders if not f.endswith("/__pycache__"))
    paths.update(sites)
    return list(paths)


def stat_all(paths: Iterable[str]) -> dict[str, Fields | None]:
    """{path: (size, inode, ctime, mode, mtime) or None}."""
    lstat = os.lstat
    out: dict[str, Fields | None] = {}
    for path in paths:
        try:
            st = lstat(path)
        except OSError:
            out[path] = None
            continue
        out[path] = (st.st_size, st.st_ino, st.st_ctime_ns, st.st_mode, st.st_mtime_ns)
    return out


def snapshot(paths: Iterable[str], store: str | None) -> Snapshot:
    """The build journal of ``paths``: {"stat": `stat_all`, "names": {folder: its entries},
    "store": ``store``, the folder the bytes to put back come from (or None)}."""
    stats = stat_all(paths)
    names: dict[str, set[str]] = {}
    for path, st in stats.items():
        if st is not None and stat.S_ISDIR(st[3]):
            with contextlib.suppress(OSError):
                names[path] = set(os.listdir(path))
    return {"stat": stats, "names": names, "store": store}


def changed(snap: Snapshot) -> list[str]:
    """The watched paths of ``snap`` whose `stat_all` fields moved since, sorted."""
    now = stat_all(snap["stat"])
    return sorted(p for p, st in snap["stat"].items() if now[p] != st)


def changed_text(
    changed: list[str], restored: int, failed: list[tuple[str, str]], executable: str
) -> str:
    """What the refusal of a run whose builds changed ``changed`` says: ``restored`` paths put
    back, ``failed`` [(path, why not)] (``executable``: the interpreter `restore` is told)."""
    more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
    msg = (
        f"code run while pip prepared or built packages changed {changed[0]}{more} (the guard "
        "or a vendor build); nothing was installed"
    )
    if not failed:
        msg += f"; the guard put back what it changed ({restored} path(s)). Build that package "
        msg += "elsewhere"
    else:
        shown = "; ".join(f"{p} ({why})" for p, why in failed[:3])
        msg += (
            f"; the guard put back {restored} path(s) but not {len(failed)}: {shown}. Restore "
            f"the environment with `dtkguard restore --python {executable}` and build that "
            "package elsewhere"
        )
    return msg


# -- putting it back -----------------------------------------------------------------------


def put_back(
    snap: Snapshot, changed: Iterable[str], sources: Sources
) -> tuple[int, list[tuple[str, str]]]:
    """Put the environment back as the build journal ``snap`` saw it: entries a build added
    to a watched folder go, changed or removed files come back from ``sources`` (`Sources`),
    in place, with their mode and mtime. Returns (paths put back, [(path, why not)])."""
    done = 0
    failed: list[tuple[str, str]] = []
    for folder, names in sorted(snap["names"].items()):
        try:
            now = os.listdir(folder)
        except OSError:
            continue
        for name in sorted(set(now) - names - {"__pycache__"}):
            try:
                remove_path(os.path.join(folder, name))
                done += 1
            except OSError as exc:
                failed.append((os.path.join(folder, name), exc.strerror or str(exc)))
    for path in sorted(changed, key=lambda p: p.count("/")):
        before = snap["stat"][path]
        try:
            if before is None:
                if os.path.lexists(path):
                    remove_path(path)
                    done += 1
            elif stat.S_ISDIR(before[3]):
                if not os.path.isdir(path) or os.path.islink(path):
                    with contextlib.suppress(FileNotFoundError):
                        remove_path(path)
                    os.makedirs(path, stat.S_IMODE(before[3]))
                    done += 1
            else:
                why = sources.write(path, before)
                if why:
                    failed.append((path, why))
                else:
                    done += 1
        except OSError as exc:
            failed.append((path, exc.strerror or str(exc)))
    return done, failed


def remove_path(path: str) -> None:
    """Remove the file, link or folder tree ``path``."""
    if os.path.isdir(path) and not os.path.islink(path):
        import shutil

        shutil.rmtree(path)
    else:
        os.unlink(path)


class Sources:
    """Where the original bytes of a protected or vendor file come from (the store ``store``,
    or None). ``owner_of(path)``: (vendor name, path relative to its site) or None;
    ``is_build(wheel file name, name, version)``: is that wheel file of that vendor build;
    ``find_links``: the policy's find-links (its local folders hold vendor wheels)."""

    def __init__(
        self,
        store: str | None,
        owner_of: Callable[[str], tuple[str, str] | None],
        is_build: Callable[[str, str, str], bool],
        find_links: Iterable[object] | None = (),
    ) -> None:
        self.store = store
        self.owner_of, self.is_build, self.find_links = owner_of, is_build, find_links
        self._protected: dict[str, Any] | None = None
        self._baseline: dict[str, Any] | None = None

    def _json(self, name: str) -> dict[str, Any]:
        if not self.store:
            return {}
        try:
            with open(os.path.join(self.store, name), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write(self, path: str, before: Fields) -> str | None:
        """Put ``path`` back (``before``: its lstat fields); why not, or None."""
        if self._protected is None:
            self._protected = self._json("protected.json").get("files") or {}
        entry = self._protected.get(path)
        if entry and entry.get("kind") == "link" and stat.S_ISLNK(before[3]):
            tmp = f"{path}.dtkguard-put-back"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            os.symlink(entry["target"], tmp)
            os.replace(tmp, path)
            return None
        if not stat.S_ISREG(before[3]):
            return "not a file before: no copy of it"
        if entry and entry.get("kind") == "file":
            data = self._blob(entry.get("sha256"))
            if data is None:
                return "the store's copy of it is missing or damaged"
            return write_back(path, data, before)
        return self._vendor(path, before)

    def _blob(self, sha: object) -> bytes | None:
        if not self.store or not isinstance(sha, str) or not sha.isalnum():
            return None
        try:
            with open(os.path.join(self.store, "blobs", sha), "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        return data if _sha256(data) == sha else None

    def baseline_row(self, path: str) -> tuple[str, str, dict[str, Any], str] | str:
        """(vendor build, path in it, the baseline's row of ``path``, the build's version),
        else why there is none."""
        found = self.owner_of(path)
        if found is None:
            return "neither a protected file nor a vendor build's: no copy of it"
        key, rel = found
        if self._baseline is None:
            self._baseline = self._json("baseline.json").get("vendor") or {}
        build = self._baseline.get(key) or {}
        want = (build.get("files") or {}).get(rel) or {}
        return key, rel, want, str(build.get("version") or "")

    def _vendor(self, path: str, before: Fields) -> str | None:
        row = self.baseline_row(path)
        if isinstance(row, str):
            return row
        key, rel, want, version = row
        if want.get("pyc"):  # byte code: Python writes it again from the source
            os.unlink(path)
            return None
        sha = want.get("sha256")
        if not sha:
            return "the guard's baseline holds no digest of it"
        for wheel in self._wheels(key, version):
            data = wheel_member(wheel, rel)
            if data is not None and _sha256(data) == sha:
                return write_back(path, data, before)
        return f"no wheel of {key} in the vault or the policy's find-links holds it"

    def _wheels(self, key: str, version: str) -> Iterator[str]:
        """Wheel files of the vendor build ``key`` ``version``: the vault's, then the policy's
        local find-links'."""
        folders = [os.path.join(self.store, "vault")] if self.store else []
        for link in self.find_links or ():
            link = str(link)
            if link.startswith("file://"):
                link = link[7:]
            if "://" not in link:
                folders.append(link)
        for folder in folders:
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                continue
            for name in names:
                if self.is_build(name, key, version):
                    yield os.path.join(folder, name)


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def wheel_member(wheel: str, rel: str) -> bytes | None:
    """The bytes a wheel holds for the installed path ``rel`` (site-relative; also under its
    ``.data/purelib`` or ``.data/platlib``), or None."""
    found = wheel_member_info(wheel, rel)
    return None if found is None else found[0]


def wheel_member_info(wheel: str, rel: str) -> tuple[bytes, bool] | None:
    """(the bytes, whether it is executable) of `wheel_member`, or None."""
    import zipfile

    try:
        with zipfile.ZipFile(wheel) as zf:
            names = set(zf.namelist())
            for member in [rel] + [
                n for n in names if n.endswith(("/purelib/" + rel, "/platlib/" + rel))
            ]:
                if member in names:
                    info = zf.getinfo(member)
                    return zf.read(member), bool((info.external_attr >> 16) & 0o111)
    except (OSError, zipfile.BadZipFile, KeyError, ValueError):
        return None
    return None


def write_back(path: str, data: bytes, before: Fields) -> str | None:
    """Write ``data`` into ``path``: in place when it is still the same inode (its links, a
    uv cache's too, get the bytes back), else as a new file; then the recorded mode and mtime."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_ino == before[1]:
        with open(path, "r+b") as fh:
            fh.write(data)
            fh.truncate()
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.dtkguard-put-back"
        with open(tmp, "wb") as fh:
            fh.write(data)
        if st is not None and stat.S_ISDIR(st.st_mode) and not stat.S_ISLNK(st.st_mode):
            remove_path(path)
        os.replace(tmp, path)
    os.chmod(path, stat.S_IMODE(before[3]))
    os.utime(path, ns=(before[4], before[4]))
    return None
