"""A private scratch folder for one command (constraints and reports handed to pip or uv),
made without `tempfile`, whose imports (``shutil``, ``random``, ``weakref``) would be a third of
a satisfied ``dtkuv pip install``'s own start-up."""

from __future__ import annotations

import contextlib
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


def _base() -> str | None:
    """The folder `tempfile` would use first: ``$TMPDIR``, ``$TEMP``, ``$TMP``, ``/tmp``."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = os.environ.get(name)
        if value and os.path.isdir(value):
            return value
    return "/tmp" if os.path.isdir("/tmp") else None


def _make(prefix: str) -> str:
    base = _base()
    if base is not None:
        for _ in range(16):
            path = os.path.join(base, f"{prefix}{os.urandom(6).hex()}")
            try:
                os.mkdir(path, 0o700)
                return path
            except FileExistsError:
                continue
            except OSError:
                break
    import tempfile  # an unusual place: let tempfile find one (and say why not)

    return tempfile.mkdtemp(prefix=prefix)


def _remove_tree(path: str) -> None:
    """Remove ``path`` and all below it; links are removed, never followed."""
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(root, name))
        for name in dirs:
            sub = os.path.join(root, name)
            with contextlib.suppress(OSError):
                os.unlink(sub) if os.path.islink(sub) else os.rmdir(sub)
    with contextlib.suppress(OSError):
        os.rmdir(path)


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[str]:
    """A new folder only this user can enter (mode 0700), removed with all it holds after."""
    path = _make(prefix)
    try:
        yield path
    finally:
        _remove_tree(path)
