"""What a uv run really did to the files the guard protects, judged after it ran.

uv runs no in-process hook: it builds sdists itself (in its dry run too) and takes the wheels
of an index only in the real run, so no file of theirs can be read before. The pip hook's build
journal (`dtkguard.buildwatch`, the functions of the hook's ``_take_snapshot`` and
``_put_back``, and the store's copies they write back from) watches, from before uv's first
run, (size, inode, ctime) of the protected set and of the vendor builds' files and folders, and
the names in each of those folders; the vendor builds' byte code by the names in its folders
and a clock stamp instead (`Watch._snapshot`, `Watch._light_changed`). Which files those are
comes from the vendor RECORDs, kept by each RECORD's stat (`_vendor_folders`). After a dry
run nothing of them may have changed; after the real run, inside its journal transaction, every
file uv wrote is judged by the decision core as the hook judges pip's wheels: the RECORDs
uv wrote for the dists of its plan, the new entries of the watched folders and every watched
file that changed. A refusal rolls the transaction back (the plan's own files, `journal`) and
puts the watched files back from the store (`put_back`): the environment ends byte-identical.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path
from types import ModuleType

from dtkguard import buildwatch, decision, pipoverride, records, sitefacts
from dtkguard import protected as guarded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, TypedDict

    from dtkguard.env.interpreter import Interpreter
    from dtkguard.guard.file_effects import EnvFiles
    from dtkguard.guard.plan import Plan
    from dtkguard.util.json_types import JSON

    #: `buildwatch.stat_all`'s fields of a path: (size, inode, ctime, mode, mtime)
    Fields = tuple[int, int, int, int, int]

    class Snapshot(TypedDict):
        """The hook's ``Guard.snapshot`` (its ``_take_snapshot``): what builds must not touch."""

        #: path -> (size, inode, ctime_ns, mode, mtime_ns), None when it did not exist
        stat: dict[str, tuple[int, int, int, int, int] | None]
        #: folder -> the names in it
        names: dict[str, set[str]]
        #: the env's folder in the guard's store (its copies), None when it cannot be trusted
        store: str | None


#: what uv itself leaves in a folder it plans or installs for (its lock file)
UV_OWN = frozenset((".lock",))


def _load_hook() -> ModuleType:
    """The pip hook's module: the installed package data, else a source checkout's file."""
    import importlib
    import importlib.util
    import sys

    try:
        module = importlib.import_module("dtkguard.plugins.pip._dtkguard_pip_hook")
    except ModuleNotFoundError:
        if "_dtkguard_pip_hook" not in sys.modules:
            path = Path(__file__).resolve().parents[2] / "plugins" / "pip" / "_dtkguard_pip_hook.py"
            spec = importlib.util.spec_from_file_location("_dtkguard_pip_hook", path)
            assert spec is not None and spec.loader is not None
            loaded = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(loaded)
            sys.modules["_dtkguard_pip_hook"] = loaded
        module = sys.modules["_dtkguard_pip_hook"]
    return module


hook = _load_hook()


class Refused(Exception):
    """What uv did is refused: the problems, and what putting it back left undone."""

    def __init__(self, problems: list[decision.Problem]) -> None:
        super().__init__(problems[0].message if problems else "refused")
        self.problems = problems


class Watch:
    """The hook's build journal of one environment, taken before uv's first run."""

    def __init__(self, interp: Interpreter, policy: dict[str, JSON], facts: EnvFiles) -> None:
        self.interp, self.policy, self.facts = interp, policy, facts
        # loaded from dtkguard itself, the hook has no copies beside it: its journal functions
        # read the modules the copies are made from
        copies = {"decision": decision, "protected": guarded, "records": records}
        copies.update(sitefacts=sitefacts, buildwatch=buildwatch, pipoverride=pipoverride)
        guard = hook.Guard.given(str(interp.policy_file), policy, copies, facts.sites, facts.table)
        #: the vendor builds' files left out of the stat pass before uv runs: {folder: the
        #: names of its files}, each folder's (device, inode, clock stamp) in `caches`; the
        #: paths stat'ed, by folder, in `groups`
        self.light: dict[str, list[str]] = {}
        self.caches: dict[str, tuple[int, int, int]] = {}
        self.groups: dict[str, list[tuple[str, str]]] = {}
        #: {listed folder: (its device, its lstat fields when listed, the clock stamp of its
        #: file system)}: a folder whose fields are still those is not listed again (`same_entries`)
        self.dirs: dict[str, tuple[int, tuple[int, int, int, int, int], int]] = {}
        nothing: Snapshot = {"stat": {}, "names": {}, "store": None}
        self.snap: Snapshot = self._snapshot(guard, policy) or nothing
        #: what runs when uv next starts the interpreter: the protected set and the site
        #: folders (their entries: a planted ``.pth``); compared after every dry run
        startup = {*facts.table, *facts.sites}
        self.quick = [p for p in self.snap["stat"] if p in startup]
        # a vendor build's byte code folders too (``torch/__pycache__/version.*.opt-1.pyc``)
        for folder in list(self.snap["names"]):
            cache = os.path.join(folder, "__pycache__")
            if cache not in self.snap["names"] and not folder.endswith("/__pycache__"):
                with contextlib.suppress(OSError):
                    self.snap["names"][cache] = set(os.listdir(cache))

    def _snapshot(self, guard: object, policy: dict[str, JSON]) -> Snapshot | None:
        """The hook's build journal (its ``_take_snapshot``) of what uv must not change, but
        for the vendor builds' files (a vendor torch's 20,000 ``.py`` and ``.pyc``): those are
        not stat'ed now but watched by the names in their folder, that folder's identity and
        a clock stamp of its file system (`_light_changed`), and put back from the store's
        copies as the baseline recorded them (`_put_back_light`; byte code by removing it:
        Python writes it again from the source). The protected set, the site folders and the
        vendor builds' folders are stat'ed. Without a stamp on a folder's file system (no
        ``O_TMPFILE``), its files are stat'ed with the rest, as before."""
        g: Any = guard
        if policy is None or not g.copies_loaded():
            return None
        table = g.protected_table()
        by_folder = _vendor_by_folder(_vendor_folders(g), table)
        stamps: dict[int, int | None] = {}
        names = self._light_folders(by_folder, stamps)
        # the rest of `buildwatch.watched_paths`: the protected set, the site folders, the
        # vendor files' folders (``__pycache__`` aside) and the files of those without a stamp
        rest = dict.fromkeys(table)
        rest.update(dict.fromkeys(g.sites))
        rest.update(dict.fromkeys(f for f in by_folder if not f.endswith("/__pycache__")))
        for folder, files in by_folder.items():
            if folder not in self.caches:
                rest.update(dict.fromkeys(f"{folder}/{name}" for name in files))
        #: the paths stat'ed before uv runs, by folder (`_stat_groups`)
        self.groups = _groups(list(rest))
        stats = _stat_groups(self.groups)
        listed: dict[str, set[str]] = {}
        for path, fields in stats.items():  # as `buildwatch.snapshot`: stat, then list
            if fields is not None and stat.S_ISDIR(fields[3]) and path not in names:
                with contextlib.suppress(OSError):
                    listed[path] = set(os.listdir(path))
        snap: Snapshot = {"stat": stats, "names": listed, "store": hook._store_dir()}
        for folder in snap["names"]:  # listed after their fields were taken
            try:
                st = os.lstat(folder)
            except OSError:
                continue
            if st.st_dev not in stamps:
                stamps[st.st_dev] = clock_stamp(folder, st.st_dev)
            stamp, was = stamps[st.st_dev], snap["stat"].get(folder)
            if stamp is not None and was is not None and was[1] == st.st_ino:
                self.dirs[folder] = (st.st_dev, was, stamp)
        snap["names"].update(names)
        return snap

    def _light_folders(
        self, by_folder: dict[str, list[str]], stamps: dict[int, int | None]
    ) -> dict[str, set[str]]:
        """The folders of the vendor files (``by_folder``: `_vendor_by_folder`) whose file
        system gives a clock stamp (``stamps``: by device, filled in): each one's stamp,
        identity and names (`caches`, `dirs`), its files in `light`;
        returns {folder: its names}."""
        names: dict[str, set[str]] = {}
        for folder in sorted(by_folder):  # the stamp first, then what it vouches for
            try:
                st = os.lstat(folder)
            except OSError:
                continue
            if not stat.S_ISDIR(st.st_mode):
                continue
            if st.st_dev not in stamps:
                stamps[st.st_dev] = clock_stamp(folder, st.st_dev)
            stamp = stamps[st.st_dev]
            if stamp is None:
                continue
            try:
                names[folder] = set(os.listdir(folder))
            except OSError:
                continue
            self.caches[folder] = (st.st_dev, st.st_ino, stamp)
            self.dirs[folder] = (st.st_dev, _fields(st), stamp)
            self.light[folder] = by_folder[folder]
        return names

    def same_entries(self, folder: str) -> bool:
        """``folder`` holds the names it held when listed, known without listing it: creating,
        removing, linking or renaming an entry sets its mtime and ctime, and its fields are
        still the listed ones, from before its file system's clock stamp (a change in the
        clock tick of the listing would keep them: then it is listed again)."""
        known = self.dirs.get(folder)
        if known is None:
            return False
        dev, was, stamp = known
        try:
            st = os.lstat(folder)
        except OSError:
            return False
        return st.st_dev == dev and _fields(st) == was and was[2] < stamp

    def changed(self, quick: bool = False) -> tuple[list[str], list[str]]:
        """(watched paths whose (size, inode, ctime, mode, mtime) moved, new entries of the
        watched folders); ``quick``: of `quick` only. A folder whose entries are the same
        (uv's ``.lock`` aside) did not change: only its times moved."""
        was = self.snap["stat"]
        paths = self.quick if quick else was
        now = buildwatch.stat_all(paths) if quick else _stat_groups(self.groups)
        moved, added = [], []
        folders = self.snap["names"]
        if quick:
            folders = {f: folders[f] for f in self.quick if f in folders}
        for folder, names in folders.items():
            if self.same_entries(folder):
                continue
            try:
                there = set(os.listdir(folder))
            except OSError:
                there = set()
            added += [os.path.join(folder, n) for n in sorted(there - names - UV_OWN)]
            if names - there:
                moved.append(folder)
        for path in [p for p in paths if now[p] != was[p]]:
            before, after = was[path], now[path]
            if path in moved:
                continue
            same_folder = before and after and stat.S_ISDIR(before[3]) and before[3] == after[3]
            if same_folder and path in self.snap["names"]:
                continue  # its entries are judged by name
            moved.append(path)
        if not quick:
            moved += [p for p in self._light_changed() if p not in moved]
        return moved, added

    def _light_changed(self) -> list[str]:
        """The byte code files of `light` (and their folders) that changed since the stamp:
        a file that was there and is gone, or whose inode's ctime is not before its folder's
        clock stamp (writing, truncating, chmod, utime, link and rename all set the ctime to
        the clock's now, and nothing sets it back); a folder that is no longer the same folder
        (renamed or swapped in: its files keep their ctime). New names are `changed`'s
        ``added``. Fail closed: when a stamp taken now is before the first (the clock was set
        back), or cannot be taken, every one of them counts as changed."""
        if not self.light:
            return []
        now_stamps: dict[int, int | None] = {}
        swapped: set[str] = set()
        for folder, (dev, ino, stamp) in self.caches.items():
            try:
                st = os.lstat(folder)
            except OSError:
                st = None
            if st is None or not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) != (dev, ino):
                swapped.add(folder)
                continue
            if dev not in now_stamps:
                now_stamps[dev] = clock_stamp(folder, dev)
            again = now_stamps[dev]
            if again is None or again < stamp:
                swapped.add(folder)
        names = self.snap["names"]
        out: list[str] = sorted(swapped)
        lstat = os.lstat
        for folder, files in self.light.items():
            listed, gone = names[folder], folder in swapped
            dev, _, stamp = self.caches[folder]
            with _folder_fd(folder, len(files)) as fd:
                for name in files:
                    try:
                        st = lstat(f"{folder}/{name}") if fd is None else lstat(name, dir_fd=fd)
                    except OSError:
                        if name in listed:
                            out.append(f"{folder}/{name}")  # removed
                        continue
                    if name not in listed:
                        continue  # a new entry of its folder: `changed`'s ``added``
                    if gone or st.st_dev != dev or st.st_ctime_ns >= stamp:
                        path = f"{folder}/{name}"
                        if stat.S_ISDIR(st.st_mode) and path in names and not gone:
                            continue  # a RECORD row of a folder: watched as a folder is
                        out.append(path)
        return out

    def put_back(self) -> tuple[int, list[tuple[str, str]]]:
        """Everything watched as it was before uv ran (the hook's ``_put_back``: new entries
        go, files come back from the store's copies): (paths put back, [(path, why not)])."""
        moved, added = self.changed()
        if not moved and not added:
            return 0, []
        for path in added:  # the hook keeps new ``__pycache__`` folders: not these
            if os.path.basename(path) == "__pycache__":
                with contextlib.suppress(OSError):
                    buildwatch.remove_path(path)
        done, failed = hook._put_back(self.snap, [p for p in moved if p in self.snap["stat"]])
        for folder in [p for p in moved if p in self.caches]:
            # a byte code folder that is no folder now (a link to elsewhere): a new empty one
            if os.path.isdir(folder) and not os.path.islink(folder):
                continue
            try:
                with contextlib.suppress(FileNotFoundError):
                    buildwatch.remove_path(folder)
                os.mkdir(folder)
                done += 1
            except OSError as exc:
                failed.append((folder, exc.strerror or str(exc)))
        sources = None
        for path in [p for p in moved if self._is_light(p)]:
            try:
                if _is_byte_code(path):
                    # byte code goes (Python writes it again from the source); a removed one
                    # stays so
                    if os.path.lexists(path):
                        buildwatch.remove_path(path)
                    done += 1
                    continue
                sources = sources or hook._put_back_sources(self.snap["store"])
                why = _put_back_light(sources, path)
            except OSError as exc:
                why = exc.strerror or str(exc)
            if why:
                failed.append((path, why))
            else:
                done += 1
        return done + len(added), failed

    def _is_light(self, path: str) -> bool:
        """``path`` is a file of `light` (watched by its folder's clock stamp)."""
        folder, _, name = path.rpartition("/")
        return name in self.light.get(folder, ())

    def after_dry_run(self, quick: bool = False) -> None:
        """`Refused` when code uv ran to plan (an sdist's build) changed what is watched
        (``quick``: what runs when uv next starts the interpreter, `quick`; the caller then
        compares the rest before it returns, or `judge_run` does)."""
        moved, added = self.changed(quick)
        if moved or added:
            raise Refused([_built_problem((moved + added)[0], len(moved + added))])

    def judge_run(self, plan: Plan, today: str | None = None) -> list[decision.Problem]:
        """The unwaived problems of what the real uv run wrote (`Watch` docstring); nothing is
        put back here (the journal rolls back first, then `put_back`)."""
        moved, added = self.changed()
        by_dist = _written_by(self.facts.sites, plan)
        claimed = {p for _, paths in by_dist.values() for p in paths}
        folders = {os.path.dirname(p) for p in claimed}
        for folder in list(folders):
            while folder not in ("/", "") and folder not in self.facts.sites:
                folder = os.path.dirname(folder)
                folders.add(folder)
        written = claimed | folders  # once, not for each path
        loose = [p for p in dict.fromkeys(moved + added) if p not in written]
        problems: list[decision.Problem] = []
        for key, (version, paths) in sorted(by_dist.items()):
            problems += self._judge(key, version, paths)
        if loose:  # in no RECORD uv wrote: code it ran (a build) wrote it, not an install
            problems.append(_built_problem(loose[0], len(loose)))
        today = today or time.strftime("%Y-%m-%d", time.gmtime())
        kept = [p for p in problems if decision.waiver(self.policy, p, today) is None]
        return decision.refusals(kept)

    def _judge(self, key: str, version: str, paths: list[str]) -> list[decision.Problem]:
        contents: dict[str, str] = {}
        members: set[str] = set()
        for path in paths:
            site = decision._site_of(path, self.facts.sites)
            if site is None:
                continue
            first = path[len(site) + 1 :].split("/", 1)[0]
            members.add(first[:-3] if first.endswith(".py") else first)
            if path.endswith(".pth") and os.path.dirname(path) == site:
                with contextlib.suppress(OSError), open(path, "rb") as fh:
                    contents[path] = fh.read(65536).decode("utf-8", "replace")
        from dtkguard.env.binaries import file_problems

        judged = decision.judge_files(
            self.policy, key, version, paths, self.facts.facts, contents, members
        )
        return judged + file_problems(self.policy, key, paths)


def _vendor_folders(guard: Any) -> list[dict[str, list[str]]]:
    """`_dist_folders` of each vendor build the hook's ``vendor_rows`` names (its selection,
    its RECORD reader), kept by its RECORD's stat (`dtkguard.util.stat_cache`): a vendor
    torch's RECORD of 20,000 rows is read once, not before every uv run."""
    from dtkguard.util.stat_cache import kept

    # the hook's selection of the vendor builds, each with its dist-info folder for its rows
    picked = guard.sitefacts.vendor_rows(guard.installed(), guard.policy["vendor"], _itself)
    infos = {f"{info}/RECORD": site for site, (info,) in picked.values()}

    def read(record: str) -> dict[str, list[str]]:
        return _dist_folders(infos[record], guard.rows(os.path.dirname(record)))

    code = [__file__, hook.__file__ or ""]  # `_dist_folders` and the hook's RECORD reader
    found = kept("vendor-folders", set(infos.values()), infos, read, _checked_folders, code)
    return list(found.values())


def _itself(info: str) -> list[str]:
    return [info]


def _checked_folders(value: JSON) -> dict[str, list[str]] | None:
    """A kept `_dist_folders` value, or None when it is not one."""
    if not isinstance(value, dict):
        return None
    for names in value.values():
        if not isinstance(names, list) or not set(map(type, names)) <= {str}:
            return None
    return value


def _dist_folders(site: str, rels: list[str]) -> dict[str, list[str]]:
    """The files of one vendor build (``rels``: its RECORD paths, relative to ``site``) by
    folder: {folder: the names of its files}, each once."""
    out: dict[str, list[str]] = {}
    subs: dict[str, list[str]] = {}
    for rel in rels:
        if ".." in rel or "./" in rel:
            folder, _, name = os.path.normpath(f"{site}/{rel}").rpartition("/")
            if folder and name:
                out.setdefault(folder, []).append(name)
            continue
        sub, _, name = rel.rpartition("/")
        names = subs.get(sub)
        if names is None:
            names = subs[sub] = []
        names.append(name)
    for sub, names in subs.items():
        folder = f"{site}/{sub}" if sub else site
        out.setdefault(folder, []).extend(names)
    return _once(out)


def _once(folders: dict[str, list[str]]) -> dict[str, list[str]]:
    """``folders`` with each folder's names once (in place)."""
    for folder, names in folders.items():
        if len(set(names)) != len(names):
            folders[folder] = list(dict.fromkeys(names))
    return folders


def _vendor_by_folder(
    parts: list[dict[str, list[str]]], table: dict[str, str]
) -> dict[str, list[str]]:
    """The vendor builds' files (``parts``: `_dist_folders` of each; the files
    `sitefacts.vendor_files` names) but the protected set's (``table``), by folder: {folder:
    the names of its files}, each once."""
    out: dict[str, list[str]] = {}
    for part in parts:
        for folder, names in part.items():
            out.setdefault(folder, []).extend(names)
    if len(parts) > 1:
        _once(out)
    for path in table:  # a protected file is stat'ed (its copy is the store's)
        folder, _, name = path.rpartition("/")
        held = out.get(folder)
        if held is not None and name in held:
            held.remove(name)
    return {folder: names for folder, names in out.items() if names}


def _groups(paths: list[str]) -> dict[str, list[tuple[str, str]]]:
    """``paths`` by folder: {folder: [(name, path)]}, in the order of ``paths``."""
    out: dict[str, list[tuple[str, str]]] = {}
    for path in paths:
        folder, sep, name = path.rpartition("/")
        if sep and name:
            out.setdefault(folder or "/", []).append((name, path))
        else:
            out.setdefault("", []).append((path, path))  # "/", "" or relative: by its path
    return out


#: a folder opened only to stat its entries relative to it (``O_PATH``: no read permission
#: needed, as for a path's lookup); none where the platform has no ``dir_fd`` for ``lstat``
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS |= getattr(os, "O_PATH", 0)
_DIR_FD = os.stat in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")


@contextlib.contextmanager
def _folder_fd(folder: str, count: int) -> Iterator[int | None]:
    """A descriptor of ``folder`` to `os.lstat` its ``count`` entries by name (one lookup of
    the folder instead of one per entry: the same files, as the folder is reached by the
    same path), or None (stat them by path) when it cannot be opened or is not worth it."""
    fd = None
    if _DIR_FD and count > 2 and folder:
        with contextlib.suppress(OSError):
            fd = os.open(folder, _DIR_FLAGS)
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def _stat_groups(groups: dict[str, list[tuple[str, str]]]) -> dict[str, Fields | None]:
    """`buildwatch.stat_all` of the paths of ``groups`` (`_groups`), each folder's entries
    stat'ed relative to it (`_folder_fd`)."""
    lstat = os.lstat
    out: dict[str, Fields | None] = {}
    for folder, items in groups.items():
        with _folder_fd(folder, len(items)) as fd:
            for name, path in items:
                try:
                    st = lstat(path) if fd is None else lstat(name, dir_fd=fd)
                except OSError:
                    out[path] = None
                    continue
                out[path] = _fields(st)
    return out


def _is_byte_code(path: str) -> bool:
    folder, _, name = path.rpartition("/")
    return name.endswith(".pyc") and folder.endswith("/__pycache__")


def _put_back_light(sources: buildwatch.Sources, path: str) -> str | None:
    """Put back a vendor file of `Watch.light` that uv's run changed or removed: not stat'ed
    before, so as the baseline recorded it (its size, inode, mtime; the install's mode: the
    wheel member's executable bit under this umask, as pip and uv set it), with the bytes of
    a vendor wheel whose member has the baseline's sha256. Why not, or None."""
    row = sources.baseline_row(path)
    if isinstance(row, str):
        return row
    key, rel, want, version = row
    sha, mtime = want.get("sha256"), want.get("mtime_ns")
    if not isinstance(sha, str) or want.get("pyc") or not isinstance(mtime, int):
        return "the guard's baseline holds no digest of it"
    raw = want.get("ino")
    ino = raw if isinstance(raw, int) else -1
    import hashlib  # the refusal's path only

    for wheel in sources._wheels(key, version):
        member = buildwatch.wheel_member_info(wheel, rel)
        if member is not None and hashlib.sha256(member[0]).hexdigest() == sha:
            data, executable = member
            before = (len(data), ino, 0, stat.S_IFREG | _installed_mode(executable), mtime)
            return buildwatch.write_back(path, data, before)
    return f"no wheel of {key} in the vault or the policy's find-links holds it"


def _installed_mode(executable: bool) -> int:
    """The mode pip and uv give a file they install under this process's umask: ``0o666``,
    and the executable bits for a member that has one."""
    umask = os.umask(0o022)
    os.umask(umask)
    return (0o777 if executable else 0o666) & ~umask | (0o111 if executable else 0)


def _fields(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """`buildwatch.stat_all`'s fields of ``st``: (size, inode, ctime, mode, mtime)."""
    return (st.st_size, st.st_ino, st.st_ctime_ns, st.st_mode, st.st_mtime_ns)


def clock_stamp(folder: str, dev: int) -> int | None:
    """The ctime (ns) the file system of ``folder`` gives a file made now: an unnamed file
    (``O_TMPFILE``: no entry in the folder, nothing left behind), on device ``dev``; None when
    there is none (another file system, no ``O_TMPFILE``, no write permission)."""
    flags = getattr(os, "O_TMPFILE", 0)
    if not flags:
        return None
    try:
        fd = os.open(folder, flags | os.O_WRONLY, 0o600)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    return st.st_ctime_ns if st.st_dev == dev else None


def built_problem(paths: list[str]) -> decision.Problem:
    """The refusal of code uv ran that changed the watched ``paths``."""
    return _built_problem(paths[0], len(paths))


def _built_problem(first: str, count: int) -> decision.Problem:
    """The refusal of code uv ran that changed watched files."""
    more = f" and {count - 1} more" if count > 1 else ""
    msg = f"code uv ran (an sdist's build) changed {first}{more} (the guard or a vendor build)"
    return decision.Problem("vendor-files-changed", "critical", "build", msg)


def put_back_said(watch: Watch) -> str:
    """`Watch.put_back`, said in one sentence."""
    done, failed = watch.put_back()
    if not failed:
        return f"the guard put back what uv changed ({done} path(s))"
    shown = "; ".join(f"{p} ({why})" for p, why in failed[:3])
    return (
        f"the guard put back {done} path(s) but not {len(failed)}: {shown}; restore the "
        f"environment with `dtkguard restore --python {watch.interp.python}`"
    )


def _written_by(sites: list[str], plan: Plan) -> dict[str, tuple[str, list[str]]]:
    """{canonical name: (version, resolved files of the RECORD uv wrote)} of the dists the plan
    installs, as they are now in ``sites``."""
    from dtkguard.guard.file_effects import real_in, removal_rows
    from dtkguard.journal.owned import dist_key
    from dtkguard.records import split_dist_info

    want = {p.key: p.version for p in plan.install}
    out: dict[str, tuple[str, list[str]]] = {}
    folders: dict[str, str] = {}
    for site in sites:
        try:
            entries = sorted(os.listdir(site))
        except OSError:
            continue
        for entry in entries:
            key, named = dist_key(entry), split_dist_info(entry)
            if key not in want or named is None:
                continue
            rows = removal_rows(Path(site, entry))
            paths = [real_in(os.path.join(site, r), folders) for r in rows]
            version = named[1] or want[key]
            old = out.get(key, (version, []))
            out[key] = (version, old[1] + paths)
    return out
