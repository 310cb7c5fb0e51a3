"""What the guard derives from a policy: the hook's JSON and pip/uv constraints."""

from __future__ import annotations

from dtkguard.policy.compiled import CompiledPolicy

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os

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
        from dtkguard.env.store import env_store

        es = env_store(interp.prefix)
        installed = read_policy_json(es.policy if es.policy.is_file() else interp.policy_file)
        if installed is not None:
            return installed
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known

    return load_policy(ref, known_rule=is_known)
