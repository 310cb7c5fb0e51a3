"""`lock`: one PEP 751 lock from a `LockRequest`, as a library call.

`dtkguard lock` parses its options into a `LockRequest`, calls `lock` and prints the
`LockResult`'s messages; everything between (the policy, the target Python and platforms, the
sources, resolving or matching the installed set, the closure, ``--verify-binaries``, writing)
is here. Bad input raises `InputError` (exit 2), an unreadable target `TargetError` (exit 3); a
request the policy cannot meet is a result with ``code`` 1 and nothing written.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from dtkguard.env.open import TargetSpec
from dtkguard.lightclass import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from packaging.requirements import Requirement

    from dtkguard.policy.compiled import CompiledPolicy
    from dtkguard.resolve.binary import FormatControl
    from dtkguard.resolve.http import Fetcher
    from dtkguard.resolve.target import TargetEnv


@record
class LockRequest:
    """What to lock, from where, for which image, and where it goes (``dtkguard lock``'s
    options)."""

    output: Path
    requirements: list[str] = field(default_factory=list)  # PEP 508 strings
    requirement_files: list[str] = field(default_factory=list)
    policy: str | None = None
    find_links: list[str] = field(default_factory=list)
    vendor_find_links: list[str] = field(default_factory=list)
    vendor_index_urls: list[str] = field(default_factory=list)
    index_url: str | None = None  # None: pip's configured index-url
    extra_index_urls: list[str] = field(default_factory=list)
    no_index: bool = False
    pre: bool = False
    #: ``--only-binary``/``--no-binary`` as given: ("only" or "no", NAMES), in order
    formats: list[tuple[str, str]] = field(default_factory=list)
    no_cache: bool = False
    resolve_timeout: float | None = None  # None: `RESOLVE_SECONDS`
    python_version: str | None = None  # None: the policy's (or, from_env, the target's)
    platforms: list[str] | None = None
    from_env: bool = False  # lock the installed set of ``target`` instead of resolving
    target: TargetSpec = field(default_factory=TargetSpec)
    verify_binaries: bool = False
    note: str | None = None  # free text for [tool.dtkguard]
    quiet: bool = False


@record
class LockResult:
    """``code`` 0 written, 1 not met (nothing written); ``messages``: the lines for stderr, in
    order (warnings, the conflict or the refused binaries, the summary)."""

    code: int
    output: Path
    packages: int = 0
    messages: list[str] = field(default_factory=list)


def lock(request: LockRequest) -> LockResult:
    """Resolve ``request`` under its policy (or match its target's installed set) and write the
    lock; see `LockResult`."""
    from dtkguard.errors import InputError
    from dtkguard.policy.load import load_policy
    from dtkguard.resolve.http import Fetcher
    from dtkguard.resolve.pagecache import PageCache
    from dtkguard.resolve.target import target_from
    from dtkguard.rules.catalog import is_known

    started = time.perf_counter()
    policy = load_policy(request.policy, known_rule=is_known)
    target = target_from(policy, request.python_version, request.platforms)
    _check_output(request.output)
    if request.from_env:
        if _requirements(request, _file_requirements(request)):
            raise InputError("--from-env takes no requirements", field="REQ")
        return _lock_env(request, policy, target)
    if not request.requirements and not request.requirement_files:
        raise InputError(_NOTHING, field="REQ")
    pages = None if request.no_cache else PageCache()
    if pages is not None:
        pages.defer()  # written at the end, not by the fetch threads (`MetadataCache.defer`)
    fetcher = Fetcher(pages=pages)
    try:
        sources, index = sources_of(request, policy, fetcher)
        return _lock_resolved(request, policy, target, _Sources(sources, index, fetcher, started))
    finally:
        fetcher.close()
        if pages is not None:
            pages.flush()


_NOTHING = "nothing to lock: give requirements or -r FILE"


def _file_requirements(request: LockRequest) -> list[Requirement]:
    """The requirements of the ``-r`` files (pip-api and packaging are imported only for them)."""
    if not request.requirement_files:
        return []
    from dtkguard.lock.requirements import from_files

    return from_files(request.requirement_files)


def _requirements(request: LockRequest, files: list[Requirement]) -> list[Requirement]:
    """Every requirement of the request, parsed: the command line's, then the files'."""
    from dtkguard.lock.requirements import from_command_line

    return from_command_line(request.requirements) + files


def _check_output(out: Path) -> None:
    from dtkguard.errors import InputError
    from dtkguard.lock.tool import is_pylock_name

    if not out.parent.is_dir():
        raise InputError("output folder does not exist", str(out.parent), field="-o")
    if not is_pylock_name(out.name):
        raise InputError(
            "a PEP 751 lock must be named pylock.toml or pylock.NAME.toml", str(out), field="-o"
        )


def sources_of(request: LockRequest, policy: CompiledPolicy, fetcher: Fetcher) -> tuple[Any, Any]:
    """The sources the request names (the public index said on stderr as it is chosen) and the
    public index's URL with its credentials, None without one."""
    from dtkguard.resolve.auth import redact
    from dtkguard.resolve.indexes import default_index_credentials, default_index_url
    from dtkguard.resolve.sources import build_sources

    index = request.index_url
    if index is None and not request.no_index:
        index, origin = default_index_url(request.target.python)
        if origin.startswith("$UV_DEFAULT_INDEX"):
            fetcher.credentials.add(index.split("=", 1)[-1], default_index_credentials())
        if not request.quiet:
            print(f"dtkguard: public index (from {origin}): {redact(index)}", file=sys.stderr)
    sources = build_sources(
        policy,
        fetcher,
        vendor_find_links=request.vendor_find_links,
        vendor_indexes=request.vendor_index_urls,
        find_links=request.find_links,
        index_url=index,
        extra_index_urls=[] if request.no_index else request.extra_index_urls,
        env_extras=not request.no_index and not request.extra_index_urls,
    )
    return sources, None if index is None else fetcher.credentials.add(index)


def inputs_of(request: LockRequest, reqs: list[Any], index: str | None) -> dict[str, Any]:
    """What the lock was made from (``reqs``: requirements or their strings), as given,
    credentials taken out of every URL."""
    from dtkguard.resolve.auth import split_userinfo

    def clean(urls: list[str]) -> list[str]:
        return [split_userinfo(u)[0] for u in urls]

    return {
        "requirements": [str(r) for r in reqs],
        "requirement-files": list(request.requirement_files),
        "vendor-find-links": list(request.vendor_find_links),
        "vendor-indexes": clean(request.vendor_index_urls),
        "find-links": list(request.find_links),
        "index-url": index or "none",
        "extra-index-urls": [] if request.no_index else clean(request.extra_index_urls),
        "from-env": bool(request.from_env),
        **({"pre": True} if request.pre else {}),
        **formats_of(request).to_inputs(),
    }


def formats_of(request: LockRequest) -> FormatControl:
    from dtkguard.resolve.binary import FormatControl

    return FormatControl.from_options(request.formats)


@record
class _Sources:
    """Where distributions come from: the sources, the public index URL, the fetcher."""

    sources: Any
    index: str | None
    fetcher: Fetcher
    started: float  # `time.perf_counter` when the request was taken (for the summary)


def _lock_env(request: LockRequest, policy: CompiledPolicy, target: TargetEnv) -> LockResult:
    """``--from-env``: the installed set of the request's target, matched to wheels by RECORD."""
    from dtkguard.env.open import open_target
    from dtkguard.lock.from_env import installed_document, lock_installed, target_of_env
    from dtkguard.lock.write import write_lock
    from dtkguard.resolve.http import Fetcher

    out = request.output
    env = open_target(request.target)
    result = LockResult(1, out)
    if not request.python_version:
        own = target_of_env(env, target)
        if own is None:  # a choice, said as it is made (as the public index is)
            print(
                f"dtkguard: warning: cannot tell the Python version of the target; locking for "
                f"Python {target.python} (the policy's), pass --python-version to choose",
                file=sys.stderr,
            )
        target = own or target
    fetcher = Fetcher()
    try:
        sources, index = sources_of(request, policy, fetcher)
        found = lock_installed(env, sources, policy, target, out.parent)
    finally:
        fetcher.close()
    inputs = inputs_of(request, [], index)
    write_lock(out, installed_document(env, found, policy, target, inputs, request.note))
    result.code, result.packages = 0, len(found.entries)
    if not request.quiet:
        result.messages.append(
            f"wrote {out}: {len(found.entries)} packages matched to wheels by RECORD, "
            f"{len(found.installed)} recorded as installed-only"
        )
        result.messages += [f"dtkguard: warning: {problem}" for problem in found.problems[:10]]
    return result


def _lock_resolved(
    request: LockRequest, policy: CompiledPolicy, target: TargetEnv, where: _Sources
) -> LockResult:
    """The lock of the request under the policy (code 1: not met, nothing written): from the
    resolution cache when every input is unchanged (`dtkguard.lock.rescache`), else resolved
    and written, and kept for the next run.

    The key takes the command line's requirements as typed (a hit parses nothing: an invalid
    one never made an entry) and the files' as parsed (what their includes add)."""
    from dtkguard.errors import InputError
    from dtkguard.lock import rescache

    files = _file_requirements(request)
    store = None if request.no_cache else rescache.ResolutionStore()
    key = None
    if store is not None and store.enabled:
        given = [*request.requirements, *files]
        inputs = _cache_inputs(request, policy, target, given, where.index)
        key = rescache.key_of(inputs, where.sources)
    hit = None if key is None or store is None else rescache.lookup(store, key, where.sources)
    if hit is not None:
        return _replay(request, hit, where)
    reqs = _requirements(request, files)
    if not reqs:
        raise InputError(_NOTHING, field="REQ")
    outcome = rescache.Outcome(1)
    result = _resolve_and_write(request, policy, target, reqs, where, outcome)
    if key is not None and store is not None and outcome.summary != "uncacheable":
        rescache.save(store, key, where.sources, outcome)
    return result


def _cache_inputs(
    request: LockRequest,
    policy: CompiledPolicy,
    target: TargetEnv,
    reqs: list[Any],
    index: str | None,
) -> dict[str, Any]:
    """Everything besides the sources that a lock run's outcome follows from."""
    return {
        "tool": _tool(request, policy, target, reqs, index),
        "markers": dict(target.markers),
        "lock-dir": str(request.output.parent.resolve()),
        "verify-binaries": request.verify_binaries,
        "quiet": request.quiet,
    }


def _replay(request: LockRequest, hit: Any, where: _Sources) -> LockResult:
    """A cached outcome, written and said as the run that made it did."""
    from dtkguard.util.output import write_output

    result = LockResult(hit.code, request.output, hit.packages, list(hit.messages))
    if hit.lock is not None:
        write_output(request.output, hit.lock)
    if hit.summary and not request.quiet:
        took = time.perf_counter() - where.started
        stats = where.fetcher.stats
        result.messages.append(
            f"wrote {request.output}: {hit.summary}; from the resolution cache (every input "
            f"unchanged), {stats['requests']} requests, {took:.2f}s"
        )
    return result


def _resolve_and_write(
    request: LockRequest,
    policy: CompiledPolicy,
    target: TargetEnv,
    reqs: list[Requirement],
    where: _Sources,
    outcome: Any,
) -> LockResult:
    """Resolve ``reqs`` and write the lock; ``outcome`` is filled for the resolution cache
    (its ``summary`` is "uncacheable" when the answer may not be kept)."""
    from dtkguard.lock.write import ClosureError, build_document, closure_problems, write_lock
    from dtkguard.resolve.resolver import Unsatisfiable

    result = LockResult(1, request.output)
    try:
        res = _resolve(request, policy, target, reqs, where)
    except Unsatisfiable as exc:
        result.messages += ["dtkguard: cannot lock:", *(f"  {line}" for line in exc.lines)]
        outcome.messages = list(result.messages)
        outcome.summary = "uncacheable" if exc.timed else ""
        return result
    result.messages += [f"dtkguard: warning: {warning}" for warning in res.warnings]
    entries = _entries(res, policy, request.output.parent)
    problems = closure_problems(entries, target.markers)
    if problems:
        raise ClosureError("lock is not closed: " + "; ".join(problems[:5]))
    built = res.provider.builder is not None and res.provider.builder.built
    if request.verify_binaries and not _binaries_ok(res.packages, policy, request.quiet, result):
        outcome.messages = list(result.messages)
        outcome.summary = "uncacheable" if built else ""
        return result
    doc = build_document(
        entries,
        requires_python=target.lock_requires_python(),
        environments=[target.environment_marker()],
        tool=_tool(request, policy, target, reqs, where.index),
    )
    data = write_lock(request.output, doc)
    result.code, result.packages = 0, len(entries)
    outcome.code, outcome.packages, outcome.lock = 0, len(entries), data
    outcome.messages = list(result.messages)
    outcome.summary = "uncacheable" if built else _summary_head(entries, target)
    if not request.quiet:
        result.messages.append(_summary(request.output, entries, target, res, where))
    return result


def _resolve(
    request: LockRequest,
    policy: CompiledPolicy,
    target: TargetEnv,
    reqs: list[Requirement],
    where: _Sources,
) -> Any:
    """The resolution of ``reqs`` (`Unsatisfiable` when the policy cannot meet them)."""
    from dtkguard.errors import InputError
    from dtkguard.resolve.metacache import MetadataCache
    from dtkguard.resolve.progress import showing
    from dtkguard.resolve.resolver import RESOLVE_SECONDS, ResolveOptions, resolve
    from dtkguard.resolve.sdist import builder_for

    given = request.resolve_timeout
    timeout = given if given is not None else RESOLVE_SECONDS
    if not timeout > 0:
        raise InputError("must be a positive number of seconds", field="--resolve-timeout")
    cache = None if request.no_cache else MetadataCache()
    if cache is not None:
        cache.defer()  # written once resolved, not by the warming threads
    builder = builder_for(where.sources, where.fetcher.credentials)
    try:
        with showing(where.fetcher, quiet=request.quiet) as progress:
            options = ResolveOptions(
                pre=request.pre,
                timeout=timeout,
                cache=cache,
                formats=formats_of(request),
                builder=builder,
                progress=progress,
            )
            return resolve(reqs, where.sources, policy, target, options)
    finally:
        if cache is not None:
            cache.flush()


def _entries(res: Any, policy: CompiledPolicy, lock_dir: Path) -> list[Any]:
    from dtkguard.lock.build import entry_for

    return [
        entry_for(
            pkg.link,
            policy,
            lock_dir,
            requires_dist=pkg.requires_dist,
            requires_python=pkg.requires_python,
            dependencies=pkg.dependencies,
        )
        for pkg in res.packages
    ]


def _tool(
    request: LockRequest,
    policy: CompiledPolicy,
    target: TargetEnv,
    reqs: list[Any],
    index: str | None,
) -> dict[str, Any]:
    from dtkguard.lock.tool import tool_table

    return tool_table(policy, target, inputs_of(request, reqs, index), request.note)


def _binaries_ok(packages: Any, policy: CompiledPolicy, quiet: bool, result: LockResult) -> bool:
    """``--verify-binaries``: judge the native code of the locked wheels; False (and say why in
    ``result``) when a finding at ``high`` or above refuses the lock."""
    from dtkguard.findings import Severity
    from dtkguard.lock.binaries import verify_binaries

    findings, read = verify_binaries((pkg.link for pkg in packages), policy)
    blocking = [f for f in findings if f.severity >= Severity.HIGH]
    result.messages += [
        f"dtkguard: warning: {f.message} [{f.rule}]" for f in findings if f not in blocking
    ]
    if blocking:
        result.messages.append("dtkguard: cannot lock: native code of locked wheels")
        result.messages += [
            f"  {f.location}: {f.message} [{f.rule}, {f.severity.value}]" for f in blocking
        ]
        return False
    if not quiet:
        result.messages.append(f"dtkguard: native code of {read} wheels judged: no finding")
    return True


def _summary_head(entries: list[Any], target: TargetEnv) -> str:
    """What was written, for which target."""
    vendor = sum(1 for e in entries if e.tool.get("vendor-build"))
    return (
        f"{len(entries)} packages ({vendor} vendor builds) for "
        f"{target.implementation}{target.shown_version} {target.platforms[0]}"
    )


def _summary(out: Path, entries: list[Any], target: TargetEnv, res: Any, where: _Sources) -> str:
    """The last line: what was written, for which target, and what it cost."""
    builds = res.provider.builder.built if res.provider.builder is not None else 0
    stats, took = where.fetcher.stats, time.perf_counter() - where.started
    return (
        f"wrote {out}: {_summary_head(entries, target)}; "
        f"{res.rounds} resolver rounds, {res.backtracks} backtracks, "
        f"{stats['requests']} requests, {stats['wheels']} wheel downloads, "
        f"{builds} sdist builds, {took:.2f}s"
    )
