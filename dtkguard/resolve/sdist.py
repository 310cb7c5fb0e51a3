"""Core metadata of a source distribution, as PEP 751 locks take sdists.

PEP 643: an sdist whose ``PKG-INFO`` is Metadata-Version 2.2 or later and does not mark
``Requires-Dist``, ``Requires-Python`` or ``Provides-Extra`` as ``Dynamic`` is read as it is, with
no build. Otherwise the PEP 517 hook ``prepare_metadata_for_build_wheel`` (``build_wheel`` when
the backend has none) runs in an isolated environment: a fresh venv whose build requirements pip
installs from the same sources as the lock (its own configuration and ``PIP_*`` variables set
aside), so a build never reaches an index the lock does not name. Built metadata is cached by the
sdist's sha256 (:mod:`dtkguard.resolve.metacache`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from packaging.version import InvalidVersion, Version

from dtkguard.env.dist import parse_headers
from dtkguard.resolve.metadata import BadMetadata

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.resolve.auth import Credentials

SDIST_SUFFIXES = (".tar.gz", ".zip")
#: fields that must be static for PKG-INFO to stand for the built metadata (what the resolver reads)
RESOLVER_FIELDS = ("requires-dist", "requires-python", "provides-extra")
#: seconds one build step may take
BUILD_TIMEOUT = 600
DEFAULT_BACKEND = "setuptools.build_meta:__legacy__"
DEFAULT_REQUIRES = ["setuptools>=40.8.0"]

#: run inside the build environment: python HOOK SRC OUT BACKEND STEP
_HOOK = r"""
import importlib, json, os, sys, zipfile
src, out, backend, step = sys.argv[1:5]
os.chdir(src)
sys.path[:0] = [src]
mod, _, obj = backend.partition(":")
hooks = importlib.import_module(mod)
for part in filter(None, obj.split(".")):
    hooks = getattr(hooks, part)
if step == "requires":
    get = getattr(hooks, "get_requires_for_build_wheel", None)
    print(json.dumps(list(get({}) if get else [])))
elif hasattr(hooks, "prepare_metadata_for_build_wheel"):
    name = hooks.prepare_metadata_for_build_wheel(out, {})
    print(json.dumps(os.path.join(out, name, "METADATA")))
else:
    wheel = os.path.join(out, hooks.build_wheel(out, {}))
    with zipfile.ZipFile(wheel) as zf:
        meta = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        path = os.path.join(out, "METADATA")
        with open(path, "wb") as fh:
            fh.write(zf.read(meta[0]))
    print(json.dumps(path))
"""


def is_sdist(filename: str) -> bool:
    return filename.endswith(SDIST_SUFFIXES)


class BuildFailed(BadMetadata):
    """The sdist's metadata could not be built: the candidate is skipped and named."""


def _members(path: Path) -> dict[str, bytes | None]:
    """Top-level ``PKG-INFO`` and ``pyproject.toml`` of an sdist (``{name}-{version}/...``)."""
    import tarfile  # here: a lock without sdists needs neither (nor shutil, bz2, lzma)
    import zipfile

    want = ("PKG-INFO", "pyproject.toml")
    found: dict[str, bytes | None] = dict.fromkeys(want)
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                parts = PurePosixPath(name).parts
                if len(parts) == 2 and parts[1] in want:
                    found[parts[1]] = zf.read(name)
        return found
    with tarfile.open(path) as tf:
        for member in tf.getmembers():
            parts = PurePosixPath(member.name).parts
            if len(parts) == 2 and parts[1] in want and member.isfile():
                fh = tf.extractfile(member)
                found[parts[1]] = fh.read() if fh is not None else None
    return found


def static_metadata(pkg_info: bytes | None) -> bytes | None:
    """``PKG-INFO`` when PEP 643 lets it stand for the built metadata, else None."""
    if not pkg_info:
        return None
    headers = parse_headers(pkg_info)
    try:
        version = Version((headers.get("metadata-version") or ["1.0"])[0])
    except InvalidVersion:
        return None
    if version < Version("2.2"):
        return None
    dynamic = {d.strip().lower() for d in headers.get("dynamic", [])}
    return None if dynamic & set(RESOLVER_FIELDS) else pkg_info


def _build_system(pyproject: bytes | None) -> tuple[list[str], str]:
    if not pyproject:
        return list(DEFAULT_REQUIRES), DEFAULT_BACKEND
    import tomlkit

    try:
        table = tomlkit.parse(pyproject.decode("utf-8")).unwrap().get("build-system", {})
    except Exception as exc:  # tomlkit raises its own parse errors
        raise BuildFailed(f"pyproject.toml does not parse: {exc}") from None
    requires = table.get("requires", DEFAULT_REQUIRES)
    backend = table.get("build-backend") or DEFAULT_BACKEND
    return [str(r) for r in requires], str(backend)


def _extract(path: Path, dest: Path) -> Path:
    """Unpack the sdist safely (no absolute paths, no ``..``, no links out) and return its
    top folder."""
    import tarfile
    import zipfile

    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                if name.startswith("/") or ".." in PurePosixPath(name).parts:
                    raise BuildFailed(f"unsafe path in {path.name}: {name}")
            zf.extractall(dest)
    else:
        with tarfile.open(path) as tf:
            members = []
            for m in tf.getmembers():
                bad = m.name.startswith("/") or ".." in PurePosixPath(m.name).parts
                if bad or m.issym() or m.islnk() or not (m.isfile() or m.isdir()):
                    if bad:
                        raise BuildFailed(f"unsafe path in {path.name}: {m.name}")
                    continue
                members.append(m)
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            # `filter` is passed only where tarfile has it (3.12, 3.10.12+), hence the plain dict
            tf.extractall(dest, members=members, **safe)  # type: ignore[arg-type]
    tops = [p for p in dest.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise BuildFailed(f"{path.name} does not hold one top folder")
    return tops[0]


def _clean_env() -> dict[str, str]:
    """This process's environment without pip's and uv's configuration: the build's pip sees
    only the sources it is given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    env.pop("VIRTUAL_ENV", None)
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


class Builder:
    """Builds sdist metadata with build requirements from ``pip_sources`` (pip arguments:
    ``--find-links DIR``, ``--index-url URL``, ``--extra-index-url URL`` or ``--no-index``)."""

    def __init__(
        self,
        pip_sources: Sequence[str],
        secrets: Sequence[str] = (),
        env: dict[str, str] | None = None,
        static_only: bool = False,
    ) -> None:
        self.pip_sources = list(pip_sources)
        #: added to the build's environment (index URLs with credentials: not in argv)
        self.env = dict(env or {})
        self.static_only = static_only
        #: passwords the build's output must not show (it is quoted in errors)
        self.secrets = [s for s in secrets if s]
        self.built = 0

    def metadata(self, path: Path) -> bytes:
        """PEP 643 static PKG-INFO, else built metadata."""
        found = _members(path)
        static = static_metadata(found["PKG-INFO"])
        if static is not None:
            return static
        if self.static_only:
            raise BuildFailed(f"{path.name}: PKG-INFO is not static (PEP 643) and builds are off")
        requires, backend = _build_system(found["pyproject.toml"])
        import tempfile

        with tempfile.TemporaryDirectory(prefix="dtkguard-sdist-") as tmp:
            work = Path(tmp)
            src = _extract(path, work / "src")
            env_dir = work / "env"
            python = self._make_env(env_dir)
            self._install(env_dir, requires)
            more = json.loads(self._hook(python, src, work, backend, "requires"))
            if more:
                self._install(env_dir, more)
            (work / "out").mkdir()
            meta = Path(json.loads(self._hook(python, src, work / "out", backend, "metadata")))
            self.built += 1
            return meta.read_bytes()

    def _make_env(self, env_dir: Path) -> Path:
        self._run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], "venv")
        return env_dir / "bin" / "python"

    def _install(self, env_dir: Path, requires: Sequence[str]) -> None:
        if not requires:
            return
        if not _has_pip():
            raise BuildFailed("building sdist metadata needs pip beside dtkguard")
        cmd = [sys.executable, "-m", "pip", "install", "--prefix", str(env_dir), "--no-compile",
               "--no-warn-script-location", "--ignore-installed", "--quiet", *self.pip_sources,
               *requires]  # fmt: skip
        self._run(cmd, "installing the build requirements " + " ".join(requires))

    def _hook(self, python: Path, src: Path, out: Path, backend: str, step: str) -> str:
        cmd = [str(python), "-c", _HOOK, str(src), str(out), backend, step]
        lines = self._run(cmd, f"the build backend {backend}").strip().splitlines()
        return lines[-1] if lines else "null"

    def _run(self, cmd: list[str], what: str) -> str:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  env={**_clean_env(), **self.env},
                                  timeout=BUILD_TIMEOUT)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BuildFailed(f"{what}: {exc}") from None
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            for secret in self.secrets:
                tail = tail.replace(secret, "****")
            raise BuildFailed(f"{what} failed: {tail}")
        return proc.stdout


def _has_pip() -> bool:
    import importlib.util

    return importlib.util.find_spec("pip") is not None


def builder_for(sources: Sequence[object], credentials: Credentials) -> Builder:
    """A builder whose pip sees exactly ``sources``: their find-links folders, their indexes
    (credentials passed in the environment, never in argv), ``--no-index`` without one."""
    from dtkguard.resolve.sources import FindLinks, SimpleIndex

    args: list[str] = []
    indexes: list[str] = []
    secrets: list[str] = []
    for source in sources:
        if isinstance(source, FindLinks):
            args += ["--find-links", str(Path(source.path).absolute())]
        elif isinstance(source, SimpleIndex):
            url, password = credentials.with_userinfo(source.url)
            indexes.append(url)
            secrets.append(password)
    env = {}
    if indexes:
        env["PIP_INDEX_URL"] = indexes[0]
        if indexes[1:]:
            env["PIP_EXTRA_INDEX_URL"] = " ".join(indexes[1:])
    else:
        args.append("--no-index")
    return Builder(args, secrets, env)
