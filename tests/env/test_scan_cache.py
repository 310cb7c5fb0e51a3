"""The site scan's cache (`dtkguard.env.scan_cache`): what `dtkguard check` parsed of each
``*.dist-info/METADATA`` is kept, and every change is seen by the very next check: METADATA
rewritten in place (same size, mtime put back), a dist-info folder swapped for another, a dist
installed or removed by pip. A cache that cannot be believed (corrupt, of the wrong shape, in a
folder of another user, unreadable) is a miss: the same findings, the same exit code. Real
venvs, real pip, the CLI."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from dtkguard.util.stat_cache import RACY_NS
from tests.support.cache import wheel_dir
from tests.support.cli import dtkguard
from tests.support.reports import DAS_25041
from tests.support.sitetree import add_dist
from tests.support.venvs import Venv, make_venv

TORCH = DAS_25041["torch"]


def _settle() -> None:
    """Older than a timestamp's granularity: what is read now is kept (`stat_cache.settled`)."""
    time.sleep(RACY_NS / 1e9 + 0.1)


def _check(venv: Venv, cache: Path) -> tuple[int, list[tuple[str, str]]]:
    """Exit code and the (rule, message) of each finding of ``dtkguard check``."""
    env = {"DTKGUARD_CACHE_DIR": str(cache), "DTKGUARD_STORE": str(cache.parent / "store")}
    proc = dtkguard("check", "--python", venv.python, "--format", "json", env=env)
    assert proc.returncode in (0, 1), proc.stderr
    found = json.loads(proc.stdout)["findings"]
    return proc.returncode, sorted((f["rule"], f["message"]) for f in found)


def _deps(found: list[tuple[str, str]]) -> list[str]:
    return [m for rule, m in found if rule == "vendor-deps-broken"]


def _kept(cache: Path, venv: Venv) -> dict:
    """The cache's entries of the venv's site-packages."""
    for entry in (cache / "site-scan").iterdir():
        table = json.loads(entry.read_text())
        if table["site"] == str(venv.site_packages):
            return table["dists"]
    raise AssertionError(f"no site-scan entry for {venv.site_packages}")


def _rewrite_in_place(path: Path, old: bytes, new: bytes) -> None:
    """``old`` replaced by ``new`` (the same length) in the same file, its mtime put back."""
    data, st = path.read_bytes(), path.stat()
    assert len(old) == len(new) and old in data
    with path.open("r+b") as fh:
        fh.write(data.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def _pip(venv: Venv, *args: str) -> None:
    venv.pip(*args, "--no-index", "--find-links", str(wheel_dir() / "image"))


@pytest.fixture
def venv(tmp_path: Path) -> Venv:
    """A venv with a vendor torch that needs ``sympy==1.13.1`` and mdurl, both there."""
    venv = make_venv(tmp_path / "venv")
    add_dist(venv.site_packages, "torch", TORCH, requires=("sympy==1.13.1", "mdurl"))
    add_dist(venv.site_packages, "sympy", "1.13.1")
    _pip(venv, "install", "mdurl")
    return venv


def test_every_change_of_the_site_is_seen_by_the_next_check(venv: Venv, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    site = venv.site_packages
    _settle()
    assert _deps(_check(venv, cache)[1]) == []
    torch_info = next(site.glob("torch-*.dist-info")).name
    assert torch_info in _kept(cache, venv)  # kept: the next check reads the cache
    assert _deps(_check(venv, cache)[1]) == []
    # METADATA rewritten in place: the same size and mtime, a new ctime
    _rewrite_in_place(site / torch_info / "METADATA", b"sympy==1.13.1", b"sympy==1.13.2")
    assert _deps(_check(venv, cache)[1]) == [
        f"the vendor build torch {TORCH} needs sympy==1.13.2: sympy 1.13.1 would not do"
    ]
    _settle()
    _check(venv, cache)
    # a dist-info folder swapped for another of the same name, size and mtime
    sympy_info = site / "sympy-1.13.1.dist-info"
    other = add_dist(tmp_path / "elsewhere", "sympy", "1.14.0")
    (other / "RECORD").write_bytes((sympy_info / "RECORD").read_bytes())
    for name in ("METADATA", "RECORD", "INSTALLER"):
        st = (sympy_info / name).stat()
        os.utime(other / name, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (other / "METADATA").stat().st_size == (sympy_info / "METADATA").stat().st_size
    os.rename(sympy_info, tmp_path / "old-sympy")
    os.rename(other, sympy_info)
    assert _deps(_check(venv, cache)[1]) == [
        f"the vendor build torch {TORCH} needs sympy==1.13.2: sympy 1.14.0 would not do"
    ]
    # a dist removed, then installed again, by pip
    _settle()
    _check(venv, cache)
    venv.pip("uninstall", "-y", "mdurl")
    assert any("mdurl" in m for m in _deps(_check(venv, cache)[1]))
    _pip(venv, "install", "mdurl")
    assert not any("mdurl" in m for m in _deps(_check(venv, cache)[1]))


def test_a_cache_that_cannot_be_believed_is_a_miss(venv: Venv, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _settle()
    first = _check(venv, cache)
    assert first == (0, []) or _deps(first[1]) == [], first
    (path,) = (cache / "site-scan").iterdir()
    table = json.loads(path.read_text())
    sympy = table["dists"]["sympy-1.13.1.dist-info"]
    assert sympy[1]["version"] == ["1.13.1"]
    # an entry of its stat that says another version: believed only in a folder of ours
    sympy[1]["version"] = ["1.14.0"]
    forged = json.dumps(table)
    path.write_text(forged)
    os.chown(path.parent, 12345, 12345)
    assert _check(venv, cache) == first
    os.chown(path.parent, os.geteuid(), os.getegid())
    for text in ("{not json", "[1, 2]", forged.replace('["1.14.0"]', "[1, 4]")):
        path.write_text(text)
        assert _check(venv, cache) == first, text
        assert json.loads(path.read_text())["dists"]["sympy-1.13.1.dist-info"][1]["version"] == [
            "1.13.1"
        ]  # written again from the files
    path.unlink()
    path.mkdir()  # cannot be read, nor written
    assert _check(venv, cache) == first
    shutil.rmtree(path)
