"""`dtkguard lock`: resolve under the policy and write a PEP 751 ``pylock.<image>.toml``.

Exit codes: 0 written; 1 the request cannot be met under the policy (the conflict is explained,
nothing is written); 2 bad input (requirement, file, source, argument); 3 unreadable target.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from dtkguard.commands.common import add_policy_option, add_target_options


def register(sub: argparse._SubParsersAction, name: str) -> None:
    """The `lock` subcommand, its options group by group."""
    p = sub.add_parser(
        name,
        help="resolve under the policy and write a PEP 751 lock",
        description="Resolve requirements under the policy (vendor builds only from vendor "
        "sources, denied packages never) and write a PEP 751 pylock.NAME.toml that pip and uv "
        "install unmodified. Exit 0 written; 1 the request cannot be met under the policy (the "
        "conflict is explained, nothing is written); 2 bad input; 3 unreadable target.",
    )
    _add_request_options(p)
    add_policy_option(p)
    _add_source_options(p)
    _add_resolver_options(p)
    _add_image_options(p)
    _add_output_options(p)
    p.set_defaults(run=run)


def _add_request_options(p: argparse.ArgumentParser) -> None:
    """What to lock: requirements, given or in files."""
    p.add_argument("requirements", nargs="*", metavar="REQ", help="requirements (PEP 508)")
    p.add_argument(
        "-r",
        "--requirement",
        action="append",
        default=[],
        metavar="FILE",
        help="requirements file (repeatable)",
    )


def _add_source_options(p: argparse.ArgumentParser) -> None:
    """Where distributions come from: public and vendor wheelhouses and indexes."""
    p.add_argument(
        "--find-links",
        action="append",
        default=[],
        metavar="DIR",
        help="a public folder of wheels, before the index (repeatable)",
    )
    p.add_argument(
        "--vendor-find-links",
        action="append",
        default=[],
        metavar="DIR",
        help="a vendor wheelhouse, besides the policy's (repeatable)",
    )
    p.add_argument(
        "--vendor-index-url",
        action="append",
        default=[],
        metavar="URL",
        help="a vendor simple index, besides the policy's (repeatable)",
    )
    p.add_argument(
        "--index-url", metavar="URL", help="the public index (default: pip's configured index-url)"
    )
    p.add_argument("--extra-index-url", action="append", default=[], metavar="URL")
    p.add_argument("--no-index", action="store_true", help="no public index")


def _add_resolver_options(p: argparse.ArgumentParser) -> None:
    """How the resolver works: pre-releases, the metadata cache, a time limit."""
    p.add_argument(
        "--pre",
        action="store_true",
        help="consider pre-releases and dev releases (default: only when a specifier names "
        "one or nothing else satisfies)",
    )
    for flag, kind, what in (
        ("--only-binary", "only", "never an sdist for these projects"),
        ("--no-binary", "no", "never a wheel for these projects"),
    ):
        p.add_argument(
            flag,
            action=_FormatAction,
            dest="formats",
            const=kind,
            default=[],
            metavar="NAMES",
            help=f"{what} (comma-separated, :all: or :none:, pip's meaning; repeatable)",
        )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the metadata cache ($DTKGUARD_CACHE_DIR, else "
        "$XDG_CACHE_HOME/dtkguard)",
    )
    p.add_argument(
        "--resolve-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="give up (exit 1, naming the projects that clashed most) after this long "
        "(default: 60)",
    )


class _FormatAction(argparse.Action):
    """``--only-binary``/``--no-binary`` into one list, in command-line order (pip's rules
    depend on it)."""

    def __init__(self, option_strings, dest, const=None, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=None, const=const, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        given = [*getattr(namespace, self.dest, []), (self.const, values)]
        setattr(namespace, self.dest, given)


def _add_image_options(p: argparse.ArgumentParser) -> None:
    """What the lock is for: the image's Python and platforms, or the installed set of a TARGET."""
    p.add_argument(
        "--python-version",
        metavar="X.Y[.Z]",
        help="target Python, e.g. 3.10 or 3.10.12 (default: policy)",
    )
    p.add_argument(
        "--platform",
        action="append",
        metavar="TAG",
        help="target platform tag, e.g. manylinux_2_35_x86_64 (default: policy)",
    )
    p.add_argument(
        "--from-env",
        action="store_true",
        help="lock the installed set of TARGET instead of resolving",
    )
    add_target_options(p)


def _add_output_options(p: argparse.ArgumentParser) -> None:
    """Where the lock goes and what is said."""
    p.add_argument(
        "--verify-binaries",
        action="store_true",
        help="read the native code of the locked wheels and refuse CUDA builds (cuda-binary)",
    )
    p.add_argument("--note", help="free text recorded under [tool.dtkguard]")
    p.add_argument("-o", "--output", required=True, metavar="pylock.NAME.toml")
    p.add_argument("-q", "--quiet", action="store_true")


def _sources(args: argparse.Namespace, policy, fetcher):
    from dtkguard.resolve.auth import redact
    from dtkguard.resolve.indexes import default_index_credentials, default_index_url
    from dtkguard.resolve.resolver import build_sources

    index = args.index_url
    if index is None and not args.no_index:
        index, origin = default_index_url(args.python)
        if origin.startswith("$UV_DEFAULT_INDEX"):
            fetcher.credentials.add(index.split("=", 1)[-1], default_index_credentials())
        if not args.quiet:
            print(f"dtkguard: public index (from {origin}): {redact(index)}", file=sys.stderr)
    sources = build_sources(
        policy,
        fetcher,
        vendor_find_links=args.vendor_find_links,
        vendor_indexes=args.vendor_index_url,
        find_links=args.find_links,
        index_url=index,
        extra_index_urls=[] if args.no_index else args.extra_index_url,
        env_extras=not args.no_index and not args.extra_index_url,
    )
    return sources, None if index is None else fetcher.credentials.add(index)


def _inputs(args: argparse.Namespace, reqs, index) -> dict:
    """What the lock was made from, as given, credentials taken out of every URL."""
    from dtkguard.resolve.auth import split_userinfo

    def clean(urls) -> list[str]:
        return [split_userinfo(u)[0] for u in urls]

    return {
        "requirements": [str(r) for r in reqs],
        "requirement-files": list(args.requirement),
        "vendor-find-links": list(args.vendor_find_links),
        "vendor-indexes": clean(args.vendor_index_url),
        "find-links": list(args.find_links),
        "index-url": index or "none",
        "extra-index-urls": [] if args.no_index else clean(args.extra_index_url),
        "from-env": bool(args.from_env),
        **({"pre": True} if getattr(args, "pre", False) else {}),
        **_formats(args).to_inputs(),
    }


def _formats(args: argparse.Namespace):
    from dtkguard.resolve.binary import FormatControl

    return FormatControl.from_options(getattr(args, "formats", []))


def run(args: argparse.Namespace) -> int:
    from dtkguard.errors import InputError
    from dtkguard.lock.requirements import from_command_line, from_files
    from dtkguard.lock.write import require_pylock
    from dtkguard.policy.load import load_policy
    from dtkguard.resolve.http import Fetcher
    from dtkguard.resolve.target import target_from
    from dtkguard.rules.catalog import is_known

    started = time.perf_counter()
    policy = load_policy(args.policy, known_rule=is_known)
    target = target_from(policy, args.python_version, args.platform)
    out = Path(args.output)
    if not out.parent.is_dir():
        raise InputError("output folder does not exist", str(out.parent), field="-o")
    if not require_pylock().is_valid_pylock_path(out):
        raise InputError(
            "a PEP 751 lock must be named pylock.toml or pylock.NAME.toml", str(out), field="-o"
        )
    reqs = from_command_line(args.requirements) + from_files(args.requirement)
    if args.from_env:
        if reqs:
            raise InputError("--from-env takes no requirements", field="REQ")
        return _lock_from_env(args, policy, target, out)
    if not reqs:
        raise InputError("nothing to lock: give requirements or -r FILE", field="REQ")
    fetcher = Fetcher()
    try:
        sources, index = _sources(args, policy, fetcher)
        return _lock(args, policy, target, out, reqs, sources, index, fetcher, started)
    finally:
        fetcher.close()


def _lock_from_env(args: argparse.Namespace, policy, target, out: Path) -> int:
    from dtkguard.commands.common import open_target
    from dtkguard.lock.from_env import installed_document, lock_installed, target_of_env
    from dtkguard.lock.write import write_lock
    from dtkguard.resolve.http import Fetcher

    env = open_target(args)
    if not args.python_version:
        own = target_of_env(env, target)
        if own is None:
            print(
                f"dtkguard: warning: cannot tell the Python version of the target; locking for "
                f"Python {target.python} (the policy's), pass --python-version to choose",
                file=sys.stderr,
            )
        target = own or target
    fetcher = Fetcher()
    try:
        sources, index = _sources(args, policy, fetcher)
        found = lock_installed(env, sources, policy, target, out.parent)
    finally:
        fetcher.close()
    inputs = _inputs(args, [], index)
    write_lock(out, installed_document(env, found, policy, target, inputs, args.note))
    if not args.quiet:
        print(
            f"wrote {out}: {len(found.entries)} packages matched to wheels by RECORD, "
            f"{len(found.installed)} recorded as installed-only",
            file=sys.stderr,
        )
        for problem in found.problems[:10]:
            print(f"dtkguard: warning: {problem}", file=sys.stderr)
    return 0


def _binaries_ok(packages, policy, quiet: bool) -> bool:
    """``--verify-binaries``: judge the native code of the locked wheels; False (and say
    why) when a finding at ``high`` or above refuses the lock."""
    from dtkguard.findings import Severity
    from dtkguard.lock.binaries import verify_binaries

    findings, read = verify_binaries((pkg.link for pkg in packages), policy)
    blocking = [f for f in findings if f.severity >= Severity.HIGH]
    for f in findings:
        if f not in blocking:
            print(f"dtkguard: warning: {f.message} [{f.rule}]", file=sys.stderr)
    if blocking:
        print("dtkguard: cannot lock: native code of locked wheels", file=sys.stderr)
        for f in blocking:
            print(f"  {f.location}: {f.message} [{f.rule}, {f.severity.value}]", file=sys.stderr)
        return False
    if not quiet:
        print(f"dtkguard: native code of {read} wheels judged: no finding", file=sys.stderr)
    return True


def _lock(args, policy, target, out, reqs, sources, index, fetcher, started) -> int:
    from dtkguard.errors import InputError
    from dtkguard.lock.build import entry_for, tool_table
    from dtkguard.lock.write import ClosureError, build_document, closure_problems, write_lock
    from dtkguard.resolve.metacache import MetadataCache
    from dtkguard.resolve.progress import showing
    from dtkguard.resolve.resolver import RESOLVE_SECONDS, Unsatisfiable, resolve
    from dtkguard.resolve.sdist import builder_for

    timeout = args.resolve_timeout if args.resolve_timeout is not None else RESOLVE_SECONDS
    if not timeout > 0:
        raise InputError("must be a positive number of seconds", field="--resolve-timeout")
    try:
        cache = None if args.no_cache else MetadataCache()
        builder = builder_for(sources, fetcher.credentials)
        with showing(fetcher, quiet=args.quiet) as progress:
            res = resolve(reqs, sources, policy, target, pre=args.pre, timeout=timeout,
                          cache=cache, formats=_formats(args), builder=builder,
                          progress=progress)  # fmt: skip
    except Unsatisfiable as exc:
        print("dtkguard: cannot lock:", file=sys.stderr)
        for line in exc.lines:
            print(f"  {line}", file=sys.stderr)
        return 1
    for warning in res.warnings:
        print(f"dtkguard: warning: {warning}", file=sys.stderr)
    entries = []
    for pkg in res.packages:
        entries.append(
            entry_for(
                pkg.link,
                policy,
                out.parent,
                requires_dist=pkg.requires_dist,
                requires_python=pkg.requires_python,
                dependencies=pkg.dependencies,
            )
        )
    problems = closure_problems(entries, target.markers)
    if problems:
        raise ClosureError("lock is not closed: " + "; ".join(problems[:5]))
    if args.verify_binaries and not _binaries_ok(res.packages, policy, args.quiet):
        return 1
    doc = build_document(
        entries,
        requires_python=target.lock_requires_python(),
        environments=[target.environment_marker()],
        tool=tool_table(policy, target, _inputs(args, reqs, index), args.note),
    )
    write_lock(out, doc)
    if not args.quiet:
        _summary(out, entries, target, res, fetcher, time.perf_counter() - started)
    return 0


def _summary(out: Path, entries, target, res, fetcher, took: float) -> None:
    """The last line: what was written, for which target, and what it cost."""
    vendor = sum(1 for e in entries if e.tool.get("vendor-build"))
    builds = res.provider.builder.built if res.provider.builder is not None else 0
    print(
        f"wrote {out}: {len(entries)} packages ({vendor} vendor builds) for "
        f"{target.implementation}{target.shown_version} {target.platforms[0]}; "
        f"{res.rounds} resolver rounds, {res.backtracks} backtracks, "
        f"{fetcher.stats['requests']} requests, {fetcher.stats['wheels']} wheel downloads, "
        f"{builds} sdist builds, {took:.2f}s",
        file=sys.stderr,
    )
