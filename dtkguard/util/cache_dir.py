"""Where dtkguard keeps caches: ``$DTKGUARD_CACHE_DIR``, else ``$XDG_CACHE_HOME/dtkguard``,
else ``~/.cache/dtkguard``. One function, so every cache agrees."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def cache_root() -> Path:
    from pathlib import Path

    return Path(cache_root_text())


def cache_root_text() -> str:
    """`cache_root` as text (``str(cache_root())``), without importing pathlib."""
    from dtkguard.util.purepath import home, pure_path

    override = os.environ.get("DTKGUARD_CACHE_DIR")
    if override:
        return pure_path(override)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home(), ".cache")
    return pure_path(os.path.join(pure_path(base), "dtkguard"))


def private_dir(path: Path) -> None:
    """`private_dir_text` of a `Path`."""
    private_dir_text(str(path))


def private_dir_text(path: str) -> None:
    """Make the cache folder ``path`` (and the cache root) mode 0700 whatever the umask: an
    entry another user could write would be believed (a compiled policy, an interpreter's
    paths). A folder that is there already keeps its mode: one others could write is not
    believed (`trusted`), and setting it 0700 now would not make what is in it ours."""
    from dtkguard.util.purepath import is_dir, parent

    missing = []
    head = path
    while not is_dir(head) and head != parent(head):
        missing.append(head)
        head = parent(head)
    os.makedirs(path, 0o700, exist_ok=True)
    for folder in missing:
        os.chmod(folder, 0o700)  # makedirs' parents follow the umask


def trusted(path: Path) -> bool:
    """May entries in the cache folder ``path`` be believed (it and its parent are ours and
    writable by no one else)? A missing folder is (nothing to read)."""
    return trusted_text(str(path))


def trusted_text(path: str) -> bool:
    """`trusted` of a folder named as text (``str(Path)``: no trailing slash)."""
    from dtkguard.util.trust import untrusted

    parent = os.path.dirname(path) or "."
    return all(untrusted(p, os.geteuid()) is None for p in (path, parent))
