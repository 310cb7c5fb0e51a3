"""Paths confined to a root: an unpacked image, /proc/PID/root, or the host.

Inside a root every path, symlinks included, resolves inside it: a link to ``/etc`` means
``ROOT/etc`` and ``..`` stops at ROOT. This is the resolution the kernel would do after a chroot,
done by hand because the target is not our mount namespace (syft#3396).

`Root.resolve` names a file (a host path, for reports and as a key); every read, listing and
stat of a root that is not the host goes through `open_in` instead, which resolves the path
again, confined, while it opens it: ``openat2`` with ``RESOLVE_IN_ROOT`` where the kernel has
it, else one ``openat`` per component relative to the directory opened before it, no symlink
followed by the kernel. A directory swapped for a link to the host between the two
resolutions cannot lead outside the root: the link is resolved inside it like any other.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

MAX_LINKS = 40
_O_PATH = getattr(os, "O_PATH", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
#: openat2(2): its number is the same on every Linux architecture; the resolve flags
_SYS_OPENAT2 = 437
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_IN_ROOT = 0x10
#: whether openat2 works here: None until first tried
_openat2_works: bool | None = None


class ConfinementError(OSError):
    """A path could not be resolved inside the root (symlink loop, too many links)."""


class Root:
    """A filesystem root; ``Root("/")`` is the host and resolves with the OS."""

    def __init__(self, path: str | os.PathLike[str] = "/") -> None:
        from dtkguard.util.purepath import pure_path

        #: the root's host path as text (``str(self.path)``)
        self.top = pure_path(os.path.abspath(path))
        self.is_host = self.top == "/"

    @property
    def path(self) -> Path:
        """The root's host path."""
        from pathlib import Path

        return Path(self.top)

    def __repr__(self) -> str:
        return f"Root({self.top!r})"

    def resolve(self, inner: str | os.PathLike[str]) -> Path:
        """The host path of ``inner`` (a path as the target sees it), resolved inside the root."""
        from pathlib import Path

        return Path(self.resolve_text(inner))

    def resolve_text(self, inner: str | os.PathLike[str]) -> str:
        """`resolve` as text (``str(self.resolve(inner))``), without importing pathlib."""
        from dtkguard.util.purepath import pure_path

        if self.is_host:
            return pure_path(os.path.realpath(inner))
        from pathlib import PurePosixPath

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
            host = os.path.join(self.top, *done, part)
            try:
                target = self.readlink(host)
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
        return os.path.join(self.top, *done)

    def glob(self, pattern: str) -> list[str]:
        """Inner paths matching a relative glob, every directory resolved inside the root."""
        from dtkguard.util.purepath import name_matches, parts

        current = ["/"]
        for part in parts(pattern):
            nxt: list[str] = []
            for inner in current:
                if not any(c in part for c in "*?["):
                    nxt.append(os.path.join(inner, part))
                    continue
                try:
                    names = sorted(self.listdir(self.resolve_text(inner)))
                except (OSError, ConfinementError):
                    continue
                nxt += [os.path.join(inner, n) for n in names if name_matches(n, part)]
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
        if not self.is_dir(top):
            return
        stack = [(self.inner(top), 0)]
        while stack:
            inner, level = stack.pop()
            yield inner
            host = self.path.joinpath(inner.lstrip("/"))
            if level >= depth or (leaf and self.is_regular(host / leaf)):
                continue
            try:
                subdirs = [n for n in self.subdirs(host) if n not in prune]
            except OSError:
                continue
            stack += [(os.path.join(inner, n), level + 1) for n in sorted(subdirs, reverse=True)]

    def open(
        self, path: str | os.PathLike[str], flags: int = os.O_RDONLY, follow: bool = True
    ) -> int:
        """A descriptor of host ``path`` (`open_in`); the OS's own open for the host."""
        if self.is_host:
            return os.open(path, flags | (0 if follow else _O_NOFOLLOW))
        return open_in(self.top, path, flags, follow=follow)

    def stat(self, path: str | os.PathLike[str], follow: bool = True) -> os.stat_result:
        """``os.stat`` (``follow=False``: ``os.lstat``) of host ``path``, confined."""
        if self.is_host:
            return os.stat(path, follow_symlinks=follow)
        fd = self.open(path, _O_PATH, follow=follow)
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)

    def listdir(self, path: str | os.PathLike[str]) -> list[str]:
        """The names in directory ``path``, confined."""
        if self.is_host:
            return os.listdir(path)
        fd = self.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            return os.listdir(fd)
        finally:
            os.close(fd)

    def subdirs(self, path: str | os.PathLike[str]) -> list[str]:
        """Names of the directories in ``path`` that are not symlinks, confined."""
        if self.is_host:
            with os.scandir(path) as it:
                return [e.name for e in it if e.is_dir(follow_symlinks=False)]
        fd = self.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            out = []
            for name in os.listdir(fd):
                try:
                    mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                except OSError:
                    continue
                if stat.S_ISDIR(mode):
                    out.append(name)
            return out
        finally:
            os.close(fd)

    def readlink(self, path: str | os.PathLike[str]) -> str:
        """The text of symlink ``path`` (not followed), its folder confined."""
        if self.is_host:
            return os.readlink(path)
        parent, name = os.path.split(os.fspath(path))
        fd = self.open(parent, _O_PATH | os.O_DIRECTORY)
        try:
            return os.readlink(name, dir_fd=fd)
        finally:
            os.close(fd)

    def _mode(self, path: str | os.PathLike[str], follow: bool = True) -> int:
        try:
            return self.stat(path, follow=follow).st_mode
        except (OSError, ValueError):
            return 0

    def is_dir(self, path: str | os.PathLike[str]) -> bool:
        return stat.S_ISDIR(self._mode(path))

    def is_file(self, path: str | os.PathLike[str]) -> bool:
        return stat.S_ISREG(self._mode(path))

    def exists(self, path: str | os.PathLike[str]) -> bool:
        return self._mode(path) != 0

    def lexists(self, path: str | os.PathLike[str]) -> bool:
        return self._mode(path, follow=False) != 0

    def is_regular(self, path: str | os.PathLike[str]) -> bool:
        """A regular file, a final symlink not followed."""
        return stat.S_ISREG(self._mode(path, follow=False))

    def inner(self, host: str | os.PathLike[str]) -> str:
        """The path as the target sees it, for reports."""
        host = os.fspath(host)
        if self.is_host:
            return host
        rel = os.path.relpath(host, self.top)
        return "/" if rel == "." else "/" + rel

    def contains(self, host: str | os.PathLike[str]) -> bool:
        """True when a host path lies inside the root (lexically)."""
        host = os.path.normpath(os.fspath(host))
        return self.is_host or host == self.top or host.startswith(self.top + os.sep)


def _relative(top: str, path: str | os.PathLike[str]) -> str:
    """``path`` (a host path below ``top``, or relative to it) relative to ``top``; a ``..``
    is left to the resolver, which stops it at ``top``."""
    path = os.fspath(path)
    if not os.path.isabs(path):
        return path or "."
    base = top.rstrip(os.sep) + os.sep
    if path.rstrip(os.sep) == top.rstrip(os.sep):
        return "."
    if not path.startswith(base):
        raise ConfinementError(errno.EXDEV, f"not inside the root {top}: {path}")
    return path[len(base) :] or "."


def open_in(top: str, path: str | os.PathLike[str], flags: int, *, follow: bool = True) -> int:
    """A descriptor of ``path`` (a host path inside root ``top``) opened with ``flags``, every
    symlink on the way, the last one too unless ``follow`` is off (then: ``ELOOP``, or the link
    itself with ``O_PATH``), resolved inside ``top`` by the kernel or step by step; never a
    file outside ``top``. A plain function (picklable arguments) for worker processes."""
    global _openat2_works
    rel = _relative(top, path)
    flags |= _O_CLOEXEC | (0 if follow else _O_NOFOLLOW)
    top_fd = os.open(top, _O_PATH | os.O_DIRECTORY | _O_CLOEXEC)
    try:
        if _openat2_works is not False:
            for _ in range(8):  # EAGAIN: a rename raced a ".."; the kernel asks to retry
                try:
                    fd = _openat2(top_fd, rel, flags)
                except OSError as exc:
                    if exc.errno == errno.EAGAIN:
                        continue
                    if exc.errno in (errno.ENOSYS, errno.EPERM) and _openat2_works is None:
                        _openat2_works = False  # an old kernel, or a seccomp filter
                        break
                    raise
                _openat2_works = True
                return fd
        return _open_stepwise(top_fd, rel, flags, follow)
    finally:
        os.close(top_fd)


def _openat2(dir_fd: int, rel: str, flags: int) -> int:
    """openat2(dir_fd, rel, {flags, 0, RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS})."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    how = (ctypes.c_uint64 * 3)(flags, 0, _RESOLVE_IN_ROOT | _RESOLVE_NO_MAGICLINKS)
    fd: int = libc.syscall(  # restype c_long: a Python int
        ctypes.c_long(_SYS_OPENAT2),
        ctypes.c_int(dir_fd),
        ctypes.c_char_p(os.fsencode(rel)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), rel)
    return fd


def _open_stepwise(top_fd: int, rel: str, flags: int, follow: bool) -> int:
    """`open_in` without openat2: each component opened ``O_PATH|O_NOFOLLOW`` relative to the
    directory before it; a link read and its text walked in its place (an absolute one from
    ``top_fd``), ``..`` never above ``top_fd``."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    fds: list[int] = []  # the directories walked through, below top_fd
    links = 0
    try:
        while parts:
            part = parts.pop(0)
            cur = fds[-1] if fds else top_fd
            if part == "..":
                if fds:
                    os.close(fds.pop())
                continue
            fd = os.open(part, _O_PATH | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=cur)
            mode = os.fstat(fd).st_mode
            last = not parts
            if stat.S_ISLNK(mode) and (follow or not last):
                os.close(fd)
                links += 1
                if links > MAX_LINKS:
                    raise ConfinementError(errno.ELOOP, "too many levels of symbolic links")
                target = os.readlink(part, dir_fd=cur)
                if target.startswith("/"):
                    while fds:
                        os.close(fds.pop())
                parts = [p for p in target.split("/") if p not in ("", ".")] + parts
                continue
            if not last:
                if not stat.S_ISDIR(mode):
                    os.close(fd)
                    raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), rel)
                fds.append(fd)
                continue
            if flags & _O_PATH:
                return fd
            os.close(fd)
            try:
                return os.open(part, flags | _O_NOFOLLOW, dir_fd=cur)
            except OSError as exc:  # swapped for a link since: walk it again
                if exc.errno != errno.ELOOP or not follow or links >= MAX_LINKS:
                    raise
                links += 1
                parts = [part]
        return os.open(".", flags, dir_fd=fds[-1] if fds else top_fd)
    finally:
        for fd in fds:
            os.close(fd)


def read_capped(path: str | os.PathLike[str], limit: int) -> bytes:
    """The first ``limit`` bytes of a regular file of a target, a final symlink not followed
    (`dtkguard.util.safe_read.read_head`; kept for the callers that import it from here)."""
    from dtkguard.util.safe_read import read_head

    return read_head(path, limit, follow=False)


def read_in(root: Root, path: str | os.PathLike[str], limit: int) -> bytes:
    """The first ``limit`` bytes of regular file ``path`` of ``root``, opened confined."""
    from dtkguard.util.safe_read import read_head

    return read_head(path, limit, follow=False, root=root)


def is_regular(path: str | os.PathLike[str]) -> bool:
    """A regular file, by ``lstat``: a symlink is never followed to find out."""
    import stat

    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def child(root: Root, directory: str, name: str) -> str:
    """``directory/name`` with a final symlink resolved inside ``root``."""
    from dtkguard.util.purepath import join

    path = join(directory, name)
    if not root.is_host and stat.S_ISLNK(root._mode(path, follow=False)):
        return root.resolve_text(root.inner(path))
    return path
