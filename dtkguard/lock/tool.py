"""A lock's ``[tool.dtkguard]`` table: the policy with its digest, the target, the inputs.

Standard library only (no packaging, no TOML): the resolution cache builds its key from it
before anything else is imported.
"""

from __future__ import annotations

import hashlib
import json
import re

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from typing import Any

_NAME = re.compile(r"pylock\.[^.]+\.toml")


def is_pylock_name(name: str) -> bool:
    """PEP 751's file name: ``pylock.toml`` or ``pylock.NAME.toml`` (NAME without a dot), as
    `packaging.pylock.is_valid_pylock_path` reads it."""
    return name == "pylock.toml" or _NAME.fullmatch(name) is not None


def policy_digest(policy: Any) -> str:
    """sha256 of the compiled policy (without the paths it was read from)."""
    data = dict(policy.to_json())
    data.pop("files", None)
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def tool_table(
    policy: Any, target: Any, inputs: dict[str, Any], note: str | None = None
) -> dict[str, Any]:
    table: dict[str, Any] = {}
    if policy is not None:
        table["policy"] = policy.name
        table["policy-sha256"] = policy_digest(policy)
        if policy.dtk:
            table["dtk"] = policy.dtk
    table["target"] = target.to_dict()
    table["inputs"] = {k: v for k, v in inputs.items() if v not in (None, [], "")}
    if note:
        table["note"] = note
    return table
