"""dtkuv watches the vendor builds' byte code without stat'ing it before uv runs.

Half of a vendor torch's files are ``__pycache__/*.pyc``: dtkuv's watch takes no (size, inode,
ctime) of them before uv's first run, but a clock stamp (the ctime of an unnamed file made in
their folder) and the names in their folder. After uv ran, a byte code file whose ctime is not
before the stamp, or that is gone, or a new name, is a change: refused, and put back (byte code
goes, Python writes it again from the source; what was planted goes). Real uv, a real PEP 517
backend that rewrites a vendor ``.pyc`` in place (same size, same mtime: only the ctime moves)
while uv plans or only while uv's real run builds the wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.guard.conftest import Guarded, assert_build_refused_and_put_back
from tests.guard.test_build_journal import write_evil_sdist
from tests.guard.test_uv_index_effects import _dtkuv

pytestmark = pytest.mark.wheel_cache


@pytest.mark.parametrize("late", [False, True], ids=["in-the-plan", "in-the-real-run"])
def test_a_build_that_rewrites_vendor_byte_code_is_refused_and_put_back(
    fresh: Guarded, uv: str, tmp_path: Path, late: bool
) -> None:
    g = fresh
    cache = g.venv.site_packages / "torch" / "__pycache__"
    target = next(cache.glob("__init__.*.pyc"))
    plant = cache / ("_planted" + target.name[len("__init__") :])
    sdist = write_evil_sdist(tmp_path / "src", [target], [plant], late=late)
    original = target.read_bytes()
    before = g.venv.snapshot()
    proc = _dtkuv(g, tmp_path / "uv-cache", uv, "install", "--no-deps", "--no-index", str(sdist))
    assert_build_refused_and_put_back(g, proc, before)
    # the rewritten byte code is gone (Python writes it again) or as it was: never the build's
    assert not target.exists() or target.read_bytes() == original
    assert not plant.exists()
