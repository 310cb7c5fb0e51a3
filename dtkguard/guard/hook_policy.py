"""What the guard derives from a policy: the hook's JSON and pip/uv constraints."""

from __future__ import annotations

import os

from dtkguard.policy.compiled import CompiledPolicy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.env.interpreter import Interpreter


def constraints_lines(policy: CompiledPolicy) -> list[str]:
    """``name==version`` of every vendor build, with its full local label (PEP 440 ``==``
    without the label would also match the community build of the same public version)."""
    return [f"{name}=={version}" for name, version in sorted(policy.vendor.items())]


def constraints_text(policy: CompiledPolicy) -> str:
    head = f"# dtkguard: vendor builds of policy {policy.name}; written by dtkguard, do not edit\n"
    return head + "".join(line + "\n" for line in constraints_lines(policy))


def hook_json(policy: CompiledPolicy) -> str:
    """The compiled policy the pip hook and dtkpip read (``CompiledPolicy.to_json``)."""
    import json

    return json.dumps(policy.to_json(), indent=1, sort_keys=True) + "\n"


def read_policy_json(path: str | os.PathLike[str]) -> CompiledPolicy | None:
    """The compiled policy a guard install left; None when absent or unreadable."""
    try:
        from dtkguard.util.safe_read import read_capped
        from dtkguard.util.text import json_loads

        return CompiledPolicy.from_json(json_loads(read_capped(path, 16 << 20)))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def load_guard_policy(ref: str | None, interp: Interpreter) -> CompiledPolicy:
    """--policy, else the policy `guard install` recorded (the store's copy: the one in the
    env is only the hook's cache, and whoever writes the env can edit it), else the default
    lookup."""
    if ref is None:
        installed = recorded_policy(str(interp.prefix))
        if installed is not None:
            return installed
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known

    return load_policy(ref, known_rule=is_known)


def recorded_policy(prefix: str) -> CompiledPolicy | None:
    """The policy `guard install` recorded for the env at ``prefix``: the store's copy when it
    is a file, else the env's own (``<prefix>/dtkguard/policy.json``); None when that is absent
    or unreadable. Paths as text: dtkuv's satisfied answer reads it without pathlib."""
    import stat

    from dtkguard.env.interpreter import STATE_DIR
    from dtkguard.env.store_path import POLICY_FILE, env_dir_text
    from dtkguard.util.purepath import path_mode

    stored = os.path.join(env_dir_text(prefix), POLICY_FILE)
    mode = path_mode(stored)
    if mode is None or not stat.S_ISREG(mode):
        stored = os.path.join(prefix, STATE_DIR, POLICY_FILE)  # `Interpreter.policy_file`
    return read_policy_json(stored)
