"""Files the guard trusts must be writable by their owner only: under ``umask 000`` a folder
made with the default mode is 0777, and any local user could replace the policy the pip hook
obeys. The guard makes its files and folders with explicit modes (`make_dir`, `FILE_MODE`)
and refuses state another user could have written (`untrusted`; the pip hook has its own
standard-library copy)."""

from __future__ import annotations

import os
import stat

#: the guard's files in an environment: the owner writes, everyone reads (pip runs as others)
FILE_MODE = 0o644
DIR_MODE = 0o755


def make_dir(path: str | os.PathLike[str], mode: int = DIR_MODE) -> None:
    """``mkdir -p`` with ``mode`` whatever the umask; a folder of ours that is writable by
    group or others already is set to ``mode`` too."""
    path = os.fspath(path)
    missing = []
    head = path
    while head and not os.path.isdir(head):
        missing.append(head)
        head = os.path.dirname(head)
    os.makedirs(path, mode=mode, exist_ok=True)
    for folder in [*missing, path]:
        try:
            st = os.lstat(folder)
        except OSError:
            continue
        if folder in missing or (st.st_uid == os.geteuid() and st.st_mode & 0o022):
            os.chmod(folder, mode)


def untrusted(path: str | os.PathLike[str], owner: int) -> str | None:
    """Why ``path`` (a file or folder the guard reads) could have been written by someone
    other than ``owner`` (the environment's owner) or root: None when it could not."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if st.st_uid not in (owner, 0):
        return f"owned by uid {st.st_uid}, not the environment's owner (uid {owner})"
    if st.st_mode & 0o002 and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
        return f"writable by everyone (mode {stat.S_IMODE(st.st_mode):o})"
    if st.st_mode & 0o020:
        return f"writable by its group (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def env_owner(prefix: str | os.PathLike[str]) -> int:
    """The uid that owns an environment (its prefix folder); root's when it cannot be read."""
    try:
        return os.stat(prefix).st_uid
    except OSError:
        return 0
