"""Turn resolvelib's ``ResolutionImpossible`` causes into sentences with their derivation.

"because dask[diagnostics] 2.10.1 depends on bokeh>=1.0.0 and bokeh 1.4.0 depends on
Jinja2>=2.7, jinja2 2.9 through 2.11.1 (13 versions) require MarkupSafe>=0.23; no source has
a wheel of markupsafe for the target"; in the policy's words only where the policy is a reason
("vllm 0.9.2 requires torch==2.7.0; policy dtk-25.04.1 allows torch only as
2.4.1+das.opt1.dtk25041; ..."); then the nearest versions of the requested packages that would
resolve, found by trial resolutions bounded in rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from dtkguard.resolve.candidates import PYTHON, Candidate, Req
from dtkguard.resolve.excluded import describe, matching
from dtkguard.resolve.provider import PolicyProvider

#: a trial resolution: (provider, requirements, deadline, rounds budget) -> resolves? (None:
#: the budget ran out)
Trial = Callable[[PolicyProvider, list[Requirement], float, list[int]], "bool | None"]

#: how many alternative versions are tried (full resolutions) when looking for what would work
MAX_TRIES = 6
MAX_SUGGEST = 3
MAX_ALSO = 3
#: at most this many "depends on" steps in a derivation
MAX_CHAIN = 8
#: all trial resolutions together may take as many rounds as the failed one took (at least
#: MIN_TRIAL_ROUNDS): a bound in rounds, not seconds, so the same request always gets the
#: same explanation, however busy the machine
TRIAL_ROUNDS_FACTOR = 1
MIN_TRIAL_ROUNDS = 500
#: and all trials together at most this many seconds (a safety net only)
EXPLAIN_SECONDS = 30.0


def _plain(req: Requirement) -> str:
    """``torch==2.7.0`` (no marker)."""
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    return f"{req.name}{extras}{req.specifier}"


def _policy_name(provider: PolicyProvider) -> str:
    return provider.policy.name if provider.policy is not None else "(no policy)"


def _vendor_sources(provider: PolicyProvider) -> str:
    return ", ".join(s.label for s in provider.vendor_sources) or "none given"


def _why_community(provider: PolicyProvider, req: Req) -> list[str]:
    """For a request on another version of a vendor package: what that version needs that the
    policy does not allow (read from the public metadata, policy not applied)."""
    out: list[str] = []
    links = [lk for lk in provider.all_links(req.name) if req.specifier.contains(lk.version, True)]
    if not links:
        return out
    newest = max(lk.version for lk in links)
    link = next(
        (
            lk
            for lk in links
            if lk.version == newest and provider.target.wheel_rank(lk.tags) is not None
        ),
        next(lk for lk in links if lk.version == newest),
    )
    meta = provider.metadata(link)
    pname = _policy_name(provider)
    for dep in meta.requires_dist:
        if dep.marker is not None and not provider.marker_ok(dep.marker, ""):
            continue
        name = provider.make_req(dep, None).name
        vendor = provider.policy.vendor_build(name)
        if vendor is not None and not dep.specifier.contains(Version(vendor), prereleases=True):
            out.append(
                f"{req.name} {newest} requires {_plain(dep)}; policy {pname} allows "
                f"{name} only as {vendor}"
            )
        elif vendor is None and (rule := provider.policy.deny_rule(name)) is not None:
            out.append(
                f"{req.name} {newest} requires {_plain(dep)}; policy {pname} denies "
                f"{name}: {rule.reason}"
            )
    return out


def _vendor_hint(provider: PolicyProvider, name: str, vendor: str) -> str:
    """Where a vendor build sits in a public source only: say which option makes it a vendor
    source (a public source is never trusted for a vendor package)."""
    from dtkguard.resolve.sources import FindLinks

    want = Version(vendor)
    for source in provider.sources:
        if source.vendor or not any(lk.version == want for lk in source.links(name)):
            continue
        option = "--vendor-find-links" if isinstance(source, FindLinks) else "--vendor-index-url"
        return f"; {source.label} has it but is a public source: pass it with {option}"
    return ""


def _cause_line(provider: PolicyProvider, req: Req, who: str) -> tuple[list[str], bool]:
    """The lines for one cause, and whether the policy is part of the reason."""
    policy = provider.policy
    pname = _policy_name(provider)
    if req.name == PYTHON:
        shown = provider.target.shown_version
        return [f"{who} requires {req.text}; the target is Python {shown}"], False
    vendor = policy.vendor_build(req.name) if policy is not None else None
    if vendor is not None:
        v = Version(vendor)
        ok = req.exact == v if req.exact is not None else req.specifier.contains(v, True)
        if not ok:
            if req.parent is None:
                reasons = _why_community(provider, req)
                tail = f"{req.name} {vendor} is the vendor build"
                if reasons:
                    more = [f"  also: {r}" for r in reasons[1 : MAX_ALSO + 1]]
                    if len(reasons) > MAX_ALSO + 1:
                        more.append(f"  ... and {len(reasons) - MAX_ALSO - 1} more")
                    return [f"{reasons[0]}; {tail}", *more], True
                return [
                    f"{req.text} was requested; policy {pname} allows {req.name} "
                    f"only as {vendor} ({tail})"
                ], True
            return [
                f"{who} requires {req.text}; policy {pname} allows {req.name} only as {vendor}"
            ], True
        if not provider.candidates_for(req.name):
            return [
                f"{who} requires {req.text}; policy {pname} allows {req.name} only as "
                f"{vendor}, and no vendor source has that build for the target "
                f"(vendor sources: {_vendor_sources(provider)})"
                f"{_vendor_hint(provider, req.name, vendor)}"
            ], True
    rule = policy.deny_rule(req.name) if policy is not None else None
    if rule is not None and not provider.candidates_for(req.name):
        return [f"{who} requires {req.text}; policy {pname} denies {req.name}: {rule.reason}"], True
    reasons = excluded_reasons(provider, req)
    if reasons:
        return [f"{who} requires {req.text}; {'; '.join(reasons)}"], False
    if not provider.candidates_for(req.name):
        return [f"{who} requires {req.text}; {nothing_for(provider, req.name)}"], False
    broken = sorted(
        (lk.filename, why) for lk, why in provider.unusable.items() if lk.project == req.name
    )
    if broken:
        named = "; ".join(f"{name}: {why}" for name, why in broken[:3])
        return [f"{who} requires {req.text}; unusable metadata in {named}"], False
    return [f"{who} requires {req.text}"], False


def nothing_for(provider: PolicyProvider, name: str) -> str:
    """Why ``name`` has no candidate at all: what was excluded, else that nothing is listed."""
    provider.candidates_for(name)
    reasons = describe(name, provider.excluded.get(name, []), provider.target)
    return "; ".join(reasons) if reasons else f"no source has a wheel of {name} for the target"


def excluded_reasons(provider: PolicyProvider, req: Req) -> list[str]:
    """Why versions ``req`` admits are not candidates (Requires-Python, yanked, wheel tags)."""
    if req.name == PYTHON:
        return []
    provider.candidates_for(req.name)
    spec = SpecifierSet(f"=={req.exact}") if req.exact is not None else req.specifier
    hits = matching(provider.excluded.get(req.name, []), spec)
    return describe(req.name, hits, provider.target)


def _chain(provider: PolicyProvider, parent: Candidate | None) -> list[str]:
    """How the resolver reached ``parent`` from the request, top first:
    ``["dask[diagnostics] 2.10.1 depends on bokeh>=1.0.0", "bokeh 1.4.0 depends on jinja2>=2.7"]``
    (empty when the request itself asked for ``parent``)."""
    steps: list[str] = []
    seen: set[str] = set()
    cur = parent
    while cur is not None and cur.key not in seen and len(steps) < MAX_CHAIN:
        seen.add(cur.key)
        reqs = provider.via.get(cur.key, [])
        if not reqs or any(r.parent is None for r in reqs):
            break
        step = next((r for r in reqs if r.exact is None), reqs[0])
        assert step.parent is not None
        if step.exact is None:
            steps.append(f"{step.parent.key} {step.parent.version} depends on {step.text}")
        cur = step.parent
    return steps[::-1]


def _who_many(parents: list[Candidate]) -> tuple[str, bool]:
    """``jinja2 2.11.1`` or ``jinja2 2.8 through 2.11.1 (15 versions)``; plural or not."""
    versions = sorted({p.version for p in parents})
    key = parents[0].key
    if len(versions) == 1:
        return f"{key} {versions[0]}", False
    return f"{key} {versions[0]} through {versions[-1]} ({len(versions)} versions)", True


def _missing_along_the_way(
    provider: PolicyProvider,
    causes: Collection[Any],
    skip: Collection[str] = frozenset(),
) -> list[str]:
    """Projects that kept clashing during the search but have no wheel at all (uv names them
    first: they rule out whole ranges of their dependents before the final conflict)."""
    named = {c.requirement.name for c in causes} | set(skip)
    out = []
    counts = provider.conflict_counts()
    for key in sorted(counts, key=lambda k: (-counts[k], k)):
        name = key.split("[", 1)[0]
        if name in named or name == PYTHON or provider.candidates_for(name):
            continue
        reqs = provider.via.get(key, [])
        parents = [r.parent for r in reqs if r.parent is not None]
        if not parents:
            continue
        who, plural = _who_many(parents)
        verb = "require" if plural else "requires"
        text = reqs[0].text
        chain = _chain(provider, max(parents, key=lambda c: c.version))
        lead = f"because {' and '.join(chain)}, " if chain else ""
        out.append(f"also: {lead}{who} {verb} {text}; {nothing_for(provider, name)}")
        if len(out) >= MAX_ALSO:
            break
    return out


def _groups(causes: Collection[Any]) -> list[tuple[Req, list[Candidate]]]:
    """Causes grouped by (parent project, requirement text), in order of first appearance."""
    out: dict[tuple[str | None, str], tuple[Req, list[Candidate]]] = {}
    for cause in causes:
        req, parent = cause.requirement, cause.parent
        key = (parent.key if parent is not None else None, req.text)
        if key not in out:
            out[key] = (req, [])
        if parent is not None:
            out[key][1].append(parent)
    return list(out.values())


def _requesting(
    causes: Collection[Any], roots: Sequence[Requirement], provider: PolicyProvider
) -> list[str]:
    """Root-requested names involved in the conflict (the packages whose versions to vary):
    named by a cause, or at the top of a cause's derivation."""
    root_names = [provider.make_req(r, None).name for r in roots]
    involved: list[str] = []
    for cause in causes:
        names = [cause.requirement.name]
        parent = cause.parent
        seen: set[str] = set()
        while parent is not None and parent.key not in seen:
            seen.add(parent.key)
            names.append(parent.name)
            reqs = provider.via.get(parent.key, [])
            parent = reqs[0].parent if reqs else None
        for name in names:
            if name in root_names and name not in involved:
                involved.append(name)
    return involved


def _suggest(
    provider: PolicyProvider,
    name: str,
    roots: Sequence[Requirement],
    deadline: float,
    budget: list[int],
    trial: Trial,
    rounds: int = 0,
) -> tuple[list[str], bool]:
    """Versions of ``name`` nearest to the request that resolve with the rest of the request,
    and whether every version tried got an answer in time.

    The trial of the version the request pins is the failed resolution itself (``rounds``: how
    many it took): its answer is known, so it is not resolved again but counted as those
    rounds, when they fit in what is left of the budget (else it is tried as any other)."""
    asked = next(r for r in roots if provider.make_req(r, None).name == name)
    versions = sorted({v for v, _ in provider.candidates_for(name)})
    if not versions:
        return [], True
    pinned = [
        Version(s.version)
        for s in asked.specifier
        if s.operator in ("==", "===") and "*" not in s.version
    ]
    anchor = pinned[0] if pinned else versions[-1]
    ranked = sorted(
        versions, key=lambda v: (abs(versions.index(v) - _pos(versions, anchor)), v > anchor)
    )
    found: list[str] = []
    for v in ranked[:MAX_TRIES]:
        trial_reqs = [r for r in roots if provider.make_req(r, None).name != name]
        trial_reqs.append(Requirement(f"{asked.name}{_extras(asked)}=={v}"))
        if 0 < rounds <= budget[0] and _is_the_request(provider, roots, name, v):
            budget[0] -= rounds
            continue
        ok = trial(provider, trial_reqs, deadline, budget)
        if ok is None:
            return found, False
        if ok:
            found.append(str(v))
            if len(found) >= MAX_SUGGEST:
                break
    return found, True


def _is_the_request(
    provider: PolicyProvider, roots: Sequence[Requirement], name: str, version: Version
) -> bool:
    """Is the trial of ``name==version`` the request that failed: ``name`` asked for once,
    without a marker, as ``==version`` alone (no wildcard)? The rest of the request is the
    same in both."""
    same = [r for r in roots if provider.make_req(r, None).name == name]
    if len(same) != 1 or same[0].marker is not None:
        return False
    specs = list(same[0].specifier)
    if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
        return False
    return Version(specs[0].version) == version


def _extras(req: Requirement) -> str:
    return f"[{','.join(sorted(req.extras))}]" if req.extras else ""


def _pos(versions: list[Version], anchor: Version) -> int:
    import bisect

    return bisect.bisect_left(versions, anchor)


def _without_files_first(
    provider: PolicyProvider, roots: Sequence[Requirement]
) -> tuple[list[str], set[str]]:
    """One line per project of the likely graph with no usable file, before anything else
    (all of them at once, not one per run)."""
    from dtkguard.resolve.missing import without_files

    reqs = [provider.make_req(r, None) for r in roots]
    found = without_files(provider, reqs, time.monotonic() + EXPLAIN_SECONDS / 3)
    if len(found) < 2:
        return [], set()  # one is named by the conflict itself, with its chain
    lines = [
        f"no usable file for the target: {name} (needed by {who}): {nothing_for(provider, name)}"
        for name, who in found
    ]
    return lines, {name for name, _ in found}


def explain_conflict(
    provider: PolicyProvider,
    causes: Collection[Any],
    roots: Sequence[Requirement],
    rounds: int,
    trial: Trial,
) -> list[str]:
    """Lines for the user: each clashing requirement with the chain that reached it (in policy
    words where the policy is a reason), then which versions of the requested packages would
    resolve. ``rounds``: how many the failed resolution took (bounds all trials together);
    ``trial``: the resolver's `dtkguard.resolve.resolver.trial` (passed in, so that this module
    does not import the resolver that imports it)."""
    lines, named = _without_files_first(provider, roots)
    by_policy = False
    for req, parents in _groups(causes):
        if parents:
            newest = max(parents, key=lambda c: c.version)
            who, plural = _who_many(parents)
            chain = _chain(provider, newest)
        else:
            who, plural, chain = "the request", False, []
        body, policy_cause = _cause_line(provider, req, who)
        by_policy = by_policy or policy_cause
        if plural:
            body[0] = body[0].replace(f"{who} requires ", f"{who} require ", 1)
        if chain:
            body[0] = f"because {' and '.join(chain)}, {body[0]}"
        lines += [line for line in body if line not in lines]
    also = _missing_along_the_way(provider, causes, named)
    lines += [line for line in also if line not in lines]
    deadline = time.monotonic() + EXPLAIN_SECONDS
    budget = [max(MIN_TRIAL_ROUNDS, TRIAL_ROUNDS_FACTOR * rounds)]
    if by_policy:
        where = "under the policy"
    else:
        where = "with the rest of the request" if len(roots) > 1 else "for the target"
    root_names = [provider.make_req(r, None).name for r in roots]
    for name in _requesting(causes, roots, provider):
        found, complete = _suggest(provider, name, roots, deadline, budget, trial, rounds)
        if found:
            lines.append(f"versions of {name} that resolve {where}: {', '.join(found)}")
            continue
        if not complete:
            lines.append(f"no version of {name} tried resolves {where} (the search was cut short)")
            continue
        alone = roots[root_names.index(name)]
        if len(roots) > 1 and trial(provider, [alone], deadline, budget):
            lines.append(
                f"{_plain(alone)} resolves on its own, but none of the versions of {name} "
                "nearest to the request resolves together with the rest of the request"
            )
        elif by_policy:
            lines.append(f"no version of {name} resolves under the policy")
        else:
            lines.append(f"no version of {name} nearest to the request resolves")
    return lines
