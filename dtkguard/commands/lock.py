"""`dtkguard lock`: resolve under the policy and write a PEP 751 ``pylock.<image>.toml``.

Exit codes: 0 written; 1 the request cannot be met under the policy (the conflict is explained,
nothing is written); 2 bad input (requirement, file, source, argument); 3 unreadable target.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dtkguard.commands.common import add_policy_option, add_target_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from dtkguard.lock.make import LockRequest


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
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

    def __init__(
        self, option_strings: Sequence[str], dest: str, const: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, nargs=None, const=const, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
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


def request_of(args: argparse.Namespace) -> LockRequest:
    """The `LockRequest` the options name."""
    from dtkguard.commands.common import target_spec
    from dtkguard.lock.make import LockRequest

    return LockRequest(
        output=Path(args.output),
        requirements=list(args.requirements),
        requirement_files=list(args.requirement),
        policy=args.policy,
        find_links=list(args.find_links),
        vendor_find_links=list(args.vendor_find_links),
        vendor_index_urls=list(args.vendor_index_url),
        index_url=args.index_url,
        extra_index_urls=list(args.extra_index_url),
        no_index=args.no_index,
        pre=args.pre,
        formats=list(args.formats),
        no_cache=args.no_cache,
        resolve_timeout=args.resolve_timeout,
        python_version=args.python_version,
        platforms=args.platform,
        from_env=args.from_env,
        target=target_spec(args),
        verify_binaries=args.verify_binaries,
        note=args.note,
        quiet=args.quiet,
    )


def run(args: argparse.Namespace) -> int:
    from dtkguard.lock.make import lock

    result = lock(request_of(args))
    for line in result.messages:
        print(line, file=sys.stderr)
    return result.code
