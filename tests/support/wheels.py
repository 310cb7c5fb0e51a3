"""Build real, deterministic wheel and sdist files for tests.

Wheels follow the binary distribution format: ``{name}-{version}.dist-info/`` with ``METADATA``
(Metadata-Version 2.1), ``WHEEL``, optional ``entry_points.txt`` and a ``RECORD`` of urlsafe-base64
sha256 hashes and sizes. Zip entries are sorted and carry a fixed timestamp, so the same inputs
always give the same bytes.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import re
import tarfile
import zipfile
from collections.abc import Iterable, Mapping
from email.message import Message
from email.parser import BytesParser
from pathlib import Path

from packaging.tags import parse_tag
from packaging.utils import canonicalize_name
from packaging.version import Version

__all__ = [
    "ZIP_TIMESTAMP",
    "build_big_wheel",
    "build_sdist",
    "build_wheel",
    "canonical",
    "dist_info_name",
    "import_name",
    "metadata_text",
    "parse_metadata",
    "read_wheel_metadata",
    "wheel_filename",
]

ZIP_TIMESTAMP = (1980, 1, 1, 0, 0, 0)
"""The timestamp of every zip entry (the earliest a zip file can carry)."""

_GENERATOR = "dtkguard-tests (1.0)"


def _escape(name: str) -> str:
    """The wheel-spec file name form of a project name: ``flash-attn`` -> ``flash_attn``."""
    return re.sub(r"[-_.]+", "_", name).lower()


def import_name(name: str) -> str:
    """The module name used for a project's tiny payload: ``flash-attn`` -> ``flash_attn``."""
    return _escape(name)


def _version(version: str) -> str:
    """The normalised version, local label kept: ``2.4.1+das.opt1.dtk25041``."""
    return str(Version(version))


def wheel_filename(name: str, version: str, tag: str = "py3-none-any") -> str:
    """``torch-2.4.1+das.opt1.dtk25041-py3-none-any.whl`` for ``("torch", "2.4.1+das...")``."""
    return f"{_escape(name)}-{_version(version)}-{tag}.whl"


def dist_info_name(name: str, version: str) -> str:
    """``flash_attn-2.6.1+das.opt1.dtk25041.dist-info``."""
    return f"{_escape(name)}-{_version(version)}.dist-info"


def metadata_text(
    name: str,
    version: str,
    *,
    requires_dist: Iterable[str] = (),
    requires_python: str | None = None,
    provides_extra: Iterable[str] = (),
    summary: str = "",
    metadata_version: str = "2.1",
    dynamic: Iterable[str] = (),
) -> str:
    """Core metadata (Metadata-Version 2.1 unless told) as written to ``METADATA`` and
    ``PKG-INFO``; ``dynamic`` lists PEP 643 ``Dynamic`` fields."""
    lines = [
        f"Metadata-Version: {metadata_version}",
        f"Name: {name}",
        f"Version: {_version(version)}",
    ]
    lines += [f"Dynamic: {field}" for field in dynamic]
    if summary:
        lines.append("Summary: " + " ".join(summary.split()))
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Provides-Extra: {extra}" for extra in provides_extra]
    lines += [f"Requires-Dist: {req}" for req in requires_dist]
    return "\n".join(lines) + "\n\n"


def _entry_points_text(entry_points: Mapping[str, Mapping[str, str]]) -> str:
    out: list[str] = []
    for group in sorted(entry_points):
        out.append(f"[{group}]")
        out += [f"{key} = {value}" for key, value in sorted(entry_points[group].items())]
        out.append("")
    return "\n".join(out)


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else data


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _zip_write(zf: zipfile.ZipFile, arcname: str, data: bytes) -> None:
    info = zipfile.ZipInfo(arcname, date_time=ZIP_TIMESTAMP)
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def build_wheel(
    dest: Path,
    name: str,
    version: str,
    *,
    requires_dist: Iterable[str] = (),
    requires_python: str | None = None,
    provides_extra: Iterable[str] = (),
    summary: str = "",
    files: Mapping[str, bytes | str] | None = None,
    tag: str = "py3-none-any",
    entry_points: Mapping[str, Mapping[str, str]] | None = None,
) -> Path:
    """Write a valid wheel into ``dest`` (created if needed) and return its path.

    ``files`` maps archive paths (``"torch/version.py"``) to contents; ``tag`` may be a compressed
    tag set (``cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64``); ``entry_points`` maps a
    group (``console_scripts``) to ``{name: "module:attr"}``.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    dist_info = dist_info_name(name, version)
    tags = sorted(str(t) for t in parse_tag(tag))
    purelib = all(t.endswith("-any") for t in tags)
    wheel_text = (
        "Wheel-Version: 1.0\n"
        f"Generator: {_GENERATOR}\n"
        f"Root-Is-Purelib: {'true' if purelib else 'false'}\n"
        + "".join(f"Tag: {t}\n" for t in tags)
    )
    meta = metadata_text(
        name,
        version,
        requires_dist=requires_dist,
        requires_python=requires_python,
        provides_extra=provides_extra,
        summary=summary,
    )
    entries: dict[str, bytes] = {path: _as_bytes(data) for path, data in (files or {}).items()}
    for path in entries:
        if path.startswith(dist_info + "/"):
            raise ValueError(f"{path}: files may not be written into {dist_info}")
    dist_entries = {
        f"{dist_info}/METADATA": meta.encode(),
        f"{dist_info}/WHEEL": wheel_text.encode(),
    }
    if entry_points:
        dist_entries[f"{dist_info}/entry_points.txt"] = _entry_points_text(entry_points).encode()
    ordered = sorted(entries.items()) + sorted(dist_entries.items())
    record_path = f"{dist_info}/RECORD"
    record = "".join(f"{p},{_record_hash(d)},{len(d)}\n" for p, d in ordered) + f"{record_path},,\n"
    out = dest / wheel_filename(name, version, tag)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path, data in ordered:
            _zip_write(zf, path, data)
        _zip_write(zf, record_path, record.encode())
    out.write_bytes(buf.getvalue())
    return out


def build_big_wheel(dest: Path, name: str, version: str, size: int, **meta) -> Path:
    """A valid wheel of about ``size`` bytes (one incompressible stored payload, written in
    pieces, so that even a multi-hundred-MB wheel never sits in memory), ``dist-info`` last as
    real build tools write it. ``meta``: ``requires_dist``, ``requires_python``."""
    import os

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    dist_info = dist_info_name(name, version)
    out = dest / wheel_filename(name, version)
    digest = hashlib.sha256()
    payload = f"{import_name(name)}/blob.bin"
    with zipfile.ZipFile(out, "w", allowZip64=True) as zf:
        info = zipfile.ZipInfo(payload, date_time=ZIP_TIMESTAMP)
        info.compress_type = zipfile.ZIP_STORED
        block = os.urandom(1 << 20)
        with zf.open(info, "w", force_zip64=True) as fh:
            for i in range(max(1, size >> 20)):
                piece = hashlib.sha256(block + i.to_bytes(8, "little")).digest() * (1 << 15)
                fh.write(piece)
                digest.update(piece)
        written = max(1, size >> 20) << 20
        rows = [f"{payload},{_record_hash_of(digest)},{written}"]
        meta_text = metadata_text(name, version, **meta).encode()
        wheel_text = f"Wheel-Version: 1.0\nGenerator: {_GENERATOR}\nRoot-Is-Purelib: true\n"
        wheel_text += "Tag: py3-none-any\n"
        for arc, data in ((f"{dist_info}/METADATA", meta_text),
                          (f"{dist_info}/WHEEL", wheel_text.encode())):  # fmt: skip
            _zip_write(zf, arc, data)
            rows.append(f"{arc},{_record_hash(data)},{len(data)}")
        rows.append(f"{dist_info}/RECORD,,")
        _zip_write(zf, f"{dist_info}/RECORD", ("\n".join(rows) + "\n").encode())
    return out


def _record_hash_of(digest) -> str:
    return "sha256=" + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def read_wheel_metadata(wheel: Path) -> bytes:
    """The unmodified ``METADATA`` bytes of a wheel (what a PEP 658 ``.metadata`` file serves)."""
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
        if len(names) != 1:
            raise ValueError(f"{wheel}: expected one .dist-info/METADATA, found {names}")
        return zf.read(names[0])


def parse_metadata(data: bytes) -> Message:
    """Parse core metadata bytes; use ``msg.get_all("Requires-Dist")`` and friends."""
    return BytesParser().parsebytes(data)


def _tar_add(tf: tarfile.TarFile, arcname: str, data: bytes) -> None:
    info = tarfile.TarInfo(arcname)
    info.size = len(data)
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tf.addfile(info, io.BytesIO(data))


def build_sdist(
    dest: Path,
    name: str,
    version: str,
    *,
    requires_dist: Iterable[str] = (),
    requires_python: str | None = None,
    summary: str = "",
    build_requires: Iterable[str] = ("setuptools",),
    metadata_version: str = "2.1",
    dynamic: Iterable[str] = (),
) -> Path:
    """Write a tiny setuptools sdist (``{name}-{version}.tar.gz``) and return its path.

    ``PKG-INFO`` is Metadata-Version ``metadata_version`` with ``dynamic`` fields: 2.2 or later
    without ``Requires-Dist`` among them is static in PEP 643's sense. The project has a
    ``pyproject.toml`` with ``[build-system] requires = ["setuptools"]`` (so pip
    and uv build it in an isolated environment), a ``PKG-INFO`` and one module
    ``{import_name}/__init__.py`` holding ``__version__``.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    escaped = _escape(name)
    ver = _version(version)
    module = import_name(name)
    reqs = list(requires_dist)

    def toml_list(items: Iterable[str]) -> str:
        return "[" + ", ".join(_toml_str(i) for i in items) + "]"

    pyproject = (
        "[build-system]\n"
        f"requires = {toml_list(build_requires)}\n"
        'build-backend = "setuptools.build_meta"\n\n'
        "[project]\n"
        f"name = {_toml_str(name)}\n"
        f"version = {_toml_str(ver)}\n"
        + (f"description = {_toml_str(summary)}\n" if summary else "")
        + (f"requires-python = {_toml_str(requires_python)}\n" if requires_python else "")
        + f"dependencies = {toml_list(reqs)}\n\n"
        "[tool.setuptools]\n"
        f"packages = [{_toml_str(module)}]\n"
    )
    pkg_info = metadata_text(
        name,
        ver,
        requires_dist=reqs,
        requires_python=requires_python,
        summary=summary,
        metadata_version=metadata_version,
        dynamic=dynamic,
    )
    root = f"{escaped}-{ver}"
    entries = {
        f"{root}/PKG-INFO": pkg_info.encode(),
        f"{root}/pyproject.toml": pyproject.encode(),
        f"{root}/{module}/__init__.py": f"__version__ = {ver!r}\n".encode(),
    }
    out = dest / f"{root}.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for path, data in sorted(entries.items()):
            _tar_add(tf, path, data)
    gz = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=gz, mtime=0) as g:
        g.write(buf.getvalue())
    out.write_bytes(gz.getvalue())
    return out


def _toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def canonical(name: str) -> str:
    """PEP 503 normalised name: ``Flash_Attn`` -> ``flash-attn``."""
    return canonicalize_name(name)
