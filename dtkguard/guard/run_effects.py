"""What a uv run really did to the files the guard protects, judged after it ran.

uv runs no in-process hook: it builds sdists itself (in its dry run too) and takes the wheels
of an index only in the real run, so no file of theirs can be read before. The pip hook's build
journal (`dtkguard.buildwatch`, the functions of the hook's ``_take_snapshot`` and
``_put_back``, and the store's copies they write back from) watches, from before uv's first
run, (size, inode, ctime) of the protected set and of the vendor builds' files and folders, and
the names in each of those folders; the vendor builds' byte code by the names in its folders
and a clock stamp instead (`Watch._snapshot`, `Watch._light_changed`). After a dry run nothing
of them may have changed; after the real run, inside its journal transaction,
every file uv wrote is judged by the decision core as the hook judges pip's wheels: the RECORDs
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
    from typing import Any, TypedDict

    from dtkguard.env.interpreter import Interpreter
    from dtkguard.guard.file_effects import EnvFiles
    from dtkguard.guard.plan import Plan
    from dtkguard.util.json_types import JSON

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
        #: the vendor builds' byte code left out of the stat pass before uv runs: {path: its
        #: ``__pycache__`` folder}, each folder's (device, inode, clock stamp) in `caches`
        self.light: dict[str, str] = {}
        self.caches: dict[str, tuple[int, int, int]] = {}
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
            if cache not in self.snap["names"]:
                with contextlib.suppress(OSError):
                    self.snap["names"][cache] = set(os.listdir(cache))

    def _snapshot(self, guard: object, policy: dict[str, JSON]) -> Snapshot | None:
        """The hook's build journal (its ``_take_snapshot``) of what uv must not change, but
        for the vendor builds' ``__pycache__/*.pyc`` files (half of a vendor torch's 20,000):
        those are not stat'ed now but watched by the names in their folder and a clock stamp
        (`_light_changed`), and put back by removing them (Python writes them again from the
        source). Without a stamp on a folder's file system (no ``O_TMPFILE``), its byte code
        is stat'ed with the rest, as before."""
        g: Any = guard
        if policy is None or not g.copies_loaded():
            return None
        table = g.protected_table()
        paths = buildwatch.watched_paths(table, g.vendor_files(), g.sites)
        by_cache: dict[str, list[str]] = {}
        for path in paths:
            folder, _, name = path.rpartition("/")
            if name.endswith(".pyc") and folder.endswith("/__pycache__") and path not in table:
                by_cache.setdefault(folder, []).append(path)
        stamps: dict[int, int | None] = {}
        names: dict[str, set[str]] = {}
        for folder in sorted(by_cache):  # the stamp first, then what it vouches for
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
            self.light.update(dict.fromkeys(by_cache[folder], folder))
        light = self.light
        snap: Snapshot = buildwatch.snapshot(
            [p for p in paths if p not in light], hook._store_dir()
        )
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
        now = buildwatch.stat_all(paths)
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
        for path, folder in self.light.items():
            was = path[len(folder) + 1 :] in names[folder]
            try:
                st = lstat(path)
            except OSError:
                if was:
                    out.append(path)  # removed
                continue
            if not was:
                continue  # a new entry of its folder: `changed`'s ``added``
            dev, _, stamp = self.caches[folder]
            if folder in swapped or st.st_dev != dev or st.st_ctime_ns >= stamp:
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
        for path in [p for p in moved if p in self.light]:
            # byte code goes (Python writes it again from the source); a removed one stays so
            try:
                if os.path.lexists(path):
                    buildwatch.remove_path(path)
                done += 1
            except OSError as exc:
                failed.append((path, exc.strerror or str(exc)))
        return done + len(added), failed

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
        loose = [p for p in dict.fromkeys(moved + added) if p not in claimed | folders]
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
