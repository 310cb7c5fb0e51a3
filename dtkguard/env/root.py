"""Paths confined to a root: an unpacked image, /proc/PID/root, or the host.

Inside a root every path, symlinks included, resolves inside it: a link to ``/etc`` means
``ROOT/etc`` and ``..`` stops at ROOT. This is the resolution the kernel would do after a chroot,
done by hand because the target is not our mount namespace (syft#3396).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

MAX_LINKS = 40


class ConfinementError(OSError):
    """A path could not be resolved inside the root (symlink loop, too many links)."""


class Root:
    """A filesystem root; ``Root("/")`` is the host and resolves with the OS."""

    def __init__(self, path: str | os.PathLike[str] = "/") -> None:
        self.path = Path(os.path.abspath(path))
        self.is_host = str(self.path) == "/"

    def __repr__(self) -> str:
        return f"Root({str(self.path)!r})"

    def resolve(self, inner: str | os.PathLike[str]) -> Path:
        """The host path of ``inner`` (a path as the target sees it), resolved inside the root."""
        if self.is_host:
            return Path(os.path.realpath(inner))
        parts = list(PurePosixPath("/", inner).parts[1:])
        done: list[str] = []
        links = 0
        while parts:
            part = parts.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            host = os.path.join(self.path, *done, part)
            try:
                target = os.readlink(host)
            except OSError:  # not a link (or missing): keep the name
                done.append(part)
                continue
            links += 1
            if links > MAX_LINKS:
                raise ConfinementError(f"too many levels of symbolic links: {inner}")
            target_parts = list(PurePosixPath(target).parts)
            if target.startswith("/"):
                done = []
                target_parts = target_parts[1:]
            parts = target_parts + parts
        return self.path.joinpath(*done)

    def glob(self, pattern: str) -> list[str]:
        """Inner paths matching a relative glob, every directory resolved inside the root."""
        import fnmatch

        current = ["/"]
        for part in PurePosixPath(pattern).parts:
            nxt: list[str] = []
            for inner in current:
                if not any(c in part for c in "*?["):
                    nxt.append(os.path.join(inner, part))
                    continue
                try:
                    names = sorted(os.listdir(self.resolve(inner)))
                except (OSError, ConfinementError):
                    continue
                nxt += [os.path.join(inner, n) for n in names if fnmatch.fnmatchcase(n, part)]
            current = nxt
        return current

    def inner(self, host: str | os.PathLike[str]) -> str:
        """The path as the target sees it, for reports."""
        host = os.fspath(host)
        if self.is_host:
            return host
        rel = os.path.relpath(host, self.path)
        return "/" if rel == "." else "/" + rel

    def contains(self, host: str | os.PathLike[str]) -> bool:
        """True when a host path lies inside the root (lexically)."""
        host = os.path.normpath(os.fspath(host))
        return self.is_host or host == str(self.path) or host.startswith(str(self.path) + os.sep)


def child(root: Root, directory: Path, name: str) -> Path:
    """``directory/name`` with a final symlink resolved inside ``root``."""
    path = directory / name
    if not root.is_host and path.is_symlink():
        return root.resolve(root.inner(path))
    return path
