"""Options shared by several commands: the target, the policy, the report."""

from __future__ import annotations

from dtkguard.errors import InputError
from dtkguard.findings import Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import TypedDict

    from dtkguard.env.environment import Environment
    from dtkguard.env.open import TargetSpec

    class StackRequest(TypedDict):
        """`stack_request`: the `dtkguard.audit.request.Request` fields it fills."""

        target: TargetSpec
        policy: str | None
        allow_empty: bool
        hy_smi_output: str | None
        expect_devices: bool


def add_target_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("target (default: the active environment)")
    ex = group.add_mutually_exclusive_group()
    ex.add_argument("--python", metavar="PY", help="another interpreter (asked only for sys.path)")
    ex.add_argument(
        "--path",
        metavar="SITE_PACKAGES",
        action="append",
        help="a site-packages folder (repeatable)",
    )
    ex.add_argument("--root", metavar="DIR", help="an image root filesystem (unpacked image)")
    ex.add_argument("--pid", metavar="N", help="a running process, read through /proc/N/root")
    ex.add_argument(
        "--container", metavar="NAME", help="a running container (asks docker or podman its PID)"
    )


def add_allow_empty_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="a target with nothing to read (no distribution, no model file) passes (default: "
        "exit 3, a typo'd path must not pass a gate)",
    )


def add_passthrough(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help: str,
    description: str,
    run: Callable[[argparse.Namespace], int],
) -> None:
    """A command that takes every argument as its own (dtkpip's and dtkuv's), ``--help`` too."""
    import argparse

    parser = sub.add_parser(
        name,
        help=help,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
        prefix_chars="\0",
    )
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    parser.set_defaults(run=run)


def add_stack_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the stack below Python (DTK, driver, cards)")
    group.add_argument(
        "--hy-smi-output",
        metavar="FILE",
        help="recorded hy-smi output to read the cards and driver from (instead of hy-smi)",
    )
    group.add_argument(
        "--expect-devices",
        action="store_true",
        help="the target should use DCUs: report device-unreachable when it cannot",
    )


def add_policy_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy",
        metavar="P",
        help="policy file or bundled name (default: $DTKGUARD_POLICY, "
        "/etc/dtkguard/policy.toml, dtk-25.04.1)",
    )


def add_fail_on_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fail-on",
        default="high",
        metavar="SEV",
        help="exit 1 on findings at or above SEV (critical|high|medium|low|info; default high)",
    )


def add_report_options(parser: argparse.ArgumentParser) -> None:
    from dtkguard.report import FORMATS

    parser.add_argument(
        "--format",
        "-f",
        choices=sorted(FORMATS),
        default="table",
        help="output format (default: table)",
    )
    add_fail_on_option(parser)
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE")


def fail_on(args: argparse.Namespace) -> Severity:
    try:
        return Severity.parse(args.fail_on)
    except ValueError as exc:
        raise InputError(str(exc), field="--fail-on") from None


def target_spec(args: argparse.Namespace) -> TargetSpec:
    """The `TargetSpec` the target options name."""
    from dtkguard.env.open import TargetSpec

    return TargetSpec(
        python=getattr(args, "python", None),
        paths=tuple(getattr(args, "path", None) or ()),
        root=getattr(args, "root", None),
        pid=getattr(args, "pid", None),
        container=getattr(args, "container", None),
    )


def open_target(args: argparse.Namespace) -> Environment:
    """The Environment named by the target options."""
    from dtkguard.env.open import open_target as open_spec

    return open_spec(target_spec(args))


def stack_request(args: argparse.Namespace) -> StackRequest:
    """The `dtkguard.audit.request.Request` fields of the target, policy and stack options."""
    return {
        "target": target_spec(args),
        "policy": args.policy,
        "allow_empty": args.allow_empty,
        "hy_smi_output": args.hy_smi_output,
        "expect_devices": args.expect_devices,
    }


def add_yes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="do not ask before removing or downgrading packages the policy allows (scripts; "
        "without a terminal that question is otherwise refused, exit 2)",
    )


def add_python_target(parser: argparse.ArgumentParser) -> None:
    """``[TARGET]`` or ``--python PY``: an interpreter, or an environment folder."""
    parser.add_argument("target", nargs="?", metavar="TARGET", help="interpreter or env folder")
    parser.add_argument("--python", metavar="PY", help="the interpreter (default: the active env)")


def target_python(args: argparse.Namespace) -> str:
    from pathlib import Path

    from dtkguard.env.interpreter import default_python
    from dtkguard.errors import InputError, TargetError

    if args.target and args.python:
        raise InputError("give TARGET or --python, not both", field="--python")
    given: str | None = args.target or args.python
    if not given:
        return default_python()
    path = Path(given)
    if path.is_dir():
        for candidate in (path / "bin" / "python", path / "bin" / "python3"):
            if candidate.exists():
                return str(candidate)
        raise TargetError(f"{given}: a folder without bin/python")
    if not path.exists():
        raise TargetError(f"no such interpreter: {given}")
    return given
