"""Repack an installed distribution into a wheel.

The wheel holds the files RECORD lists, read where they are now (site-packages) or where a
journal kept them: paths inside site-packages as they are, scripts of the scripts folder under
``<name>-<version>.data/scripts/`` (their ``#!`` line back to ``#!python`` when it named this
environment's interpreter), other files under the prefix under ``.data/data/``. Left out:
``RECORD`` (rewritten), ``INSTALLER``, ``REQUESTED``, ``direct_url.json``, signatures, ``.pyc``
files, and the console scripts pip generates again from ``entry_points.txt``. The zip is
deterministic: sorted entries, fixed timestamps.
"""

from __future__ import annotations

import configparser
import os
import posixpath
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dtkguard.errors import DtkguardError
from dtkguard.records import DIST_INFO, RECORD, hash_field, record_bytes, rows_of

_SKIP = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "RECORD.jws", "RECORD.p7s"}
_STAMP = (1980, 1, 1, 0, 0, 0)


class RepackError(DtkguardError):
    exit_code = 1


@dataclass(frozen=True)
class Installed:
    """Where one installed dist lives: its dist-info, site-packages, prefix and scripts."""

    dist_info: Path
    site: Path
    prefix: Path
    scripts: Path


def _record_rows(text: str) -> list[tuple[str, str]]:
    """(path, hash field) of every RECORD row."""
    return [(row[0], row[1] if len(row) > 1 else "") for row in rows_of(text) if row and row[0]]


def _console_scripts(dist_info: Callable[[str], bytes | None]) -> set[str]:
    raw = dist_info("entry_points.txt")
    if raw is None:
        return set()
    cfg = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    cfg.optionxform = str  # type: ignore[assignment]
    try:
        cfg.read_string(raw.decode("utf-8", "replace"))
    except configparser.Error:
        return set()
    out: set[str] = set()
    for section in ("console_scripts", "gui_scripts"):
        if cfg.has_section(section):
            out.update(name.strip() for name in cfg[section])
    return out


def _tag(wheel_text: str) -> str:
    tags = [
        line.split(":", 1)[1].strip()
        for line in wheel_text.splitlines()
        if line.lower().startswith("tag:")
    ]
    if not tags:
        return "py3-none-any"
    parts = [t.split("-") for t in tags if t.count("-") == 2]
    if not parts:
        return "py3-none-any"

    def join(i: int) -> str:
        return ".".join(dict.fromkeys(p[i] for p in parts))

    return f"{join(0)}-{join(1)}-{join(2)}"


def repack(
    inst: Installed,
    dest: Path,
    locate: Callable[[Path], Path | None] | None = None,
    python: str | None = None,
    check_record: bool = False,
) -> Path:
    """Write ``dest/<name>-<version>-<tag>.whl`` from the files RECORD lists.

    ``locate(original host path)`` says where that file's bytes are now (default: where it
    is; a journal gives its kept copy); ``python``: the interpreter path whose ``#!`` line is
    turned back into ``#!python``; ``check_record``: every file must have the sha256 its
    RECORD row gives (`RepackError` otherwise).
    """
    source = _Source(locate or (lambda p: p))
    info_name = inst.dist_info.name

    def info_file(name: str) -> bytes | None:
        try:
            return source.read(inst.dist_info / name)
        except OSError:
            return None

    record = info_file("RECORD")
    wheel_meta = info_file("WHEEL")
    if record is None or wheel_meta is None:
        raise RepackError(f"{info_name}: no RECORD or WHEEL; it cannot be repacked")
    stem = info_name[: -len(DIST_INFO)]
    layout = _Layout(inst, f"{stem}.data", _console_scripts(info_file))
    entries, execs = _wheel_files(layout, source, record, python, check_record)
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    wheel = dest / f"{stem}-{_tag(wheel_meta.decode('utf-8', 'replace'))}.whl"
    _add_record(entries, info_name)
    _write_zip(wheel, entries, execs, info_name)
    return wheel


class _Source:
    """Reads installed files where ``where`` says they are now, noting each one's mode."""

    def __init__(self, where: Callable[[Path], Path | None]) -> None:
        self.where = where
        #: original host path -> st_mode of the file read for it
        self.modes: dict[str, int] = {}

    def read(self, path: Path) -> bytes:
        """The bytes kept for ``path`` (`FileNotFoundError` when none are)."""
        found = self.where(path)
        if found is None:
            raise FileNotFoundError(2, "not kept", str(path))
        self.modes[str(path)] = os.stat(found).st_mode
        return Path(found).read_bytes()


@dataclass(frozen=True)
class _Layout:
    """Where the files of one installed dist go in its wheel."""

    inst: Installed
    #: ``<name>-<version>.data``
    data_dir: str
    #: console scripts pip writes again from ``entry_points.txt``
    generated: set[str]

    def place(self, rel: str) -> tuple[str, str] | None:
        """(host path, archive name) of a RECORD path; None for a file the wheel leaves out."""
        inst = self.inst
        site, scripts, prefix = str(inst.site), str(inst.scripts), str(inst.prefix)
        full = posixpath.normpath(posixpath.join(site, rel))
        name = posixpath.basename(full)
        if rel.endswith(".pyc") or "/__pycache__/" in f"/{rel}":
            return None
        if posixpath.dirname(full) == str(inst.dist_info) and name in _SKIP:
            return None
        if full.startswith(site + "/"):
            return full, posixpath.relpath(full, site)
        if posixpath.dirname(full) == scripts:
            return None if name in self.generated else (full, f"{self.data_dir}/scripts/{name}")
        if full.startswith(prefix + "/"):
            return full, f"{self.data_dir}/data/{posixpath.relpath(full, prefix)}"
        raise RepackError(f"{inst.dist_info.name}: {rel} lies outside the environment")


def _wheel_files(
    layout: _Layout, source: _Source, record: bytes, python: str | None, check_record: bool
) -> tuple[dict[str, bytes], dict[str, bool]]:
    """The bytes and the executable bit of every file the wheel holds, by archive name."""
    info_name = layout.inst.dist_info.name
    entries: dict[str, bytes] = {}
    execs: dict[str, bool] = {}
    for rel, recorded in _record_rows(record.decode("utf-8", "replace")):
        placed = layout.place(rel)
        if placed is None:
            continue
        full, arc = placed
        try:
            data = source.read(Path(full))
        except OSError as exc:
            raise RepackError(f"{info_name}: cannot read {full}: {exc.strerror}") from None
        if check_record and recorded.startswith("sha256=") and hash_field(data) != recorded:
            raise RepackError(f"{info_name}: {rel} differs from its RECORD")
        if arc.startswith(f"{layout.data_dir}/scripts/") and python:
            data = _portable_shebang(data, python)
        entries[arc] = data
        execs[arc] = bool(source.modes.get(full, 0) & 0o111)
    return entries, execs


def _portable_shebang(data: bytes, python: str) -> bytes:
    """A script whose ``#!`` line names ``python`` with ``#!python`` there instead."""
    first, nl, rest = data.partition(b"\n")
    if first.startswith(b"#!") and first[2:].strip().split(b" ")[0] == python.encode():
        data = b"#!python" + first[2 + len(first[2:].split(b" ")[0]) :].rstrip() + nl + rest
    return data


def _add_record(entries: dict[str, bytes], info_name: str) -> None:
    """Add the wheel's RECORD, listing every entry with its hash and size."""
    entries[f"{info_name}/{RECORD}"] = record_bytes(info_name, sorted(entries.items()))


def _write_zip(
    wheel: Path, entries: dict[str, bytes], execs: dict[str, bool], info_name: str
) -> None:
    """Write the wheel atomically and deterministically: dist-info last, fixed timestamps."""
    tmp = wheel.with_name(f".{wheel.name}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc in sorted(entries, key=lambda a: (a.startswith(info_name + "/"), a)):
            zi = zipfile.ZipInfo(arc, _STAMP)
            zi.external_attr = (0o755 if execs.get(arc) else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, entries[arc])
    os.replace(tmp, wheel)
