"""Real virtual environments and a hermetic environment for running pip and uv in tests."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.parser import BytesParser
from pathlib import Path

from packaging.utils import canonicalize_name

__all__ = ["Venv", "hermetic_env", "make_venv", "run_uv", "users_env"]


def hermetic_env(**extra: str) -> dict[str, str]:
    """``os.environ`` without any ``PIP_*``/``UV_*`` variable, ``VIRTUAL_ENV`` or
    ``PYTHONDONTWRITEBYTECODE``; then ``PIP_CONFIG_FILE=/dev/null`` (no pip.conf at all),
    ``PIP_DISABLE_PIP_VERSION_CHECK=1``, ``PIP_NO_INPUT=1``, ``UV_NO_CONFIG=1``,
    ``UV_PYTHON_DOWNLOADS=never`` (uv must never fetch an interpreter); then ``extra``.

    The host's pip configuration (find-links, constraints, extra indexes) never reaches a test.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "UV_"))
        and k not in ("VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE", "PYTHONHOME", "PYTHONPATH")
    }
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
        UV_NO_CONFIG="1",
        UV_PYTHON_DOWNLOADS="never",
    )
    env.update(extra)
    return env


def users_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """`hermetic_env`, but with pip's and uv's config files read, as on a user's machine: only
    the guarded env's own exist (its ``<prefix>/pip.conf``, the ``uv.toml`` its uv shim names),
    since the user and system config folders are the test's own, under ``tmp_path``."""
    env = hermetic_env(
        XDG_CONFIG_HOME=str(tmp_path / "user-config"),
        XDG_CONFIG_DIRS=str(tmp_path / "etc-xdg"),
        HOME=str(tmp_path / "home"),
        **extra,
    )
    del env["PIP_CONFIG_FILE"], env["UV_NO_CONFIG"]
    return env


def _run(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    check: bool,
    env: Mapping[str, str] | None,
    cwd: Path | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(c) for c in cmd],
        env=dict(env) if env is not None else hermetic_env(),
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n"
            f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
        )
    return proc


def run_uv(
    *args: str | os.PathLike[str],
    check: bool = True,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``uv *args`` hermetically, e.g. ``run_uv("pip", "compile", "-", "--python",
    sys.executable, "--index-url", url, input="torch==2.4.1\\n")``."""
    from .cache import uv_binary

    return _run([uv_binary(), *args], check=check, env=env, cwd=cwd, input=input)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Venv:
    """A real virtual environment."""

    path: Path
    python: Path
    site_packages: Path
    bin: Path

    def run(
        self,
        *args: str | os.PathLike[str],
        check: bool = True,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run this venv's ``python *args`` hermetically (text output captured).

        ``check=True`` raises AssertionError with stdout and stderr on a non-zero exit.
        ``env`` replaces :func:`hermetic_env` (build on it: ``hermetic_env(FOO="1")``).
        """
        return _run([self.python, *args], check=check, env=env, cwd=cwd, input=input)

    def pip(
        self,
        *args: str | os.PathLike[str],
        check: bool = True,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``python -m pip *args`` in this venv hermetically."""
        return self.run("-m", "pip", *args, check=check, env=env, cwd=cwd)

    def uv_pip(
        self,
        subcommand: str,
        *args: str | os.PathLike[str],
        check: bool = True,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``uv pip SUBCOMMAND --python <this venv> *args`` hermetically."""
        return run_uv(
            "pip", subcommand, "--python", self.python, *args, check=check, env=env, cwd=cwd
        )

    def snapshot(self, *, include_pycache: bool = False) -> dict[str, str]:
        """``{relative posix path: sha256}`` of every file under the venv (symlinks as
        ``"-> target"``). ``__pycache__`` and ``*.pyc`` are left out unless asked for, since
        merely running Python writes them."""
        out: dict[str, str] = {}
        for root, dirs, files in os.walk(self.path):
            if not include_pycache:
                dirs[:] = [d for d in dirs if d != "__pycache__"]
            dirs.sort()
            for name in sorted(files):
                if not include_pycache and name.endswith(".pyc"):
                    continue
                p = Path(root, name)
                rel = p.relative_to(self.path).as_posix()
                out[rel] = f"-> {os.readlink(p)}" if p.is_symlink() else _sha256(p)
            for name in dirs:
                p = Path(root, name)
                if p.is_symlink():
                    out[p.relative_to(self.path).as_posix()] = f"-> {os.readlink(p)}"
        return out

    def installed(self) -> dict[str, str]:
        """``{normalised name: version}`` read from ``*.dist-info/METADATA`` (no pip call)."""
        out: dict[str, str] = {}
        for meta in sorted(self.site_packages.glob("*.dist-info/METADATA")):
            msg = BytesParser().parsebytes(meta.read_bytes(), headersonly=True)
            if msg.get("Name") and msg.get("Version"):
                out[canonicalize_name(msg["Name"])] = msg["Version"]
        return out

    def pip_version(self) -> str | None:
        """The installed pip version, if any."""
        return self.installed().get("pip")


def _venv_paths(path: Path) -> Venv:
    path = Path(path).absolute()
    bindir = path / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    found = sorted((path / "lib").glob("python3*/site-packages"))
    site = found[0] if found else path / "Lib" / "site-packages"
    return Venv(path=path, python=python, site_packages=site, bin=bindir)


def make_venv(
    path: Path,
    *,
    pip_version: str | None = None,
    with_pip: bool = True,
    system_site_packages: bool = False,
    base_python: str | os.PathLike[str] = sys.executable,
) -> Venv:
    """Create a venv with real ``python -m venv``.

    ``pip_version=None`` keeps the pip that ``venv`` bundles; ``pip_version="22.2.2"`` creates
    the venv without pip and installs exactly that pip from the local wheel cache
    (``--no-index --find-links``, ``--no-compile``; see :mod:`tests.support.cache`), running
    that pip straight from its wheel. ``with_pip=False``: no pip at all (uv-only venvs).
    """
    cmd: list[str | os.PathLike[str]] = [base_python, "-m", "venv"]
    if pip_version is not None or not with_pip:
        cmd.append("--without-pip")
    if system_site_packages:
        cmd.append("--system-site-packages")
    cmd.append(Path(path))
    _run(cmd, check=True, env=None)
    venv = _venv_paths(Path(path))
    if pip_version is not None and with_pip:
        from .cache import pip_wheel, wheel_dir

        wheel = pip_wheel(pip_version)
        # Run pip straight from its own wheel to install itself: no bootstrap pip needed.
        venv.run(
            f"{wheel}/pip",
            "install",
            "--no-compile",
            "--no-index",
            "--find-links",
            wheel_dir(),
            f"pip=={pip_version}",
        )
    return venv
