"""Remove distributions the way ``pip uninstall -y`` does, without starting pip.

A restore or an undo runs inside a journal transaction that has already kept every file of
the distributions it removes, so the files can go directly: what a ``.dist-info``'s RECORD
lists (scripts included), then each folder that held listed files and now holds no file
(pip removes a folder whole when every file under it is listed, else the listed files one
by one). Only the plain case is done here; `plan` returns None, and pip does the removal,
for anything else: an ``.egg-info``, a missing or unreadable RECORD, a path that leaves the
environment (``..``, a symlinked folder), a file of the guard's protected set or its state
folder, a console script the RECORD does not list, byte code beside a listed module that
the RECORD does not list (pip removes only its own interpreter's), a listed folder.
"""

from __future__ import annotations

import configparser
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from dtkguard.env.dist import Dist


def plan(
    dists: Iterable[Dist], prefix: Path, sites: list[Path], scripts: Path | None
) -> list[str] | None:
    """Every path to remove for ``dists`` (sorted), or None when pip should remove them."""
    real_prefix = os.path.realpath(prefix)
    state = os.path.join(real_prefix, "dtkguard")
    out: set[str] = set()
    for dist in dists:
        paths = _listed(dist)
        if paths is None:
            return None
        for full in paths:
            if not _plain(full, real_prefix, state, sites, scripts):
                return None
        if not _scripts_listed(dist, paths, scripts) or not _pyc_listed(paths):
            return None
        out |= paths
    return sorted(out)


def _listed(dist: Dist) -> set[str] | None:
    from dtkguard.journal.owned import MAX_RECORD
    from dtkguard.records import paths_of
    from dtkguard.util.safe_read import read_capped

    if not dist.path.name.endswith(".dist-info") or dist.path.is_symlink():
        return None
    try:
        text = read_capped(str(dist.path / "RECORD"), MAX_RECORD).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    site = str(dist.site)
    paths = {os.path.normpath(os.path.join(site, rel)) for rel in paths_of(text)}
    return paths or None


def _plain(
    full: str, real_prefix: str, state: str, sites: list[Path], scripts: Path | None
) -> bool:
    """Inside the env once resolved, not a folder, not protected, not the guard's state."""
    from dtkguard.protected import protected_kind

    real = os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))
    if not real.startswith(real_prefix + os.sep) or real.startswith(state + os.sep):
        return False
    if os.path.isdir(real) and not os.path.islink(real):
        return False
    site_dirs = [str(s) for s in sites]
    bin_dir = str(scripts) if scripts else None
    return all(protected_kind(p, site_dirs, bin_dir) is None for p in {full, real})


def _scripts_listed(dist: Dist, paths: set[str], scripts: Path | None) -> bool:
    """pip removes every console and GUI script entry_points.txt names: RECORD must too."""
    try:
        text = (dist.path / "entry_points.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        return True
    except (OSError, UnicodeDecodeError):
        return False
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text)
    except configparser.Error:
        return False
    names = [n for s in ("console_scripts", "gui_scripts") if parser.has_section(s)
             for n in parser.options(s)]  # fmt: skip
    if names and scripts is None:
        return False
    return all(os.path.normpath(os.path.join(str(scripts), n)) in paths for n in names)


def _pyc_listed(paths: set[str]) -> bool:
    """Every byte-code file beside a listed module is listed too (so pip's own extra, its
    interpreter's ``.pyc`` of each module, adds nothing)."""
    for full in paths:
        if not full.endswith(".py"):
            continue
        cache = os.path.join(os.path.dirname(full), "__pycache__")
        stem = os.path.basename(full)[:-3] + "."
        try:
            names = os.listdir(cache)
        except OSError:
            continue
        for name in names:
            pyc = os.path.join(cache, name)
            if name.startswith(stem) and name.endswith(".pyc") and pyc not in paths:
                return False
    return True


def remove(paths: list[str], keep: Iterable[Path]) -> None:
    """Unlink ``paths`` (those that exist), then each folder that held one and now holds no
    file, as pip does, but never a folder of ``keep`` (the site and scripts folders);
    `OSError` propagates (the transaction rolls back)."""
    kept = {os.path.normpath(k) for k in keep}
    for full in paths:
        if os.path.lexists(full):
            os.unlink(full)
    for folder in sorted({os.path.dirname(p) for p in paths}, key=len, reverse=True):
        if folder in kept or os.path.islink(folder) or not os.path.isdir(folder):
            continue
        if not any(names for _top, _dirs, names in os.walk(folder)):
            shutil.rmtree(folder)
