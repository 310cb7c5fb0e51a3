"""`dtkguard restore`: put an environment back to its baseline (or a PEP 751 lock).

Prints the plan first (what goes, what comes back, from where, checked how), then does it with
the environment's own pip inside one journalled transaction (rolled back if a step fails) and
ends with a check. Vendor wheels come from the vault (`guard install --vault`), the policy's
vendor sources and --vendor-find-links/--vendor-index-url, then the lock's URLs and paths; each
is hash-checked against the baseline or the lock before it is installed.
Exit 0 the environment matches again, 1 something could not be restored (and why), 2 bad
input, 3 the target cannot be read.
"""

from __future__ import annotations

import argparse

from dtkguard.commands.common import add_policy_option


def register(sub: argparse._SubParsersAction, name: str) -> None:
    parser = sub.add_parser(
        name,
        help="bring an environment back to its baseline or a lock",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_python_target(parser)
    parser.add_argument(
        "--to",
        default="baseline",
        metavar="baseline|LOCK",
        help="the baseline `guard install` recorded (default) or a pylock.toml",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    parser.add_argument(
        "--vendor-find-links",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder or URL of vendor wheels (repeatable)",
    )
    parser.add_argument(
        "--vendor-index-url",
        action="append",
        default=[],
        metavar="URL",
        help="an index of vendor wheels (repeatable)",
    )
    add_policy_option(parser)
    parser.set_defaults(run=run)


def add_python_target(parser: argparse.ArgumentParser) -> None:
    """``[TARGET]`` or ``--python PY``: an interpreter, or an environment folder."""
    parser.add_argument("target", nargs="?", metavar="TARGET", help="interpreter or env folder")
    parser.add_argument("--python", metavar="PY", help="the interpreter (default: the active env)")


def target_python(args: argparse.Namespace) -> str:
    from pathlib import Path

    from dtkguard.errors import InputError, TargetError
    from dtkguard.guard.target import default_python

    if args.target and args.python:
        raise InputError("give TARGET or --python, not both", field="--python")
    given = args.target or args.python
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


def run(args: argparse.Namespace) -> int:
    import sys

    from dtkguard.guard.dtkpip import load_guard_policy
    from dtkguard.guard.target import interpreter
    from dtkguard.recover.restore import restore

    python = target_python(args)
    interp = interpreter(python)
    policy = load_guard_policy(args.policy, interp)
    to = args.to
    wanted_of = _baseline_reader(interp) if to == "baseline" else _lock_reader(to, policy, python)
    return restore(
        python,
        wanted_of,
        policy,
        find_links=list(args.vendor_find_links),
        indexes=list(args.vendor_index_url),
        dry_run=args.dry_run,
        argv=["dtkguard", *sys.argv[1:]] if sys.argv[1:2] == ["restore"] else ["dtkguard restore"],
    )


def _baseline_reader(interp):
    from dtkguard.errors import InputError
    from dtkguard.guard.baseline import baseline_path, load
    from dtkguard.recover.wanted import from_baseline

    path = baseline_path(interp.prefix)
    data = load(path)  # InputError (exit 2) when it is not a baseline
    if data is None:
        raise InputError(
            f"no baseline in {path}: run `dtkguard guard install` while the environment is "
            "right, or restore to a lock with --to pylock.toml",
            field="--to",
        )

    def read(_lay):
        return from_baseline(data, _baseline_lock(data))

    return read


def _baseline_lock(data):
    """The lock the baseline was recorded with, when it is still there and unchanged."""
    from dtkguard.errors import DtkguardError
    from dtkguard.lock.read import read_lock
    from dtkguard.recover.wheels import sha256_of

    info = data.get("lock") or {}
    path = info.get("path")
    if not path:
        return None
    try:
        if sha256_of(path) != info.get("sha256"):
            return None
        return read_lock(path)
    except (OSError, DtkguardError):
        return None


def _lock_reader(path, policy, python):
    from dtkguard.lock.read import read_lock
    from dtkguard.recover.wanted import from_lock

    lock = read_lock(path)

    def read(_lay):
        from dtkguard.env.environment import ask_interpreter

        markers = ask_interpreter(python, _MARKERS, "its marker environment")
        return from_lock(lock, policy, markers)

    return read


_MARKERS = (
    "import json,platform,sys,os;v=sys.version_info;print(json.dumps({"
    "'python_version':'%d.%d'%v[:2],'python_full_version':platform.python_version(),"
    "'implementation_name':sys.implementation.name,'platform_python_implementation':"
    "platform.python_implementation(),'sys_platform':sys.platform,'platform_system':"
    "platform.system(),'platform_machine':platform.machine(),'platform_release':"
    "platform.release(),'platform_version':platform.version(),'os_name':os.name,"
    "'implementation_version':'%d.%d.%d'%sys.implementation.version[:3],'extra':''}))"
)
