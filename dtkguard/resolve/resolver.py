"""Resolve requirements under a policy for a target: the entry point of ``dtkguard lock``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.requirements import Requirement

from dtkguard.errors import DtkguardError
from dtkguard.resolve.binary import FormatControl
from dtkguard.resolve.candidates import PYTHON, Candidate, Req
from dtkguard.resolve.metacache import MetadataCache
from dtkguard.resolve.progress import Progress
from dtkguard.resolve.provider import PolicyProvider
from dtkguard.resolve.reporter import CountingReporter, OutOfTime
from dtkguard.resolve.sdist import Builder
from dtkguard.resolve.sources import FileLink, Source
from dtkguard.resolve.sources import build_sources as build_sources  # re-exported
from dtkguard.resolve.target import TargetEnv

TYPE_CHECKING = False
if TYPE_CHECKING:
    from resolvelib.resolvers import Result

MAX_ROUNDS = 200_000
#: seconds a resolution may take before dtkguard gives up (exit 1, ``--resolve-timeout``)
RESOLVE_SECONDS = 60.0


class Unsatisfiable(DtkguardError):
    """The request cannot be met under the policy: a veto-like verdict, exit 1."""

    exit_code = 1

    def __init__(self, lines: list[str], rounds: int = 0, *, timed: bool = False) -> None:
        super().__init__(lines[0] if lines else "no resolution")
        self.lines = lines
        self.rounds = rounds
        #: True when the clock shaped the answer (a time limit passed, here or in a trial of
        #: the explanation): the same inputs may be answered otherwise, so it is not cached
        self.timed = timed

    def line(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Resolved:
    """One locked package: the chosen version and wheel, and its metadata."""

    name: str
    version: str
    link: FileLink
    requires_dist: list[Requirement]
    requires_python: str | None
    requested: bool
    dependencies: list[str] = field(default_factory=list)


@dataclass
class Resolution:
    packages: list[Resolved]
    rounds: int
    backtracks: int
    stats: dict[str, int]
    provider: PolicyProvider
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ResolveOptions:
    """How to resolve: pre-releases, the time limit and ``--only-binary``/``--no-binary`` (the
    command line's), the metadata cache, the sdist builder and the terminal's progress line."""

    pre: bool = False
    timeout: float = RESOLVE_SECONDS
    cache: MetadataCache | None = None
    formats: FormatControl | None = None
    builder: Builder | None = None
    progress: Progress | None = None


@dataclass(frozen=True)
class Trial:
    """A trial resolution made while explaining a conflict: no explanation of its own, the
    explaining resolution's deadline and rounds left, and its provider (``like``) to share."""

    deadline: float
    max_rounds: int
    like: PolicyProvider


def resolve(
    requirements: Sequence[Requirement],
    sources: Sequence[Source],
    policy: Any,
    target: TargetEnv,
    options: ResolveOptions | None = None,
    *,
    trial_of: Trial | None = None,
) -> Resolution:
    """Resolve ``requirements``; :class:`Unsatisfiable` (exit 1) explains a conflict or says
    that no answer came within ``options.timeout`` seconds. A ``trial_of`` resolution raises
    :class:`OutOfTime` instead when its deadline passes (or its rounds run out), and an
    unexplained :class:`Unsatisfiable` on a conflict."""
    from resolvelib.resolvers import ResolutionImpossible, ResolutionTooDeep

    from dtkguard.resolve.engine import resolver_class

    opts = options or ResolveOptions()
    started = time.monotonic()
    explain = trial_of is None
    deadline = started + opts.timeout if trial_of is None else trial_of.deadline
    max_rounds = MAX_ROUNDS if trial_of is None else trial_of.max_rounds
    like = None if trial_of is None else trial_of.like
    provider = PolicyProvider(sources, policy, target, pre=opts.pre, cache=opts.cache, like=like,
                              formats=opts.formats, builder=opts.builder)  # fmt: skip
    if opts.progress is not None:
        opts.progress.attach(provider)
    try:
        roots = [
            provider.make_req(r, None)
            for r in requirements
            if r.marker is None or r.marker.evaluate(dict(target.markers))
        ]
        for i, req in enumerate(roots):
            provider.user_order.setdefault(req.name, i)
        provider.warm(r.name for r in roots)
        reporter = CountingReporter(deadline)
        try:
            result = resolver_class()(provider, reporter).resolve(roots, max_rounds=max_rounds)
        except ResolutionImpossible as exc:
            if not explain:
                raise Unsatisfiable([], reporter.rounds) from None
            from dtkguard.resolve.conflict import explain_conflict

            lines = explain_conflict(provider, exc.causes, requirements, reporter.rounds, trial)
            raise Unsatisfiable(lines, reporter.rounds, timed=provider.out_of_time) from None
        except (ResolutionTooDeep, OutOfTime):
            if not explain:
                raise OutOfTime(reporter.rounds) from None
            took = time.monotonic() - started
            raise Unsatisfiable(_gave_up(provider, reporter, took), timed=True) from None
        return _collect(provider, result, roots, reporter)
    finally:
        provider.close()


def trial(
    provider: PolicyProvider, reqs: list[Requirement], deadline: float, budget: list[int]
) -> bool | None:
    """True when ``reqs`` resolve, False when not, None when the budget ran out: ``budget[0]``
    rounds left for all trials together (the rounds this trial took are taken off)."""
    if time.monotonic() >= deadline:
        provider.out_of_time = True
        return None
    if budget[0] <= 0:
        return None
    try:
        res = resolve(
            reqs,
            provider.sources,
            provider.policy,
            provider.target,
            ResolveOptions(
                pre=provider.pre,
                cache=provider.cache,
                formats=provider.formats,
                builder=provider.builder,
            ),
            trial_of=Trial(deadline, budget[0], provider),
        )
    except OutOfTime:
        if time.monotonic() >= deadline:
            provider.out_of_time = True
        budget[0] = 0
        return None
    except Unsatisfiable as exc:
        budget[0] -= exc.rounds
        return False
    except DtkguardError:  # a source failed on this trial: no answer
        return False
    budget[0] -= res.rounds
    return True


def _gave_up(provider: PolicyProvider, reporter: CountingReporter, took: float) -> list[str]:
    """Why the resolver stopped without an answer, naming the projects that kept clashing."""
    worst = sorted(provider.conflict_counts().items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    lines = [
        f"no answer after {reporter.rounds} resolver rounds and {reporter.backtracks} "
        f"backtracks ({took:.1f} s): the request could be neither met nor proved impossible "
        "in time (raise --resolve-timeout, or pin the projects below)"
    ]
    if worst:
        lines.append("projects that clashed most: " + ", ".join(f"{k} ({n}x)" for k, n in worst))
    return lines


def _collect(
    provider: PolicyProvider,
    result: Result[Req, Candidate, str],
    roots: list[Req],
    reporter: CountingReporter,
) -> Resolution:
    requested = {r.name for r in roots}
    base: dict[str, Candidate] = {}
    for key, cand in sorted(result.mapping.items()):
        if key == PYTHON:
            continue
        if cand.name not in base or not cand.extras:
            base[cand.name] = cand
    children: dict[str, set[str]] = {}
    for key, cand in result.mapping.items():
        if key == PYTHON or cand.link is None:
            continue
        for req in provider.dependencies_of(cand):
            if req.name != PYTHON and req.name != cand.name:
                children.setdefault(cand.name, set()).add(req.name)
    out = []
    for name in sorted(base):
        cand = base[name]
        assert cand.link is not None
        meta = provider.metadata(cand.link)
        out.append(
            Resolved(
                name=name,
                version=str(cand.version),
                link=cand.link,
                requires_dist=meta.requires_dist,
                requires_python=str(meta.requires_python) if meta.requires_python else None,
                requested=name in requested,
                dependencies=sorted(children.get(name, ())),
            )
        )
    stats = {"rounds": reporter.rounds, "backtracks": reporter.backtracks}
    warnings = [
        f"{cand.name} {cand.version} does not provide the extra '{extra}'"
        for key, cand in sorted(result.mapping.items())
        if key != PYTHON
        for extra in provider.missing_extras(cand)
    ]
    warnings += [
        f"{p.name} {p.version} is yanked"
        + (f" ({p.link.yank_reason})" if p.link.yank_reason else "")
        + "; taken because a requirement pins it exactly (PEP 592)"
        for p in out
        if p.link.yanked
    ]
    warnings += [
        f"skipped {link.filename}: {why}"
        for link, why in sorted(provider.unusable.items(), key=lambda kv: kv[0].filename)
    ]
    return Resolution(out, reporter.rounds, reporter.backtracks, stats, provider, warnings)
