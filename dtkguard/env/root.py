"""Paths confined to a root: an unpacked image, /proc/PID/root, or the host.

Inside a root every path, symlinks included, resolves inside it: a link to ``/etc`` means
``ROOT/etc`` and ``..`` stops at ROOT. This is the resolution the kernel would do after a chroot,
done by hand because the target is not our mount namespace (syft#3396).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
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

    def walk(
        self, start: str, depth: int, prune: tuple[str, ...] = (), leaf: str | None = None
    ) -> Iterator[str]:
        """Inner paths of the directories under ``start`` (itself first), ``depth`` levels deep;
        folders named in ``prune`` are skipped, and one holding a regular file named ``leaf``
        is yielded but not entered.

        ``start`` is resolved inside the root and no symlink below it is followed or even
        stat'ed through (``lstat`` only): a link to ``/usr`` is a name, not a directory.
        """
        try:
            top = self.resolve(start)
        except ConfinementError:
            return
        if not top.is_dir():
            return
        stack = [(self.inner(top), 0)]
        while stack:
            inner, level = stack.pop()
            yield inner
            host = self.path.joinpath(inner.lstrip("/"))
            if level >= depth or (leaf and is_regular(host / leaf)):
                continue
            try:
                with os.scandir(host) as it:
                    entries = [e for e in it if e.is_dir(follow_symlinks=False)]
            except OSError:
                continue
            subdirs = [e.name for e in entries if e.name not in prune]
            stack += [(os.path.join(inner, n), level + 1) for n in sorted(subdirs, reverse=True)]

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


def read_capped(path: str | os.PathLike[str], limit: int) -> bytes:
    """The first ``limit`` bytes of a regular file of a target, a final symlink not followed
    (`dtkguard.util.safe_read.read_head`; kept for the callers that import it from here)."""
    from dtkguard.util.safe_read import read_head

    return read_head(path, limit, follow=False)


def is_regular(path: Path) -> bool:
    """A regular file, by ``lstat``: a symlink is never followed to find out."""
    import stat

    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def child(root: Root, directory: Path, name: str) -> Path:
    """``directory/name`` with a final symlink resolved inside ``root``."""
    path = directory / name
    if not root.is_host and path.is_symlink():
        return root.resolve(root.inner(path))
    return path
