"""`dtkguard guard install|status|remove`: guard one interpreter against pip and uv.

install writes the compiled policy, the vendor constraints, the interpreter's site pip.conf
and the pip hook (a .pth line and one module in its site-packages); --uv adds a `uv` shim to the
environment's bin/ (first on PATH when it is active) that runs uv through dtkuv, and uv's
constraint-dependencies and vendor index in the env's own ``<prefix>/uv.toml``, which the shim
makes uv read (``UV_CONFIG_FILE``): no uv outside the environment sees them (a machine-wide
``--uv-config`` is written only when named, and `status` says so); --externally-managed
adds a PEP 668 marker (base and conda interpreters only). install also records the env's
baseline (every dist, and each vendor build's RECORD digest and files; --lock adds the lock's
wheel hashes) and installs the import tripwire. status shows each layer as present, absent or
stale against the policy; remove undoes exactly what install wrote.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from dtkguard.commands.common import add_policy_option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.policy.compiled import CompiledPolicy


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    parser = sub.add_parser(
        name,
        help="install, show or remove the pip/uv guard of an interpreter",
        description="install: guard an interpreter so that plain pip, python -m pip, pip "
        "uninstall (and with --uv, uv) refuse what would clobber its vendor builds. status: "
        "each layer as present, absent or stale. remove: undo exactly what install wrote.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", choices=("install", "status", "remove"))
    parser.add_argument("--python", metavar="PY", help="the interpreter (default: the active env)")
    add_policy_option(parser)
    parser.add_argument(
        "--uv",
        action="store_true",
        help="also guard uv: a `uv` shim in the env's bin/ (runs through dtkuv) and uv's config",
    )
    parser.add_argument(
        "--uv-config",
        metavar="FILE",
        help="the uv.toml to write (default: the environment's own <prefix>/uv.toml, which its "
        "uv shim makes uv read; a machine-wide file such as /etc/uv/uv.toml only when named here)",
    )
    parser.add_argument(
        "--externally-managed",
        action="store_true",
        help="also write a PEP 668 EXTERNALLY-MANAGED marker (not for venvs)",
    )
    parser.add_argument(
        "--lock", metavar="L", help="also record the lock's wheel hashes in the baseline"
    )
    parser.add_argument(
        "--vault",
        action="store_true",
        help="also keep the vendor builds as wheels repacked from the installed files "
        "(RECORD-verified), so `dtkguard restore` works offline",
    )
    parser.add_argument(
        "--rebaseline",
        action="store_true",
        help="record the baseline again (install keeps an intact one)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dtkguard.env.interpreter import interpreter
    from dtkguard.guard import layers, registry
    from dtkguard.guard.hook_policy import load_guard_policy
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known

    interp = interpreter(args.python)
    if args.action == "remove":
        for layer, path, what in layers.remove(interp):
            print(f"{what:>9}  {layer:<18} {path}")
        registry.forget(interp.prefix)
        return 0
    if args.action == "install":
        policy = load_policy(args.policy, known_rule=is_known)
        uv_config = None
        if args.uv or args.uv_config:
            uv_config = Path(args.uv_config) if args.uv_config else layers.env_uv_config(interp)
        lock = None
        if args.lock:
            from dtkguard.lock.read import read_lock

            lock = read_lock(args.lock)
        results = layers.install(
            interp,
            policy,
            uv_config=uv_config,
            externally_managed=args.externally_managed,
            uv_shim_too=uv_config is not None,
            lock=lock,
            rebaseline=args.rebaseline,
        )
        for layer, path, what in results:
            print(f"{what:>9}  {layer:<18} {path}")
        if layers.machine_wide(uv_config, interp):
            print(f"note: {uv_config} is machine-wide: every uv that reads it gets these pins")
        registry.remember(os.path.abspath(interp.python), interp.prefix)
        print(f"guarded: {interp.python} (policy {policy.name})")
        if args.vault:
            from dtkguard.recover.vault import fill

            return fill(interp, policy)
        return 0
    installed = load_guard_policy(None, interp) if args.policy is None else None
    policy = (
        load_policy(args.policy, known_rule=is_known)
        if installed is None
        else _reference(installed)
    )
    rows = layers.status(interp, policy)
    for layer, path, state in rows:
        print(f"{state:>7}  {layer:<18} {path}")
        if layer == "uv" and layers.machine_wide(path, interp):
            print(
                f"   note  uv config {path} is machine-wide: every uv that reads it gets these pins"
            )
    from dtkguard.recover.vault import status_line

    print(status_line(interp.prefix))
    return 0 if all(state == "present" for _, _, state in rows) else 1


def _reference(installed: CompiledPolicy) -> CompiledPolicy:
    """The policy a guard was installed from, re-read from its source file when it still exists
    (so an edited policy shows the guard as stale); else the installed copy itself."""
    from dtkguard.errors import DtkguardError
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known

    if installed.files and Path(installed.files[0]).is_file():
        try:
            return load_policy(installed.files[0], known_rule=is_known)
        except DtkguardError:
            return installed
    return installed
