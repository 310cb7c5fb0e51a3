"""Turn resolvelib's ``ResolutionImpossible`` causes into the policy's words.

"vllm 0.9.2 requires torch==2.7.0; policy dtk-25.04.1 allows torch only as
2.4.1+das.opt1.dtk25041; vllm 0.8.5.post1+das.opt1.dtk25041 is the vendor build", then the
nearest versions of the requesting package that would resolve.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from packaging.requirements import Requirement
from packaging.version import Version

from dtkguard.resolve.provider import PYTHON, PolicyProvider, Req

#: how many alternative versions are tried (full resolutions) when looking for what would work
MAX_TRIES = 6
MAX_SUGGEST = 3
MAX_ALSO = 3


def _plain(req: Requirement) -> str:
    """``torch==2.7.0`` (no marker)."""
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    return f"{req.name}{extras}{req.specifier}"


def _who(req: Req) -> str:
    p = req.parent
    return "the request" if p is None else f"{p.name} {p.version}"


def _policy_name(provider: PolicyProvider) -> str:
    return provider.policy.name if provider.policy is not None else "(no policy)"


def _vendor_sources(provider: PolicyProvider) -> str:
    return ", ".join(s.label for s in provider.vendor_sources) or "none given"


def _why_community(provider: PolicyProvider, req: Req) -> list[str]:
    """For a request on another version of a vendor package: what that version needs that the
    policy does not allow (read from the public metadata, policy not applied)."""
    out = []
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
        if dep.marker is not None and not provider._marker_ok(dep.marker, ""):
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


def _cause_line(provider: PolicyProvider, req: Req) -> list[str]:
    policy = provider.policy
    pname = _policy_name(provider)
    if req.name == PYTHON:
        return [f"{_who(req)} requires {req.text}; the target is Python {provider.target.python}"]
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
                    return [f"{reasons[0]}; {tail}", *more]
                return [
                    f"{req.text} was requested; policy {pname} allows {req.name} "
                    f"only as {vendor} ({tail})"
                ]
            return [
                f"{_who(req)} requires {req.text}; policy {pname} allows {req.name} "
                f"only as {vendor}"
            ]
        if not provider.candidates_for(req.name):
            return [
                f"{_who(req)} requires {req.text}; policy {pname} allows {req.name} only as "
                f"{vendor}, and no vendor source has that build for the target "
                f"(vendor sources: {_vendor_sources(provider)})"
            ]
    rule = policy.deny_rule(req.name) if policy is not None else None
    if rule is not None and not provider.candidates_for(req.name):
        return [f"{_who(req)} requires {req.text}; policy {pname} denies {req.name}: {rule.reason}"]
    if not provider.candidates_for(req.name):
        return [
            f"{_who(req)} requires {req.text}; no source has a wheel of {req.name} for the target"
        ]
    return [f"{_who(req)} requires {req.text}"]


def _requesting(causes: Sequence[Any], roots: Sequence[Requirement], provider) -> list[str]:
    """Root-requested names involved in the conflict (the packages whose versions to vary)."""
    root_names = [provider.make_req(r, None).name for r in roots]
    involved = []
    for cause in causes:
        req = cause.requirement
        for name in (req.name, cause.parent.name if cause.parent is not None else None):
            if name in root_names and name not in involved:
                involved.append(name)
    return involved


def _suggest(provider: PolicyProvider, name: str, roots: Sequence[Requirement]) -> list[str]:
    """Versions of ``name`` nearest to the request that resolve with the rest of the request."""
    from dtkguard.resolve.resolver import Unsatisfiable, resolve

    asked = next(r for r in roots if provider.make_req(r, None).name == name)
    versions = sorted({v for v, _ in provider.candidates_for(name)})
    if not versions:
        return []
    pinned = [
        Version(s.version)
        for s in asked.specifier
        if s.operator in ("==", "===") and "*" not in s.version
    ]
    anchor = pinned[0] if pinned else versions[-1]
    ranked = sorted(
        versions, key=lambda v: (abs(versions.index(v) - _pos(versions, anchor)), v > anchor)
    )
    found = []
    for v in ranked[:MAX_TRIES]:
        trial = [r for r in roots if provider.make_req(r, None).name != name]
        trial.append(Requirement(f"{asked.name}{_extras(asked)}=={v}"))
        try:
            resolve(trial, provider.sources, provider.policy, provider.target, explain=False)
        except (Unsatisfiable, Exception):
            continue
        found.append(str(v))
        if len(found) >= MAX_SUGGEST:
            break
    return found


def _extras(req: Requirement) -> str:
    return f"[{','.join(sorted(req.extras))}]" if req.extras else ""


def _pos(versions: list[Version], anchor: Version) -> int:
    import bisect

    return bisect.bisect_left(versions, anchor)


def explain_conflict(
    provider: PolicyProvider, causes: Sequence[Any], roots: Sequence[Requirement]
) -> list[str]:
    """Lines for the user: first the conflict in policy words, then what would resolve."""
    lines: list[str] = []
    seen: set[int] = set()
    for cause in causes:
        req = cause.requirement
        if id(req) in seen:
            continue
        seen.add(id(req))
        for line in _cause_line(provider, req):
            if line not in lines:
                lines.append(line)
    for name in _requesting(causes, roots, provider):
        found = _suggest(provider, name, roots)
        if found:
            lines.append(f"versions of {name} that resolve under the policy: {', '.join(found)}")
        else:
            lines.append(f"no version of {name} resolves under the policy")
    return lines
