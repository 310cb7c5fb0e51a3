"""The interpreter the guard protects: where its prefix, site-packages and stdlib are."""

from __future__ import annotations

import sys

from dtkguard.lightclass import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

#: the fields :func:`interpreter` asks for, in this order
_FIELDS = ("prefix", "base_prefix", "purelib", "stdlib", "scripts", "version", "platlib")
_CODE = (
    "import sysconfig as c;g=c.get_path;put([sys.prefix,sys.base_prefix,g('purelib'),"
    "g('stdlib'),g('scripts') or '','%d.%d'%sys.version_info[:2],g('platlib') or ''])"
)

#: where the guard keeps its files inside an interpreter's prefix
STATE_DIR = "dtkguard"


@record(frozen=True)
class Interpreter:
    python: str
    prefix: Path
    base_prefix: Path
    purelib: Path
    stdlib: Path
    version: str
    #: where console scripts go (``<prefix>/bin``): the place of the `uv` shim
    scripts: Path | None = None
    #: where binary dists go (the same folder as purelib in most envs)
    platlib: Path | None = None

    @property
    def in_venv(self) -> bool:
        return self.prefix != self.base_prefix

    @property
    def state_dir(self) -> Path:
        return self.prefix / STATE_DIR

    @property
    def policy_file(self) -> Path:
        """The compiled policy the pip hook reads: a cache of the store's copy."""
        from dtkguard.env.store_path import POLICY_FILE

        return self.state_dir / POLICY_FILE

    @property
    def legacy_overrides_file(self) -> Path:
        """Where the override log was before the store (read by `check`, moved by install)."""
        from dtkguard.env.store_path import OVERRIDES_FILE

        return self.state_dir / OVERRIDES_FILE


def default_python() -> str:
    """The activated venv/conda env's interpreter, else the one running dtkguard."""
    from dtkguard.env.environment import active_python

    return active_python() or sys.executable


def interpreter(python: str | None = None) -> Interpreter:
    """Ask ``python`` (default: the active one) for its prefix and paths; nothing else runs."""
    from pathlib import Path

    exe = python or default_python()
    data = interpreter_fields(exe)
    return Interpreter(
        python=exe,
        prefix=Path(data["prefix"]),
        base_prefix=Path(data["base_prefix"]),
        purelib=Path(data["purelib"]),
        stdlib=Path(data["stdlib"]),
        version=data["version"],
        scripts=Path(data["scripts"]) if data.get("scripts") else None,
        platlib=Path(data["platlib"]) if data.get("platlib") else None,
    )


def interpreter_fields(exe: str) -> dict[str, str]:
    """What `interpreter` builds its `Interpreter` from, as the interpreter said it (the
    interpreter cache's strings: no pathlib)."""
    from dtkguard.env.interp_cache import cached

    def ask() -> list[str]:  # a cache miss only: the environment readers are not imported else
        from dtkguard.env.environment import ask_interpreter_fields

        return ask_interpreter_fields(exe, _CODE, "its paths")

    values = cached(exe, ask, "paths")
    if len(values) != len(_FIELDS):
        from dtkguard.errors import TargetError

        raise TargetError(f"{exe} did not report its paths: {len(values)} values")
    return dict(zip(_FIELDS, values, strict=True))
