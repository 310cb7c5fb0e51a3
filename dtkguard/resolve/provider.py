"""The resolvelib provider: candidates under the policy, for the target, with pip's preferences.

Policy inside resolution: a vendor package's only candidate is the vendor build, taken only from
vendor sources; a denied package has no candidate (unless the rule allows DAS builds and the
build carries a DAS label); a name that any vendor source carries is taken from vendor sources
only (no dependency confusion). Requires-Python that excludes the target becomes a requirement on
the pseudo-package ``<python>``, so conflicts can name it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version
from resolvelib import AbstractProvider

from dtkguard.decision import canonical
from dtkguard.errors import InputError
from dtkguard.resolve.binary import FormatControl
from dtkguard.resolve.candidates import PYTHON, Candidate, Req
from dtkguard.resolve.excluded import BINARY, REQUIRES_PYTHON, TAGS, YANKED, Excluded
from dtkguard.resolve.metacache import MetadataCache, link_key
from dtkguard.resolve.metadata import BadMetadata, Metadata
from dtkguard.resolve.sdist import Builder
from dtkguard.resolve.sources import FileLink, Source
from dtkguard.resolve.target import TargetEnv

#: an sdist ranks after every wheel of its version (pip and uv prefer the wheel)
SDIST_RANK = 1 << 30

#: a name that is among a conflict's causes this often while still unpinned is decided first
PROMOTE_AFTER = 5


#: `PolicyProvider.get_preference`'s key: promoted, pinned, upper-bounded, the user's order,
#: constrained, name (smallest first)
Preference = tuple[bool, bool, bool, int, bool, str]


class PolicyProvider(AbstractProvider[Req, Candidate, str]):
    """Candidates from ``sources`` (vendor sources first) under ``policy`` for ``target``."""

    def __init__(
        self,
        sources: Sequence[Source],
        policy: Any,
        target: TargetEnv,
        *,
        pre: bool = False,
        cache: MetadataCache | None = None,
        like: PolicyProvider | None = None,
        formats: FormatControl | None = None,
        builder: Builder | None = None,
    ) -> None:
        self.sources = list(sources)
        #: --only-binary / --no-binary
        self.formats = formats or FormatControl()
        #: builds the metadata of sdists without static PKG-INFO (None: sdists only if static)
        self.builder = builder
        self.pre = pre
        #: the persistent METADATA cache (None: read every source afresh)
        self.cache = cache
        self.unusable: dict[FileLink, str] = {}
        #: per project, the files left out for the target and why (for explanations)
        self.excluded: dict[str, list[Excluded]] = {}
        self._conflicts: dict[str, int] = {}
        self._promoted: set[str] = set()
        self._allowed: dict[tuple[str, frozenset[Any]], list[tuple[Version, FileLink]]] = {}
        #: the requirements on each identifier when it was last looked up: how it was reached
        self.via: dict[str, Sequence[Req]] = {}
        self.vendor_sources = [s for s in self.sources if s.vendor]
        self.policy = policy
        self.target = target
        self.python_version = Version(target.full_version)
        self.python_candidate = Candidate(PYTHON, self.python_version, None, frozenset())
        self.user_order: dict[str, int] = {}
        #: per identifier: (a vendor build?, the user's order) for the preference
        self._static_pref: dict[str, tuple[bool, int]] = {}
        self._cands: dict[str, list[tuple[Version, FileLink]]] = {}
        self._interned: dict[tuple[str, Version], Candidate] = {}
        self._meta: dict[FileLink, Metadata] = {}
        self._gates: dict[FileLink, threading.Lock] = {}
        self._failed: dict[FileLink, BadMetadata] = {}
        self._deps: dict[Candidate, list[Req]] = {}
        self._sat: dict[tuple[Req, Candidate], bool] = {}
        #: `find_matches`' answers of this resolution, by (identifier, requirements,
        #: incompatible candidates)
        self._matches: dict[tuple[str, tuple[Req, ...], tuple[Candidate, ...]], Any] = {}
        self._lock = threading.Lock()
        self._warmed: set[str] = set()
        self._pool = ThreadPoolExecutor(8, thread_name_prefix="dtkguard-warm")
        self.markers = dict(target.markers)
        self._markers_cache: dict[tuple[str, str], bool] = {}
        #: a trial of the explanation ran out of time (the answer depended on the clock)
        self.out_of_time = False
        if like is not None:
            self._share(like)

    def _share(self, like: PolicyProvider) -> None:
        """Use the caches of ``like``, a provider for the same sources, policy, target and
        pre-release setting (the trial resolutions of an explanation): everything they hold
        follows from those inputs alone. The search state (conflict counts, promotions, how
        each name was reached) stays this provider's own."""
        self._cands = like._cands
        self._allowed = like._allowed
        self._interned = like._interned
        self._meta = like._meta
        self._gates = like._gates
        self._failed = like._failed
        self._deps = like._deps
        self._sat = like._sat
        self._markers_cache = like._markers_cache
        self._warmed = like._warmed
        self.unusable = like.unusable
        self.excluded = like.excluded

    def projects_seen(self) -> int:
        """How many projects have been listed so far (for the progress line)."""
        return len(self._cands)

    def conflict_counts(self) -> dict[str, int]:
        """How often each identifier was among a conflict's causes while unpinned."""
        return dict(self._conflicts)

    def missing_extras(self, candidate: Candidate) -> list[str]:
        """The extras of ``candidate`` its metadata does not provide (pip and uv warn)."""
        if not candidate.extras or candidate.link is None:
            return []
        have = self.metadata(candidate.link).provides_extra
        return sorted(e for e in candidate.extras if e not in have)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- candidates -------------------------------------------------------------------------
    def all_links(self, name: str, sources: Iterable[Source] | None = None) -> list[FileLink]:
        """Every wheel of ``name`` in ``sources`` (default: all), policy not applied."""
        out: list[FileLink] = []
        for source in self.sources if sources is None else sources:
            out += source.links(name)
        return out

    def _compute(self, name: str) -> list[tuple[Version, FileLink]]:
        policy = self.policy
        vendor = policy.vendor_build(name) if policy is not None else None
        if vendor is not None:  # provenance: a vendor build only from vendor sources
            want = Version(vendor)
            links = [lk for lk in self.all_links(name, self.vendor_sources) if lk.version == want]
        else:
            vendor_links = self.all_links(name, self.vendor_sources)
            links = vendor_links or self.all_links(name)
        if policy is not None:
            silent = _silent_on(policy, name)
            links = [
                lk
                for lk in links
                if (silent and "+" not in str(lk.version)) or _allowed(policy, name, lk.version)
            ]
        return self._best(name, links)

    def _best(self, name: str, links: list[FileLink]) -> list[tuple[Version, FileLink]]:
        """The best file of each version for the target, newest first; what is left out and
        why goes to :attr:`excluded`. A yanked file is kept only when its version has nothing
        else (it is a candidate only for an exact pin, see :meth:`allowed_versions`)."""
        best: dict[Version, tuple[int, int, int, FileLink]] = {}
        order = {id(s): i for i, s in enumerate(self.sources)}
        dropped: list[Excluded] = []
        for link in links:
            if not self.formats.allows(name, link.is_sdist):
                rule = self.formats.rule(link.is_sdist)
                dropped.append(Excluded(link.version, link.filename, BINARY, rule))
                continue
            rank = SDIST_RANK if link.is_sdist else self.target.wheel_rank(link.tags)
            if rank is None:
                dropped.append(Excluded(link.version, link.filename, TAGS))
                continue
            if link.requires_python and not _python_ok(link.requires_python, self.python_version):
                dropped.append(
                    Excluded(link.version, link.filename, REQUIRES_PYTHON, link.requires_python)
                )
                continue
            key = (int(link.yanked), order.get(id(link.source), 0), rank, link)
            cur = best.get(link.version)
            if cur is None or key[:3] < cur[:3]:
                best[link.version] = key
        for version, key in best.items():
            if key[3].yanked:
                dropped.append(Excluded(version, key[3].filename, YANKED, key[3].yank_reason))
        dropped = [d for d in dropped if d.version not in best or d.why == YANKED]
        with self._lock:
            self.excluded[name] = dropped
        return sorted(((v, k[3]) for v, k in best.items()), key=lambda x: x[0], reverse=True)

    def candidates_for(self, name: str) -> list[tuple[Version, FileLink]]:
        """Versions allowed for ``name`` (newest first) with the wheel chosen for each."""
        hit = self._cands.get(name)
        if hit is None:
            hit = self._compute(name)
            with self._lock:
                self._cands[name] = hit
        return hit

    def candidate(
        self,
        name: str,
        version: Version,
        link: FileLink | None,
        extras: frozenset[str] = frozenset(),
    ) -> Candidate:
        key = (f"{name}[{','.join(sorted(extras))}]" if extras else name, version)
        cand = self._interned.get(key)
        if cand is None:
            cand = self._interned[key] = Candidate(name, version, link, frozenset(extras))
        return cand

    # -- metadata ---------------------------------------------------------------------------
    def metadata(self, link: FileLink) -> Metadata:
        """Parsed metadata of ``link``, read once even when the warming threads ask at the same
        time (an sdist may need a build); a failure is remembered and raised again."""
        hit = self._meta.get(link)
        if hit is not None:
            return hit
        with self._lock:
            gate = self._gates.setdefault(link, threading.Lock())
        with gate:
            hit = self._meta.get(link)
            if hit is None:
                failed = self._failed.get(link)
                if failed is not None:
                    raise failed
                try:
                    hit = Metadata(self.raw_metadata(link), link)
                except BadMetadata as exc:
                    self._failed[link] = exc
                    raise
                self._meta[link] = hit
        return hit

    def raw_metadata(self, link: FileLink) -> bytes:
        """METADATA bytes of ``link``: from the persistent cache, else from its source."""
        key = link_key(link) if self.cache is not None else None
        if key is None:
            return self._read_metadata(link)
        assert self.cache is not None
        raw = self.cache.get(*key)
        if raw is None:
            raw = self._read_metadata(link)
            self.cache.put(key[0], raw)
        return raw

    def _read_metadata(self, link: FileLink) -> bytes:
        """From the source; an sdist's from its PKG-INFO or a build (:mod:`.sdist`)."""
        if not link.is_sdist:
            return link.source.metadata(link)
        builder = self.builder or Builder([], static_only=True)
        with link.source.local_file(link) as path:
            return builder.metadata(path)

    def _warm(self, name: str) -> None:
        """Background: list ``name``, read the newest candidate's metadata and warm its
        dependencies in turn, so the whole likely graph is fetched ahead of the resolver."""
        try:
            cands = self.candidates_for(name)
            if not cands:
                return
            meta = self.metadata(cands[0][1])
            deps = [
                canonical(r.name)
                for r in meta.requires_dist
                if r.marker is None or self.marker_ok(r.marker, "")
            ]
            self.warm(deps)
        except Exception:  # surfaces again when the resolver asks
            pass

    def warm(self, names: Iterable[str]) -> None:
        for name in names:
            with self._lock:
                if name in self._warmed or name == PYTHON:
                    continue
                self._warmed.add(name)
            for source in self.sources:
                source.prefetch(name)
            self._pool.submit(self._warm, name)

    def marker_ok(self, marker: Marker, extra: str) -> bool:
        key = (str(marker), extra)
        hit = self._markers_cache.get(key)
        if hit is None:
            env = dict(self.markers)
            env["extra"] = extra
            hit = self._markers_cache[key] = marker.evaluate(env)
        return hit

    def make_req(self, req: Requirement, parent: Candidate | None) -> Req:
        if req.url:
            raise InputError(
                f"direct URL requirements are not supported: {req}", field="requirement"
            )
        return Req(
            canonical(req.name),
            req.specifier,
            frozenset(canonical(e) for e in req.extras),
            parent,
            f"{req.name}{'[' + ','.join(sorted(req.extras)) + ']' if req.extras else ''}"
            f"{req.specifier}",
        )

    # -- resolvelib interface ---------------------------------------------------------------
    def identify(self, requirement_or_candidate: Req | Candidate) -> str:
        return requirement_or_candidate.key

    def get_preference(
        self,
        identifier: str,
        resolutions: Mapping[str, Candidate],
        candidates: Mapping[str, Iterator[Candidate]],
        information: Mapping[str, Iterator[Any]],
        backtrack_causes: Sequence[Any],
    ) -> Preference:
        """Smallest first: promoted conflict names, pinned (or vendor), upper-bounded, in the
        order the user asked, constrained before free, then by name (stable, debuggable)."""
        return self._preference(identifier, information)

    def _preference(self, identifier: str, information: Mapping[str, Iterator[Any]]) -> Preference:
        if identifier == PYTHON:
            return (False, False, False, 0, False, identifier)
        pinned = upper = unfree = False
        for info in information[identifier]:
            req = info.requirement
            pinned = pinned or req.pinned
            upper = upper or req.upper_bounded
            unfree = unfree or req.unfree
        static = self._static_pref.get(identifier)
        if static is None:
            base = identifier.split("[", 1)[0]
            vendor = self.policy is not None and self.policy.vendor_build(base) is not None
            static = self._static_pref[identifier] = (vendor, self.user_order.get(base, 1 << 30))
        return (
            identifier not in self._promoted,
            not (pinned or static[0]),
            not upper,
            static[1],
            not unfree,
            identifier,
        )

    def narrow_requirement_selection(
        self,
        identifiers: Iterable[str],
        resolutions: Mapping[str, Candidate],
        candidates: Mapping[str, Iterator[Candidate]],
        information: Mapping[str, Iterator[Any]],
        backtrack_causes: Sequence[Any],
    ) -> Iterable[str]:
        """``<python>`` alone; else the names of the last conflict; else names that keep
        turning up unpinned in conflicts; else everything.

        The third step is what ends thrashing: resolvelib backjumps only to a state whose pin
        touches the conflict, so a project whose requirement sinks the conflict but is never
        pinned first (it looks "free" to :meth:`get_preference`) lets the resolver re-pin its
        parents version after version. Counting how often a name is among the causes while
        unpinned and, past :data:`PROMOTE_AFTER`, deciding it before anything else lets its
        constraints prune those parents at once.
        """
        ids = list(identifiers)
        if PYTHON in ids:
            return [PYTHON]
        names: set[str] = set()
        for cause in backtrack_causes:
            keys = [cause.requirement.key]
            if cause.parent is not None:
                keys.append(cause.parent.key)
            for key in keys:
                names.add(key)
                if key not in resolutions:
                    count = self._conflicts[key] = self._conflicts.get(key, 0) + 1
                    if count >= PROMOTE_AFTER:
                        self._promoted.add(key)
        hit = [i for i in ids if i in names]
        if not hit:
            hit = [i for i in ids if i in self._promoted] or ids
        if len(hit) > 1:
            # the one resolvelib's ``min(..., key=get_preference)`` would take, found without
            # its per-call wrapping (it skips get_preference when one name is returned)
            return [min(hit, key=lambda i: self._preference(i, information))]
        return hit

    def allowed_versions(self, name: str, reqs: Sequence[Req]) -> list[tuple[Version, FileLink]]:
        """The candidates of ``name`` (newest first) every requirement in ``reqs`` admits,
        pre-releases as pip and PEP 440 take them: only when a specifier names one, ``--pre``
        is given, or no final release satisfies all the requirements together. Cached by the
        set of specifiers (the resolver asks again with the same ones all the time)."""
        key = (name, frozenset((r.text, r.exact) for r in reqs))
        hit = self._allowed.get(key)
        if hit is not None:
            return hit
        cands = self.candidates_for(name)
        versions = [v for v, _ in cands]
        exact = {r.exact for r in reqs if r.exact is not None}
        if exact:
            versions = [v for v in versions if v in exact] if len(exact) == 1 else []
        combined = SpecifierSet()
        for spec in {r.specifier for r in reqs}:
            combined &= spec
        pre = True if (self.pre or exact) else None
        allowed = set(combined.filter(versions, prereleases=pre))
        yanked = {v for v, link in cands if link.yanked and v in allowed}
        if yanked:  # PEP 592: a yanked release only for a requirement that pins it
            allowed -= {v for v in yanked if not any(_pins(r, v) for r in reqs)}
        hit = self._allowed[key] = [(v, link) for v, link in cands if v in allowed]
        return hit

    def find_matches(
        self,
        identifier: str,
        requirements: Mapping[str, Iterator[Req]],
        incompatibilities: Mapping[str, Iterator[Candidate]],
    ) -> Any:
        """The candidates of ``identifier`` for these requirements, less the incompatible
        versions: one answer per (identifier, requirements, incompatible versions), kept for
        the resolution (resolvelib asks again with the same ones every time it pins the same
        parent), read lazily and once (:class:`_Matches`)."""
        return self.matches_for(
            identifier, tuple(requirements[identifier]), tuple(incompatibilities[identifier])
        )

    def matches_for(
        self, identifier: str, reqs: tuple[Req, ...], worse: tuple[Candidate, ...]
    ) -> Any:
        """`find_matches` for the requirements ``reqs`` on ``identifier`` and its incompatible
        candidates ``worse`` (interned), as tuples: what the resolver of
        :mod:`dtkguard.resolve.engine` asks without building resolvelib's mappings."""
        if reqs:
            self.via[identifier] = reqs
        key = (identifier, reqs, worse)
        hit = self._matches.get(key)
        if hit is not None:
            return hit.read if isinstance(hit, _Matches) and hit.complete else hit
        bad = {c.version for c in worse}
        if identifier == PYTHON:
            ok = all(self.python_version in r.specifier for r in reqs)
            out: Any = [self.python_candidate] if ok and self.python_version not in bad else []
        else:
            name = reqs[0].name if reqs else identifier.split("[", 1)[0]
            extras = frozenset().union(*(r.extras for r in reqs)) if reqs else frozenset()
            picked = self.allowed_versions(name, reqs)
            if bad:
                picked = [(v, link) for v, link in picked if v not in bad]
            out = _Matches(self, name, picked, extras) if picked else []
        self._matches[key] = out
        return out

    def usable(
        self, name: str, version: Version, link: FileLink, extras: frozenset[str]
    ) -> Candidate | None:
        """The candidate for ``link``, or None when its metadata is broken (remembered for the
        explanation): pip and uv skip such a file too."""
        if link in self.unusable:
            return None
        try:
            self.metadata(link)
        except BadMetadata as exc:
            self.unusable[link] = exc.message
            return None
        return self.candidate(name, version, link, extras)

    def is_satisfied_by(self, requirement: Req, candidate: Candidate) -> bool:
        key = (requirement, candidate)
        hit = self._sat.get(key)
        if hit is None:
            if requirement.exact is not None:
                hit = candidate.version == requirement.exact
            else:
                hit = requirement.specifier.contains(candidate.version, prereleases=True)
            self._sat[key] = hit
        return hit

    def dependencies_of(self, candidate: Candidate) -> list[Req]:
        if candidate.name == PYTHON or candidate.link is None:
            return []
        cached = self._deps.get(candidate)
        if cached is not None:
            return cached
        meta = self.metadata(candidate.link)
        out: list[Req] = []
        if meta.requires_python is not None and not meta.requires_python.contains(
            self.python_version, prereleases=True
        ):
            out.append(
                Req(
                    PYTHON,
                    meta.requires_python,
                    parent=candidate,
                    text=f"Python {meta.requires_python}",
                )
            )
        if candidate.extras:
            out.append(
                Req(
                    candidate.name,
                    SpecifierSet(),
                    parent=candidate,
                    text=f"{candidate.name}=={candidate.version}",
                    exact=candidate.version,
                )
            )
        for req in meta.requires_dist:
            if candidate.extras:
                if req.marker is None or not any(
                    self.marker_ok(req.marker, e) for e in candidate.extras
                ):
                    continue
                if self.marker_ok(req.marker, ""):
                    continue  # the base candidate brings it already
            elif req.marker is not None and not self.marker_ok(req.marker, ""):
                continue
            out.append(self.make_req(req, candidate))
        self._deps[candidate] = out
        self.warm(r.name for r in out)
        return out

    def get_dependencies(self, candidate: Candidate) -> list[Req]:
        return self.dependencies_of(candidate)


class _Matches:
    """One `PolicyProvider.find_matches` answer: the candidates newest first, each file's
    metadata read when the resolver first gets that far (a broken one skipped), what was read
    kept for every later iteration. An error (a source that failed) leaves the position where
    it was: the next iteration asks again, nothing is taken for an answer it did not give."""

    __slots__ = ("_done", "_extras", "_name", "_picked", "_pos", "_provider")

    def __init__(
        self,
        provider: PolicyProvider,
        name: str,
        picked: list[tuple[Version, FileLink]],
        extras: frozenset[str],
    ) -> None:
        self._provider = provider
        self._name = name
        self._picked = picked
        self._extras = extras
        self._done: list[Candidate] = []
        self._pos = 0

    @property
    def complete(self) -> bool:
        """Has every file been read? Then :attr:`read` is the whole answer."""
        return self._pos >= len(self._picked)

    @property
    def read(self) -> list[Candidate]:
        """The candidates read so far (all of them once :attr:`complete`); never changed
        after that, so resolvelib may take the list itself."""
        return self._done

    def __call__(self) -> Iterator[Candidate]:
        done = self._done
        i = 0
        while True:
            if i < len(done):
                yield done[i]
                i += 1
                continue
            if self._pos >= len(self._picked):
                return
            version, link = self._picked[self._pos]
            cand = self._provider.usable(self._name, version, link, self._extras)
            self._pos += 1
            if cand is not None:
                done.append(cand)


def _pins(req: Req, version: Version) -> bool:
    """Does ``req`` pin exactly ``version`` (``==V`` without a wildcard, ``===V``)?"""
    if req.exact is not None:
        return req.exact == version
    for spec in req.specifier:
        if spec.operator == "===" and spec.version == str(version):
            return True
        if spec.operator == "==" and "*" not in spec.version and Version(spec.version) == version:
            return True
    return False


def _python_ok(spec: str, version: Version) -> bool:
    try:
        return SpecifierSet(spec).contains(version, prereleases=True)
    except InvalidSpecifier:
        return True  # pip ignores a broken data-requires-python too


def _silent_on(policy: Any, name: str) -> bool:
    """Does the policy name ``name`` nowhere (no vendor pin, no deny rule)? Then
    `dtkguard.decision` finds no problem with any version of it that has no local label (the
    DTK release of a build is read from its label), and `_allowed` need not be asked."""
    from dtkguard.decision import deny_rule

    data = policy.decision_json()
    return canonical(name) not in (data.get("vendor") or {}) and deny_rule(data, name) is None


def _allowed(policy: Any, name: str, version: Version) -> bool:
    """May ``name`` at ``version`` be in the environment? `dtkguard.decision` answers, as it
    does for `check`, dtkpip and the pip hook."""
    import datetime

    from dtkguard.decision import decide, refusals

    today = datetime.date.today().isoformat()
    return not refusals(decide(policy.decision_json(), [(name, str(version))], today))
