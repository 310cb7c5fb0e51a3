"""Oracles nobody here wrote: resolvelib's functional cases on real PyPI snapshots.

Each case names what was requested and what resolvelib's own test expects (the pins, or the
project that conflicts); the wheels carry the real Requires-Dist of every version on the
snapshot date. The target is CPython 3.10 on manylinux, as for every lock.
"""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from dtkguard.resolve.http import Fetcher
from dtkguard.resolve.resolver import (
    Resolution,
    ResolveOptions,
    Unsatisfiable,
    build_sources,
    resolve,
)
from dtkguard.resolve.target import TargetEnv
from tests.support.snapshots import load_case

PINNED_CASES = [
    "backjump-test-3",
    "backjump-test-4",
    "issue-134",
    "same-package-extras",
    "conflict-with-dependency",
    "with-without-extras",
    "cheroot",
]


def _resolve(wheels, reqs, **kw) -> Resolution:
    sources = build_sources(None, Fetcher(), find_links=[str(wheels)])
    options = ResolveOptions(**kw)
    return resolve([Requirement(r) for r in reqs], sources, None, TargetEnv("3.10"), options)


def _pins(res: Resolution) -> dict[str, Version]:
    return {p.name: Version(p.version) for p in res.packages}


@pytest.mark.parametrize("name", PINNED_CASES)
def test_resolvelib_case_gives_the_expected_pins(snapshot, name):
    case = load_case(name)
    assert case.resolved
    res = _resolve(snapshot(case.index), case.requested)
    assert _pins(res) == {k: Version(v) for k, v in case.resolved.items()}


def test_bare_names_do_not_pick_pre_releases(snapshot):
    # pip 20.3b1 and pyparsing 3.0.0b1 are the newest uploads of the 2020-11-17 snapshot
    wheels = snapshot("pypi-2020-11-17-cheroot")
    assert _pins(_resolve(wheels, ["pip", "pyparsing"])) == {
        "pip": Version("20.2.4"),
        "pyparsing": Version("2.4.7"),
    }
    # matplotlib 3.2.0rc3 is the newest of the 2020-02-15 snapshot; its dependencies are
    # bare names too
    got = _pins(_resolve(snapshot("pypi-2020-02-15-pandas"), ["matplotlib"]))
    assert got["matplotlib"] == Version("3.1.3")
    assert not [n for n, v in got.items() if v.is_prerelease]


def test_pre_releases_when_named_asked_for_or_the_only_match(snapshot):
    wheels = snapshot("pypi-2020-11-17-cheroot")
    # a specifier that names a pre-release admits pre-releases
    assert _pins(_resolve(wheels, ["pip>=20.3b1"]))["pip"] == Version("20.3b1")
    # --pre admits them everywhere
    assert _pins(_resolve(wheels, ["pip", "pyparsing"], pre=True)) == {
        "pip": Version("20.3b1"),
        "pyparsing": Version("3.0.0b1"),
    }
    # nothing final satisfies: the pre-release is taken
    assert _pins(_resolve(wheels, ["pip>20.2.4"]))["pip"] == Version("20.3b1")
    # a final release that satisfies wins over a newer pre-release of a dependency
    assert _pins(_resolve(wheels, ["packaging==20.4"]))["pyparsing"] == Version("2.4.7")


def test_thrashing_case_is_proved_unsatisfiable_with_its_chain(snapshot):
    """pyrax 1.9.8 (resolvelib marks it "too many rounds"): python-novaclient 2.27.0 needs
    pbr<2 while every oslo.serialization it accepts needs pbr>=2 or pbr<1 (or msgpack, which
    the snapshot lacks). It used to re-pin msgpack-python thousands of times."""
    case = load_case("pyrex-1.9.8")
    with pytest.raises(Unsatisfiable) as err:
        _resolve(snapshot(case.index), case.requested)
    lines = err.value.lines
    assert err.value.rounds < 2000
    # every project of the likely graph without a file is named first, all at once
    missing = [line for line in lines if line.startswith("no usable file for the target: ")]
    assert lines[: len(missing)] == missing
    assert missing[0] == (
        "no usable file for the target: msgpack (needed by oslo-serialization 3.0.0): no source "
        "has a wheel of msgpack for the target"
    )
    assert {line.split(": ")[1].split()[0] for line in missing} >= {"msgpack", "wrapt"}
    lines = lines[len(missing) :]
    assert lines[0] == (
        "because pyrax 1.9.8 depends on python-novaclient==2.27.0, "
        "python-novaclient 2.27.0 requires pbr<2.0,>=1.6"
    )
    assert (
        "because pyrax 1.9.8 depends on python-novaclient==2.27.0 and python-novaclient 2.27.0 "
        "depends on oslo.serialization>=1.4.0, oslo-serialization 2.19.0 through 3.0.0 "
        "(22 versions) require pbr!=2.1.0,>=2.0.0"
    ) in lines
    # msgpack, named first, is not named again as a project that kept clashing on the way
    assert not [line for line in lines if line.startswith("also: ")]
    assert not [line for line in lines if "policy" in line]


def test_conflict_through_extras_names_the_chain(snapshot):
    case = load_case("different-extras")
    assert case.conflicted == ["markupsafe"]
    with pytest.raises(Unsatisfiable) as err:
        _resolve(snapshot(case.index), case.requested)
    assert err.value.lines[0] == (
        "because dask[diagnostics] 2.10.1 depends on bokeh>=1.0.0 and bokeh 1.4.0 depends on "
        "Jinja2>=2.7, jinja2 2.9 through 2.11.1 (13 versions) require MarkupSafe>=0.23; "
        "no source has a wheel of markupsafe for the target"
    )
    assert not [line for line in err.value.lines if "policy" in line]


def test_a_missing_extra_is_warned_about(snapshot):
    res = _resolve(snapshot("pypi-2020-02-15-pandas"), ["six[nosuchextra]"])
    assert _pins(res) == {"six": Version("1.14.0")}
    assert res.warnings == ["six 1.14.0 does not provide the extra 'nosuchextra'"]


def test_cli_pre_flag_reaches_the_lock(snapshot, tmp_path):
    from dtkguard.lock.read import read_lock
    from tests.lock.conftest import run_cli

    wheels = snapshot("pypi-2020-11-17-cheroot")
    common = ("--find-links", wheels, "--no-index", "--python-version", "3.10")
    plain = run_cli("lock", "pip", *common, "-o", "pylock.a.toml", cwd=tmp_path)
    pre = run_cli("lock", "pip", "--pre", *common, "-o", "pylock.b.toml", cwd=tmp_path)
    assert plain.returncode == 0 and pre.returncode == 0, plain.stderr + pre.stderr
    assert read_lock(tmp_path / "pylock.a.toml").versions()["pip"] == "20.2.4"
    assert read_lock(tmp_path / "pylock.b.toml").versions()["pip"] == "20.3b1"
    assert "pre = true" in (tmp_path / "pylock.b.toml").read_text()
