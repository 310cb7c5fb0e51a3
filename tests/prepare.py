"""Fill the offline wheel cache that the test suite uses (``.cache/wheels/``).

Run once with network access: ``python tests/prepare.py``. It uses this machine's normal pip
configuration, downloads only what is missing, and is quick when everything is present.
``--refresh`` re-downloads the unpinned build requirements (setuptools, wheel).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.cache import (
    BUILD_REQUIREMENTS,
    IMAGE_PLATFORMS,
    IMAGE_PYTHONS,
    MATRIX_PIP_VERSIONS,
    PIP_VERSIONS,
    cache_path,
)


def _present(dest: Path, name: str, version: str | None) -> bool:
    pattern = f"{name}-{version}-*.whl" if version else f"{name}-*.whl"
    return any(dest.glob(pattern))


def _image_wheels(dest: Path, *, refresh: bool) -> None:
    """dtkguard's runtime dependencies for each image Python of the Docker recipe."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    deps = [r for r in requires("dtkguard") or [] if not Requirement(r).marker]
    for py in IMAGE_PYTHONS:
        done = dest / f".complete-{py}"
        if done.exists() and not refresh:
            print(f"have dtkguard's dependencies for Python {py}")
            continue
        print(f"fetching dtkguard's dependencies for Python {py}", flush=True)
        cmd = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--dest", str(dest)]
        cmd += ["--python-version", py, *(f"--platform={p}" for p in IMAGE_PLATFORMS), *deps]
        subprocess.run(cmd, check=True)
        done.write_text("")


def _floor_wheels(dest: Path, *, refresh: bool) -> None:
    """The lowest versions dtkguard declares (``name>=X`` taken as ``name==X``) with what they
    need, for the running Python: the floors test installs exactly these."""
    from tests.support.cache import floor_requirements

    done = dest / ".complete"
    if done.exists() and not refresh:
        print("have dtkguard's declared floors")
        return
    print("fetching dtkguard's declared floors", flush=True)
    cmd = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--dest", str(dest)]
    subprocess.run([*cmd, *floor_requirements()], check=True)
    done.write_text("")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refresh", action="store_true", help="re-fetch unpinned wheels")
    args = parser.parse_args(argv)
    dest = cache_path()
    dest.mkdir(parents=True, exist_ok=True)
    versions = dict.fromkeys((*PIP_VERSIONS, *MATRIX_PIP_VERSIONS))
    wanted: list[tuple[str, str | None]] = [("pip", v) for v in versions]
    wanted += [(name, None) for name in BUILD_REQUIREMENTS]
    for name, version in wanted:
        spec = f"{name}=={version}" if version else name
        if _present(dest, name, version) and not (args.refresh and version is None):
            print(f"have {spec}")
            continue
        print(f"fetching {spec}", flush=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        cmd += ["--dest", str(dest), spec]
        subprocess.run(cmd, check=True)
    _image_wheels(dest / "image", refresh=args.refresh)
    _floor_wheels(dest / "floors", refresh=args.refresh)
    print(f"wheel cache ready: {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
