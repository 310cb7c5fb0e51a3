"""The bundled policies, shipped compiled: ``NAME.compiled.json`` beside ``NAME.toml``.

A fresh cache would otherwise compile the bundled default with pydantic and tomlkit on a
user's first command (about half a second). The shipped form is used only when the TOML beside
it still has the bytes it was compiled from (their sha256) and every file of its ``extends``
chain is a bundled file with the bytes recorded; anything else compiles as usual.
`tests/policy/test_precompiled.py` fails when a shipped form differs from what this code
compiles; ``python -m tests.policy.test_precompiled`` writes them again.
"""

from __future__ import annotations

import os

from dtkguard.policy.compiled import CompiledPolicy
from dtkguard.policy.locate import MAX_POLICY_BYTES, bundled_dir_text
from dtkguard.util.sha import sha256_hex
from dtkguard.util.text import dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from dtkguard.policy.compile import KnownRule

SUFFIX = ".compiled.json"
FORMAT = "dtkguard-precompiled-policy-1"


def shipped_file(path: Path) -> Path:
    """Where the compiled form of the bundled policy ``path`` is shipped."""
    from pathlib import Path

    return Path(shipped_text(str(path)))


def shipped_text(path: str) -> str:
    """`shipped_file` of a policy named as text: beside it, its stem and `SUFFIX`."""
    from dtkguard.util import purepath

    return purepath.join(purepath.parent(path), purepath.stem(path) + SUFFIX)


def read_shipped(path: str | os.PathLike[str]) -> CompiledPolicy | None:
    """The shipped compiled form of ``path`` (resolved) when it is a bundled policy whose
    files have the bytes it was compiled from; None otherwise (then it is compiled)."""
    from dtkguard.util import purepath
    from dtkguard.util.safe_read import read_capped
    from dtkguard.util.text import json_loads

    path = purepath.pure_path(os.fspath(path))
    try:
        home = purepath.resolve(bundled_dir_text())
        if purepath.parent(path) != home:
            return None
        data = json_loads(read_capped(shipped_text(path), MAX_POLICY_BYTES << 2))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        files = data.get("files")
        if not isinstance(files, list) or not files or files[0][0] != purepath.name(path):
            return None
        names = []
        for name, digest in files:
            if not isinstance(name, str) or "/" in name or name.startswith("."):
                return None
            raw = read_capped(purepath.join(home, name), MAX_POLICY_BYTES, what="policy")
            if sha256_hex(raw) != digest:
                return None
            names.append(purepath.join(home, name))
        policy = dict(data["policy"])
        policy["files"] = names
        return CompiledPolicy.from_json(policy)
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return None


def render(path: Path, known_rule: KnownRule) -> str:
    """The shipped form of the bundled policy ``path``, as this code compiles it."""
    from pathlib import Path

    from dtkguard.policy.compile import compile_with_sources

    policy, sources = compile_with_sources(path.resolve(), known_rule)
    home = path.resolve().parent
    files = [[str(Path(f).relative_to(home)), digest] for f, digest in sources]
    body = policy.to_json()
    body["files"] = [name for name, _ in files]
    data = {"format": FORMAT, "files": files, "policy": body}
    return dumps(data, indent=1, sort_keys=True) + "\n"
