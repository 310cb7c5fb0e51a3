"""What a planned change writes and deletes, file by file, judged by the decision core.

uv runs no in-process hook, so dtkuv judges the files of its plan before uv runs, the way the
pip hook judges pip's: every member of each wheel the plan installs (its zip, plus the console
scripts generated from ``entry_points.txt``) at its destination in the environment's scheme,
resolved (``NAME.data/data/lib64/...`` is site-packages in a venv whose ``lib64`` links to
``lib``), and every file a removal or upgrade deletes (RECORD rows, folder rows expanded).
`dtkguard.decision` decides (`judge_files`, `judge_removals`): shadowing a vendor build, the
protected set, start-up code by content. Classes 1-5 of issue 22 on the uv route.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from dtkguard import decision
from dtkguard import protected as guarded
from dtkguard.records import is_info_member

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypedDict

    from dtkguard.env.dist import Dist
    from dtkguard.env.environment import Environment
    from dtkguard.env.interpreter import Interpreter
    from dtkguard.guard.plan import Plan, Planned
    from dtkguard.util.json_types import JSON

    class WheelEffect(TypedDict):
        """`wheel_effect`: what installing one wheel writes."""

        paths: list[str]
        contents: dict[str, str]
        members: set[str]


def real_in(path: str, folders: dict[str, str] | None = None) -> str:
    """``path`` with its folder resolved (once per folder with ``folders``, a cache) and its
    last part kept (an installer replaces a symlink at the last part, it does not follow it)."""
    head, tail = os.path.split(os.path.normpath(path))
    if folders is None:
        return os.path.join(os.path.realpath(head), tail)
    real = folders.get(head)
    if real is None:
        real = folders[head] = os.path.realpath(head)
    return os.path.join(real, tail)


class EnvFiles:
    """The facts of one environment the file judgement needs (computed once)."""

    def __init__(self, interp: Interpreter, env: Environment, policy: dict[str, JSON]) -> None:
        self.interp, self.env, self.policy = interp, env, policy
        #: resolved folders (`real_in`'s cache)
        self.folders: dict[str, str] = {}
        sites = [interp.purelib, interp.platlib or interp.purelib]
        self.sites = sorted({os.path.realpath(s) for s in sites})
        self.scripts = os.path.realpath(interp.scripts or interp.prefix / "bin")
        self.prefix = str(interp.prefix)
        state = str(interp.state_dir)
        guard = [os.path.realpath(state), os.path.join(os.path.realpath(interp.prefix), "pip.conf")]
        self.table = guarded.protected_paths(self.prefix, self.sites, self.scripts, guard)
        self.guard = guard
        self._facts: decision.EnvFacts | None = None

    @property
    def facts(self) -> decision.EnvFacts:
        """The decision's `env_facts` (computed on first use: the vendor builds' RECORDs)."""
        if self._facts is None:
            # the import names a vendor build provides: its RECORD's site-level entries suffice
            vendor = {}
            infos = {
                str(d.path / "RECORD"): d
                for d in self.env
                if d.key in self.policy["vendor"] and d.path.name.endswith(".dist-info")
            }
            entries = _kept_site_entries(infos)
            for record, d in infos.items():
                site = os.path.realpath(d.site)
                vendor[d.key] = [f"{site}/{t}" for t in entries[record]]

            kind_of = guarded.kind_finder(self.sites, self.scripts, self.table)
            self._facts = decision.env_facts(
                self.sites, vendor, self.scripts, kind_of, guarded.may_write, self.guard
            )
        return self._facts

    def record_files(self, dist: Dist) -> list[str]:
        """The resolved files of ``dist``'s RECORD, folder rows expanded (what removing it
        deletes)."""
        site = os.path.realpath(dist.site)
        out: list[str] = []
        for rel in removal_rows(Path(dist.path)):
            path = real_in(os.path.join(site, rel), self.folders)
            out.append(path)
            self._expand(path, out)
        return out

    @staticmethod
    def _expand(path: str, out: list[str]) -> None:
        """The files under ``path`` when it is a folder (a RECORD row ``torch,,``)."""
        if os.path.isdir(path) and not os.path.islink(path):
            for folder, dirs, names in os.walk(path):
                out += [os.path.join(folder, n) for n in dirs + names]

    def scheme(self) -> dict[str, str]:
        """Where uv writes each part of a wheel (the interpreter's scheme, resolved)."""
        purelib = os.path.realpath(self.interp.purelib)
        platlib = os.path.realpath(self.interp.platlib or self.interp.purelib)
        prefix = os.path.realpath(self.interp.prefix)
        return {
            "purelib": purelib,
            "platlib": platlib,
            "scripts": self.scripts,
            "data": prefix,
            "headers": os.path.join(prefix, "include"),
        }


def _kept_site_entries(infos: dict[str, Dist]) -> dict[str, list[str]]:
    """`_site_entries` of each dist of ``infos`` ({its RECORD: it}), kept by its RECORD's stat
    (`dtkguard.util.stat_cache`): a vendor torch's RECORD of 20,000 rows is read once, not
    before every uv run."""
    from dtkguard.util.stat_cache import kept

    def read(record: str) -> list[str]:
        return _site_entries(infos[record].path)

    def check(value: JSON) -> list[str] | None:
        ok = isinstance(value, list) and set(map(type, value)) <= {str}
        return value if ok else None

    sites = {str(d.site) for d in infos.values()}
    from dtkguard import records

    return kept("site-entries", sites, infos, read, check, [__file__, records.__file__])


def _site_entries(info: Path) -> list[str]:
    """The site-level entries of a dist's RECORD (and its ``__pycache__`` files): all the
    decision needs to know which import names it provides (as the hook's ``_vendor_tops``)."""
    tops: dict[str, None] = {}
    for rel in removal_rows(info):
        first, _, rest = rel.partition("/")
        if first == "__pycache__":
            first += "/" + rest.split("/", 1)[0]
        tops[first] = None
    return list(tops)


def removal_rows(info: Path) -> list[str]:
    """The site-relative paths removing the dist of metadata folder ``info`` names: its
    RECORD's rows; an ``.egg-info``'s ``installed-files.txt``, else its ``top_level.txt``
    names (as a package folder and a module), as pip and uv read them."""
    from dtkguard.records import paths_of

    def text(name: str) -> str | None:
        # as the pip hook reads a RECORD (newlines kept): the same text, parsed once
        try:
            with open(info / name, encoding="utf-8", errors="replace", newline="") as fh:
                return fh.read()
        except OSError:
            return None

    record = text("RECORD")
    if record is not None:
        return paths_of(record)
    if not info.name.endswith(".egg-info"):
        return []
    listed = text("installed-files.txt")
    if listed is not None:
        return [os.path.join(info.name, ln.strip()) for ln in listed.splitlines() if ln.strip()]
    tops = [ln.strip() for ln in (text("top_level.txt") or "").splitlines() if ln.strip()]
    return [info.name, *tops, *(f"{t}.py" for t in tops)]


def wheel_effect(wheel: Path, scheme: dict[str, str], sites: list[str]) -> WheelEffect:
    """{"paths": resolved destinations of every member and generated script, "contents":
    {destination: text} of the ``.pth`` files at a site's top, "members": its top-level import
    names} of installing ``wheel`` under ``scheme`` (its zip read once per run for this and
    the binary judgement: `dtkguard.resolve.binaries.wheel_listing`). Invariant: each path is
    ``real_in`` of where the installer writes the member, whether computed for the member or
    kept for its folder (only for plain names, never for a site's top)."""
    import zipfile  # imported by the binaries' judgement anyway: not before uv's dry run

    from dtkguard.resolve.binaries import wheel_listing

    listing = wheel_listing(wheel)
    if listing.error:
        raise zipfile.BadZipFile(listing.error)
    effect: WheelEffect = {"paths": [], "contents": {}, "members": set()}
    names, heads = listing.names, listing.heads
    purelib, scripts = True, []
    for i, data in heads.items():
        if is_info_member(names[i], "WHEEL"):
            purelib = "root-is-purelib: true" in data.decode("utf-8", "replace").lower()
        elif is_info_member(names[i], "entry_points.txt"):
            scripts = decision.console_scripts(data.decode("utf-8", "replace"))
    lib = scheme["purelib"] if purelib else scheme["platlib"]
    folders: dict[str, str] = {}
    #: {member's folder: (its destination folder with the separator, the site it is in, its
    #: first part there)}: the same for every plain member of that folder not at a site's top
    dests: dict[str, tuple[str, str | None, str | None]] = {}
    paths, members = effect["paths"], effect["members"]
    for i, name in enumerate(names):
        if name.endswith("/"):
            continue
        plain = _plain(name)
        head, _, tail = name.rpartition("/")
        known = dests.get(head) if plain else None
        if known is None:
            dest = _destination(name, lib, scheme, folders)
            if dest is None:
                continue
            folder = os.path.dirname(dest)
            site = decision._site_of(dest, sites)
            first = dest[len(site) + 1 :].split("/", 1)[0] if site is not None else None
            if plain and folder != site:
                dests[head] = (os.path.join(folder, ""), site, first)
        else:
            prefix, site, first = known
            dest = prefix + tail
        paths.append(dest)
        if site is not None and first is not None:
            members.add(first[:-3] if first.endswith(".py") else first)
            if dest.endswith(".pth") and os.path.dirname(dest) == site:
                if i not in heads:  # never: every name holding ".pth" is read
                    raise zipfile.BadZipFile(f"{name}: not read")
                effect["contents"][dest] = heads[i].decode("utf-8", "replace")
    for script in scripts:
        paths.append(real_in(os.path.join(scheme["scripts"], script), folders))
    return effect


def _plain(name: str) -> bool:
    """Is the member ``name`` a relative path of plain parts (no ``.``, ``..`` or empty part,
    not in ``*.data/``): its destination is its folder's, then its own last part?"""
    bare = not name.startswith(("/", ".")) and "/." not in name and "//" not in name
    return bare and not name.partition("/")[0].endswith(".data")


def _destination(
    name: str, lib: str, scheme: dict[str, str], folders: dict[str, str]
) -> str | None:
    """The resolved destination of the wheel member ``name`` (None: a ``.data`` part no
    installer writes)."""
    top, _, rest = name.partition("/")
    if top.endswith(".data") and rest:
        key, _, sub = rest.partition("/")
        if not sub or key not in scheme:
            return None
        return real_in(os.path.join(scheme[key], sub), folders)
    return real_in(os.path.join(lib, name), folders)


def judge_plan(
    interp: Interpreter,
    env: Environment,
    policy: dict[str, JSON],
    plan: Plan,
    locate: Callable[[Planned], list[Path] | None],
    today: str | None = None,
    facts: EnvFiles | None = None,
) -> tuple[list[decision.Problem], list[str]]:
    """The unwaived problems of the files ``plan`` writes and deletes, and ``name version`` of
    the planned dists whose wheels ``locate`` could not find (not judged by file here: uv's
    real run is, `dtkguard.guard.run_effects`)."""
    import zipfile

    facts = facts or EnvFiles(interp, env, policy)
    today = today or time.strftime("%Y-%m-%d", time.gmtime())
    scheme = facts.scheme()
    problems: list[decision.Problem] = []
    unseen: list[str] = []
    installs = {p.key: p.version for p in plan.install}
    for planned in plan.install:
        wheels = locate(planned)
        if not wheels:
            unseen.append(f"{planned.name} {planned.version}")
            continue
        for wheel in wheels:
            try:
                effect = wheel_effect(wheel, scheme, facts.sites)
            except (OSError, zipfile.BadZipFile) as exc:
                text = f"{wheel} cannot be read as a wheel: {exc}"
                problems.append(decision.Problem("file-conflict", "critical", planned.key, text))
                continue
            problems += decision.judge_files(
                policy,
                planned.name,
                planned.version,
                effect["paths"],
                facts.facts,
                effect["contents"],
                effect["members"],
            )
    for name in _removed(plan, env):
        dist = env.get(name)
        if dist is None:
            continue
        files = facts.record_files(dist)
        problems += decision.judge_removals(
            policy, dist.key, files, facts.facts, installs.get(dist.key)
        )
    kept = [p for p in problems if decision.waiver(policy, p, today) is None]
    return decision.refusals(kept), unseen


def _removed(plan: Plan, env: Iterable[Dist]) -> list[str]:
    """The installed dists the plan removes or replaces (uv deletes their RECORD's files)."""
    installed = {d.key for d in env}
    names = [decision.canonical(n) for n in plan.remove]
    names += [p.key for p in plan.install if p.key in installed]
    return list(dict.fromkeys(names))
