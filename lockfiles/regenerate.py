"""Regenerate the committed locks of ``lockfiles/`` reproducibly (same inputs, same bytes).

    python lockfiles/regenerate.py           # rebuild the wheelhouse and rewrite the locks
    python lockfiles/regenerate.py --check   # lock again into a temporary folder, compare bytes

The wheelhouse (``lockfiles/wheelhouse/``, not committed) is rebuilt from the real metadata in
``tests/data/pip-reports`` by ``tests/support/das_image.py``: ``vendor/`` holds the 23 DAS 25.04.1
builds, ``public/`` the community packages. The wheels are deterministic (fixed zip timestamps),
so their sha256 in the lock are stable. Nothing here needs a network.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from tests.support.das_image import build_community, build_vendor  # noqa: E402

NOTE = (
    "vendor wheels: the dtkguard test wheelhouse (tests/support/das_image.py), tiny wheels "
    "carrying "
    "the DAS 25.04.1 vendor metadata; the image's own wheelhouse location is not known. Public "
    "wheels: tiny wheels with the real metadata of the vLLM 0.8.5.post1 closure (tests/data)."
)

#: the 23 vendor builds of the image (`pip list | grep dtk`), kept verbatim as test data
IMAGE_VENDOR_BUILDS = [
    "==".join(line.split())
    for line in (REPO / "tests/data/das-25.04.1-pip-list.txt").read_text().splitlines()
]

#: lock file name -> requirements: every vendor build the image ships (vllm among them)
LOCKS = {"pylock.das-25041-vllm.toml": IMAGE_VENDOR_BUILDS}


def build_wheelhouse(dest: Path) -> None:
    if not (dest / "vendor").is_dir():
        build_vendor(dest / "vendor")
    if not (dest / "public").is_dir():
        build_community(dest / "public", ("vllm085",))


def lock(name: str, reqs: list[str], out_dir: Path) -> None:
    cmd = [
        sys.executable, "-m", "dtkguard", "lock", *reqs,
        "--policy", "dtk-25.04.1",
        "--vendor-find-links", "wheelhouse/vendor",
        "--find-links", "wheelhouse/public",
        "--no-index",
        "--note", NOTE,
        "-o", name,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PYTHONPATH"] = str(REPO)
    subprocess.run(cmd, cwd=out_dir, env=env, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    build_wheelhouse(HERE / "wheelhouse")
    if not args.check:
        for name, reqs in LOCKS.items():
            lock(name, reqs, HERE)
        return 0
    status = 0
    with tempfile.TemporaryDirectory(prefix="dtkguard-lockfiles-") as tmp:
        (Path(tmp) / "wheelhouse").symlink_to(HERE / "wheelhouse")
        for name, reqs in LOCKS.items():
            lock(name, reqs, Path(tmp))
            same = (Path(tmp) / name).read_bytes() == (HERE / name).read_bytes()
            print(f"{name}: {'identical' if same else 'DIFFERS'}")
            status |= not same
    return status


if __name__ == "__main__":
    raise SystemExit(main())
