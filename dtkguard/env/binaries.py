"""The native code of an environment: every ELF file its distributions ship, and what it links.

A dist's binaries are the RECORD rows that look like shared objects (``*.so``, ``*.so.N``;
extension modules and the libraries a wheel bundles in ``<name>.libs/`` alike) or have no dot
in their base name in a ``bin/`` or ``scripts/`` folder (executables), and start with the ELF
magic. Each is read with `dtkguard.elf` (a few KB: header, program headers, dynamic
segment, names), inside the target's root, a final symlink not followed. A file that cannot be
read or is not acceptable ELF is kept with the reason, so the rule can say so.
"""

from __future__ import annotations

import os

from dtkguard.elf import ElfError, Linkage, is_elf, native_name, parse
from dtkguard.lightclass import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.decision import Problem
    from dtkguard.env.dist import Dist
    from dtkguard.env.environment import Environment
    from dtkguard.env.root import Root
    from dtkguard.util.json_types import JSON

#: RECORD rows that can name native code parsed for one dist at most (torch has about 20,000
#: rows in all)
MAX_ROWS = 200_000


def looks_shared(path: str) -> bool:
    """Might ``path`` be native code: named like a shared object (an extension module or a
    library, ``*.so``, ``*.so.N...``) or an executable (no dot, in ``bin/``)?
    (`dtkguard.elf.native_name`; only a file that starts with the ELF magic is judged.)"""
    return native_name(path)


#: every RECORD row that can name native code (`looks_shared`) holds one of these
_NEEDLES = (".so", "bin/", "scripts/")


def _candidate_lines(text: str) -> list[str]:
    """The lines of ``text`` that can name native code (at most `MAX_ROWS`), in order, each
    once: found with ``str.find`` from one needle to the next, never by walking every line of
    torch's 20,000 in Python."""
    spans: set[tuple[int, int]] = set()
    for needle in _NEEDLES:
        pos = text.find(needle)
        while pos >= 0:
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            spans.add((text.rfind("\n", 0, pos) + 1, end))
            pos = -1 if len(spans) >= MAX_ROWS else text.find(needle, end)
    return [text[start:end].strip("\r") for start, end in sorted(spans)]


@record(frozen=True)
class Binary:
    """One ELF file of a dist: its path as the target sees it, and what it links."""

    dist: str
    version: str
    #: the path as the target sees it
    path: str
    #: the path in the dist's RECORD (relative to its site)
    rel: str
    linkage: Linkage | None = None
    #: why it could not be read (``linkage`` is None)
    error: str = ""


def shared_rows(dist: Dist) -> list[str]:
    """The RECORD paths of ``dist`` named like shared objects."""
    from dtkguard.records import rows_of
    from dtkguard.util.safe_read import read_head

    # on the host, RECORD is read in one open (what is no directory, or no regular file, does
    # not open: no rows, as `Dist.record` says); in an image, its links are resolved first
    record = os.path.join(dist.path_text, "RECORD") if dist.root.is_host else dist.record_text
    if record is None:
        return []
    try:
        text = read_head(record, 64 << 20, follow=False, root=dist.root).decode("utf-8", "replace")
    except OSError:
        return []
    out: list[str] = []
    if "\0" in text:
        text = text.replace("\0", "")
    for line in _candidate_lines(text):  # only these rows are parsed
        for row in rows_of(line):
            if row and row[0] and looks_shared(row[0]) and ".dist-info/" not in row[0]:
                out.append(row[0])
    return out


def read_binary(host: str, confined: str = "") -> Linkage | None:
    """The `Linkage` of ``host``; None when it is not an ELF file at all (a data file named
    ``.so``); `OSError` or `ElfError` when it cannot be read or is hostile. ``confined``: the
    root it is opened confined to (`dtkguard.env.root.open_in`), "" for the host."""
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    if confined:
        from dtkguard.env.root import open_in

        fd = open_in(confined, host, flags, follow=False)
    else:
        fd = os.open(host, flags | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ElfError("not a regular file")
        if not is_elf(os.pread(fd, 4, 0)):
            return None
        return parse(lambda offset, n: os.pread(fd, n, offset), st.st_size)
    finally:
        os.close(fd)


def _host(root: Root, site: str, rel: str) -> str | None:
    """The host path of RECORD row ``rel`` of a dist in ``site``; None outside the root."""
    from dtkguard.env.root import ConfinementError

    inner = os.path.normpath(os.path.join(root.inner(site), rel))
    if root.is_host:
        return inner
    try:
        host = root.resolve_text(os.path.dirname(inner))
    except ConfinementError:
        return None
    return os.path.join(host, os.path.basename(inner))


def dist_binaries(dist: Dist, rows: list[str] | None = None) -> list[Binary]:
    """Every ELF file ``dist`` ships, read (``rows``: its `shared_rows`, when known)."""
    out = []
    for rel in shared_rows(dist) if rows is None else rows:
        host = _host(dist.root, dist.site_text, rel)
        inner = os.path.normpath(os.path.join(dist.root.inner(dist.site_text), rel))
        label = (dist.name, dist.version, inner, rel)
        if host is None:
            out.append(Binary(*label, None, "its path leaves the target's root"))
            continue
        try:
            linkage = read_binary(host, "" if dist.root.is_host else dist.root.top)
        except FileNotFoundError:
            continue  # missing files are the files family's finding
        except OSError as exc:
            out.append(Binary(*label, None, exc.strerror or str(exc)))
            continue
        except ElfError as exc:
            out.append(Binary(*label, None, str(exc)))
            continue
        if linkage is not None:
            out.append(Binary(*label, linkage))
    return out


def known_rows(dists: list[Dist]) -> dict[str, list[str]]:
    """`shared_rows` of each host dist of ``dists`` by its path, kept by its RECORD's stat
    (`dtkguard.util.stat_cache`): a check reads each RECORD once, not every run: torch's
    alone has 20,000 rows."""
    from dtkguard.util.stat_cache import kept

    host = {os.path.join(d.path_text, "RECORD"): d for d in dists if d.root.is_host}
    if not host:
        return {}

    def rows(value: JSON) -> list[str] | None:
        return [r for r in value if isinstance(r, str)] if isinstance(value, list) else None

    sites = {d.site_text for d in host.values()}
    found = kept("shared-rows", sites, host, lambda r: shared_rows(host[r]), rows, [__file__])
    return {host[record].path_text: rows for record, rows in found.items()}


def env_binaries(env: Environment) -> list[Binary]:
    """Every ELF file of every dist of ``env``, computed once per environment."""
    cached = getattr(env, "_binaries", None)
    if cached is None:
        rows = known_rows(list(env))
        cached = [b for dist in env for b in dist_binaries(dist, rows.get(dist.path_text))]
        # kept on the Environment it describes, computed on first use (not one of its fields)
        env._binaries = cached  # type: ignore[attr-defined]
    return cached


def wheel_problems(
    policy: dict[str, JSON], name: str, wheel: str | os.PathLike[str]
) -> list[Problem]:
    """`dtkguard.decision.Problem` s of installing the wheel ``wheel`` of dist ``name``: each
    shared-object member judged by what it links (`dtkguard.decision.judge_binary`); a member
    that cannot be read is a ``binary-unreadable`` problem (medium: a warning)."""
    import zipfile

    from dtkguard.decision import Problem, canonical
    from dtkguard.elf import wheel_linkages

    try:
        with zipfile.ZipFile(wheel) as zf:
            members = wheel_linkages(zf)
    except (OSError, zipfile.BadZipFile) as exc:
        why = f"{os.fspath(wheel)} cannot be opened as a wheel ({exc})"
        return [Problem("binary-unreadable", "medium", canonical(name), why, {})]
    return linkage_problems(policy, name, members)


def linkage_problems(
    policy: dict[str, JSON], name: str, members: list[tuple[str, Linkage | None, str]]
) -> list[Problem]:
    """`wheel_problems` of a wheel's `dtkguard.elf.wheel_linkages` already read."""
    from dtkguard.decision import Problem, canonical, judge_binary

    out = []
    for member, linkage, error in members:
        if linkage is None:
            why = f"{member} of {name} could not be judged: {error}"
            out.append(
                Problem("binary-unreadable", "medium", canonical(name), why, {"file": member})
            )
            continue
        out += judge_binary(policy, name, member, linkage.needed, linkage.soname)
    return out


def file_problems(policy: dict[str, JSON], name: str, paths: list[str]) -> list[Problem]:
    """`dtkguard.decision.Problem` s of the installed files ``paths`` (host paths) of dist
    ``name``, each that may be native code judged by what it links, as `wheel_problems` judges
    a wheel's members: what uv's real run wrote, judged before its transaction commits."""
    from dtkguard.decision import Problem, canonical, judge_binary

    out = []
    for path in paths:
        if not looks_shared(path):
            continue
        try:
            linkage = read_binary(path)
        except FileNotFoundError:
            continue
        except (OSError, ElfError) as exc:
            why = f"{path} of {name} could not be judged: {getattr(exc, 'strerror', None) or exc}"
            out.append(Problem("binary-unreadable", "medium", canonical(name), why, {"file": path}))
            continue
        if linkage is not None:
            out += judge_binary(policy, name, path, linkage.needed, linkage.soname)
    return out
