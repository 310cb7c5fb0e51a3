"""dtkuv keeps what it reads of a vendor build's RECORD by the RECORD's stat, and is not fooled.

Before uv runs, the watch needs the vendor builds' files by folder (`run_effects._vendor_folders`)
and the decision their site-level entries (`file_effects._kept_site_entries`): a vendor torch's
RECORD of 20,000 rows, read once and kept (`dtkguard.util.stat_cache`) by its (device, inode,
size, mtime, ctime). A RECORD rewritten with the same size and mtime is read again (its ctime
moved); a cache that is unreadable, or in a folder others can write, is a miss, never an error:
each time a build that changes a vendor file is still refused, through real dtkuv and uv."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.guard.conftest import Guarded, assert_build_refused_and_put_back
from tests.guard.test_build_journal import write_evil_sdist
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache

#: the caches a uv run keeps of the vendor RECORDs
CACHES = ("vendor-folders", "site-entries")


def _dtkuv(g: Guarded, tmp_path: Path, uv: str, *args: str):
    env = hermetic_env(
        UV_CACHE_DIR=str(tmp_path / "uv-cache"),
        DTKGUARD_UV=uv,
        DTKGUARD_CACHE_DIR=str(tmp_path / "cache"),
    )
    return g.dtkguard("uv", "--python", str(g.venv.python), "pip", *args, env=env)


def _kept(g: Guarded, tmp_path: Path, uv: str) -> Path:
    """Run dtkuv once (a plain wheel: the watch runs) with the torch RECORD old enough to be
    kept; the torch RECORD."""
    from dtkguard.util.stat_cache import RACY_NS

    [record] = g.venv.site_packages.glob("torch-*.dist-info/RECORD")
    wait = (RACY_NS - (time.time_ns() - record.stat().st_ctime_ns)) / 1e9 + 0.1
    time.sleep(max(0.0, wait))
    wheel = build_wheel(tmp_path / "plain", "plain-one", "1.0")
    proc = _dtkuv(g, tmp_path, uv, "install", "--no-deps", "--no-index", str(wheel))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in CACHES:
        [kept] = (tmp_path / "cache" / name).iterdir()
        assert str(record) in json.loads(kept.read_text()), name
    return record


def test_a_vendor_record_rewritten_with_its_size_and_mtime_is_read_again(
    fresh: Guarded, uv: str, tmp_path: Path
) -> None:
    """The kept rows of torch's RECORD did not name ``torch/xersion.py``; the RECORD now does
    (same size, same mtime: only its ctime moved). A build that rewrites that file in place
    is refused: the rows were read again, not taken from the cache."""
    g = fresh
    torch = g.venv.site_packages / "torch"
    (torch / "xersion.py").write_text((torch / "version.py").read_text())
    record = _kept(g, tmp_path, uv)
    st = record.stat()
    data = record.read_bytes()
    assert b"torch/version.py," in data
    record.write_bytes(data.replace(b"torch/version.py,", b"torch/xersion.py,"))
    os.utime(record, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (record.stat().st_size, record.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    sdist = write_evil_sdist(tmp_path / "src", [torch / "xersion.py"], [])
    proc = _dtkuv(g, tmp_path, uv, "install", "--no-deps", "--no-index", str(sdist))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "vendor-files-changed" in proc.stderr, proc.stderr
    assert "evilbuild" not in g.venv.installed()


@pytest.mark.parametrize("how", ["unreadable", "others-can-write"])
def test_a_bad_cache_is_a_miss_never_an_error(
    fresh: Guarded, uv: str, tmp_path: Path, how: str
) -> None:
    """Each kept cache made garbage, or forged (the RECORD's true stat, no files at all) in a
    folder others can write: not believed, no error; the build that rewrites
    ``torch/__init__.py`` is refused and put back."""
    g = fresh
    record = _kept(g, tmp_path, uv)
    for name in CACHES:
        folder = tmp_path / "cache" / name
        [kept] = folder.iterdir()
        if how == "unreadable":
            kept.write_bytes(b"\0{not json")
            continue
        entries = json.loads(kept.read_text())
        entries[str(record)][1] = {} if name == "vendor-folders" else []
        kept.write_text(json.dumps(entries))
        os.chmod(folder, 0o777)
    target = g.venv.site_packages / "torch" / "__init__.py"
    sdist = write_evil_sdist(tmp_path / "src", [target], [])
    before = g.venv.snapshot()
    proc = _dtkuv(g, tmp_path, uv, "install", "--no-deps", "--no-index", str(sdist))
    assert_build_refused_and_put_back(g, proc, before)
    assert "Traceback" not in proc.stderr
