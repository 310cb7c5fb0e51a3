"""The ``sys.path`` a target's ``site`` would build, computed without running any of it.

An interpreter is asked for its paths with ``-I -S`` (no ``site``: no ``.pth`` file, no
``sitecustomize`` of the target runs); dtkguard then adds each site directory and the path lines
of its ``.pth`` files itself, the way ``site.addsitedir`` does, and never executes their
``import`` lines (the target's code: an editable install's finder, a coverage hook, anything).
"""

from __future__ import annotations

import os

from dtkguard.util.safe_read import read_capped

#: a ``.pth`` file is a few lines; ``easy-install.pth`` of a big develop setup a few KiB
MAX_PTH_BYTES = 1 << 20
#: a path line longer than this is no path (PATH_MAX is 4096 on Linux)
MAX_LINE = 4096


def path_lines(pth: str) -> tuple[list[str], bool]:
    """(path lines, in front) of a ``.pth`` file as ``site`` reads it: comments, blank lines
    and ``import`` lines (executed by ``site``, never by dtkguard) skipped, trailing space
    stripped; an unreadable or oversized file has none. ``in front``: the file is setuptools'
    ``easy-install.pth``, whose import lines move its entries to the front of ``sys.path``
    (recognised by its ``sys.__plen`` / ``sys.__egginsert`` idiom, not run)."""
    try:
        data = read_capped(pth, MAX_PTH_BYTES, what=".pth file")
    except OSError:
        return [], False
    out = []
    imports = []
    for line in data.decode("utf-8-sig", "surrogateescape").splitlines():
        if line.startswith(("import ", "import\t")):
            imports.append(line)
            continue
        if line.startswith("#") or not line.strip():
            continue
        line = line.rstrip()
        if len(line) <= MAX_LINE and "\0" not in line:
            out.append(line)
    front = any("sys.__plen" in i for i in imports) and any("__egginsert" in i for i in imports)
    return out, front


def add_site_dir(path: list[str], known: set[str], site_dir: str, front: list[int]) -> None:
    """``site.addsitedir`` without running anything: the folder, then the existing folders
    the path lines of its ``.pth`` files name (files in name order, hidden ones skipped);
    ``front[0]``: where the next ``easy-install.pth`` entry goes (``sys.__egginsert``)."""
    site_dir = os.path.abspath(site_dir)
    if site_dir not in known:
        path.append(site_dir)
        known.add(site_dir)
    try:
        names = sorted(n for n in os.listdir(site_dir) if n.endswith(".pth"))
    except OSError:
        return
    for name in names:
        if name.startswith("."):
            continue
        lines, in_front = path_lines(os.path.join(site_dir, name))
        for line in lines:
            entry = os.path.abspath(os.path.join(site_dir, line))
            if entry in known or not os.path.exists(entry):
                continue
            known.add(entry)
            if in_front:
                path.insert(front[0], entry)
                front[0] += 1
            else:
                path.append(entry)


def site_path(base: list[str], site_dirs: list[str]) -> list[str]:
    """``sys.path`` as ``site`` would leave it: ``base`` (the interpreter's path without
    ``site``), then every site directory that exists with its ``.pth`` path lines."""
    path: list[str] = []
    known: set[str] = set()
    front = [0]
    for entry in base:
        full = os.path.abspath(entry) if entry else entry
        if full not in known:
            path.append(full)
            known.add(full)
    for site_dir in site_dirs:
        if site_dir and os.path.isdir(site_dir):
            add_site_dir(path, known, site_dir, front)
    return path
