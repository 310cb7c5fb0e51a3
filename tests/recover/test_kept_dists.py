"""The journal's kept distributions as a restore asks for them (`KeptDists`): the newest
transaction that kept a version names it, versions compare by PEP 440 (local labels included),
and each transaction's kept files are read once however many packages are asked for (asking
each transaction anew made a restore's plan grow with packages x transactions x kept files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dtkguard.journal import transaction as journal
from dtkguard.journal import txn as txn_module
from dtkguard.journal.layout import Layout
from dtkguard.recover.keep import KeptDists, repack_kept
from dtkguard.recover.wanted import Want

NAMES = [f"pkg{i}" for i in range(12)]


def put(site: Path, name: str, version: str) -> None:
    """``name`` at ``version``: a module and a dist-info (the older one goes)."""
    for old in site.glob(f"{name}-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    (site / name).mkdir(exist_ok=True)
    (site / name / "__init__.py").unlink(missing_ok=True)
    (site / name / "__init__.py").write_text(f"v = {version!r}\n")
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")


@pytest.fixture
def lay(tmp_path: Path) -> Layout:
    site = tmp_path / "prefix" / "lib" / "site-packages"
    scripts = tmp_path / "prefix" / "bin"
    site.mkdir(parents=True)
    scripts.mkdir(parents=True)
    for name in NAMES:
        put(site, name, "1.0+DAS.opt1" if name == "pkg0" else "1.0")
    lay = Layout(tmp_path / "prefix", [site, scripts], scripts, site)
    # three committed changes: pkg0 and pkg1 to 2.0, pkg1 to 3.0, pkg2 to 2.0
    for changes in ({"pkg0": "2.0", "pkg1": "2.0"}, {"pkg1": "3.0"}, {"pkg2": "2.0"}):
        with journal.transaction("-", "t", ["t"], lay=lay):
            for name, version in changes.items():
                put(site, name, version)
    return lay


def test_the_newest_transaction_that_kept_a_version_names_it(lay: Layout) -> None:
    kept = KeptDists()
    ids = [t.id for t in kept.newest_first(lay)]
    assert len(ids) == 3 and ids == sorted(ids, reverse=True)
    first, second, third = reversed(kept.newest_first(lay))
    site = lay.roots[0]
    assert kept.dist_info(first, "pkg1", "1.0") == site / "pkg1-1.0.dist-info"
    assert kept.dist_info(second, "pkg1", "2.0") == site / "pkg1-2.0.dist-info"
    assert kept.dist_info(third, "pkg1", "2.0") is None  # not before that change
    assert kept.dist_info(second, "pkg2", "1.0") is None  # there, but not kept by it
    assert kept.dist_info(third, "pkg2", "1.0") == site / "pkg2-1.0.dist-info"


def test_versions_compare_by_pep_440_local_labels_included(lay: Layout) -> None:
    kept = KeptDists()
    first = kept.newest_first(lay)[-1]
    site = lay.roots[0]
    for spelled in ("1.0+DAS.opt1", "1.0+das.opt1", "1.0.0+das-opt1"):
        assert kept.dist_info(first, "pkg0", spelled) == site / "pkg0-1.0+DAS.opt1.dist-info"
    assert kept.dist_info(first, "pkg0", "1.0") is None
    assert kept.dist_info(first, "pkg0", "1.0+das.opt2") is None


def test_each_transaction_is_read_once_for_every_package(
    lay: Layout, tmp_path: Path, mocker
) -> None:
    from dtkguard.env import dist

    loads = mocker.spy(txn_module.Transaction, "load")
    lists = mocker.spy(txn_module, "read_entries")
    parses = mocker.spy(dist, "parse_headers")
    kept = KeptDists()
    # at a version no transaction had before it: each asks all three, none reads its files
    for name in NAMES:
        want = Want(name, name, "9.0", vendor=False)
        assert repack_kept(lay, want, tmp_path / "stage", kept) is None
    assert (loads.call_count, lists.call_count, parses.call_count) == (3, 0, 0)
    # the untouched ones, at the version every transaction had before it: each reads all three
    for name in NAMES[3:]:
        want = Want(name, name, "1.0", vendor=False)
        assert repack_kept(lay, want, tmp_path / "stage", kept) is None
    assert loads.call_count == 3
    assert lists.call_count == 3  # one kept.list per transaction
    assert parses.call_count == 4  # each kept METADATA once: pkg0 and pkg1, pkg1, pkg2
