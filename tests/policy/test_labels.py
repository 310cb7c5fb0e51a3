"""The DTK label grammar over real DAS/DTK labels of published vendor wheels."""

from __future__ import annotations

import pytest

from dtkguard.policy.labels import DtkRelease, TorchAbi, label_of, parse_label

# (label, das, opt, dtk, torch, stamp, git)
REAL_LABELS = [
    ("das.dtk2404", True, None, "24.04", None, None, None),
    ("das.opt2.dtk2504", True, 2, "25.04", None, None, None),
    ("das.opt1.dtk25041", True, 1, "25.04.1", None, None, None),
    ("das.opt1.dtk25042", True, 1, "25.04.2", None, None, None),
    ("das", True, None, None, None, None, None),
    ("das.opt1.dtk2610.2609201632.gf74cd7", True, 1, "26.10", None, "2609201632", "f74cd7"),
    ("das.opt1.dtk24043", True, 1, "24.04.3", None, None, None),
    ("das.opt3.dtk2504", True, 3, "25.04", None, None, None),
    ("das.opt4.dtk24043", True, 4, "24.04.3", None, None, None),
    ("das.dtk2604", True, None, "26.04", None, None, None),
    ("das.opt3.dtk2604.20260121.g3529a6c9", True, 3, "26.04", None, "20260121", "3529a6c9"),
    (
        "das.opt4.dtk2604.torch290.2604281437.g61fdfe",
        True,
        4,
        "26.04",
        "2.9.0",
        "2604281437",
        "61fdfe",
    ),
    ("das.opt4.dtk2504", True, 4, "25.04", None, None, None),
    ("das.opt1.dtk2604", True, 1, "26.04", None, None, None),
    ("das.opt1.dtk2604.torch271", True, 1, "26.04", "2.7.1", None, None),
    ("dtk2604.torch2100", False, None, "26.04", "2.10.0", None, None),
    ("dtk25041", False, None, "25.04.1", None, None, None),
    ("das.dtk2604.5781e3c", True, None, "26.04", None, None, "5781e3c"),
    ("das.opt1.dtk2604.torch251", True, 1, "26.04", "2.5.1", None, None),
    ("das.dtk2604.2606261349.g1476ea", True, None, "26.04", None, "2606261349", "1476ea"),
    (
        "das.opt1.dtk2604.torch2100.2606152155.g6a53e9",
        True,
        1,
        "26.04",
        "2.10.0",
        "2606152155",
        "6a53e9",
    ),
    ("das.opt1.dtk2604.torch290", True, 1, "26.04", "2.9.0", None, None),
    ("das.opt1.alpha.dtk25042", True, 1, "25.04.2", None, None, None),
    ("das.dtk2504", True, None, "25.04", None, None, None),
    ("das.dtk25041", True, None, "25.04.1", None, None, None),
    ("dtk2604.torch2100", False, None, "26.04", "2.10.0", None, None),
]


@pytest.mark.parametrize(("raw", "das", "opt", "dtk", "torch", "stamp", "git"), REAL_LABELS)
def test_real_labels(raw, das, opt, dtk, torch, stamp, git):
    label = parse_label(raw)
    assert label is not None and label.is_vendor
    assert label.das is das
    assert label.opt == opt
    assert (str(label.dtk) if label.dtk else None) == dtk
    assert (str(label.torch) if label.torch else None) == torch
    assert label.stamp == stamp
    assert label.git == git


def test_alpha_is_a_tag_not_a_prerelease():
    label = parse_label("das.opt1.alpha.dtk25042")
    assert label is not None and label.tags == ("alpha",)


@pytest.mark.parametrize("raw", ["cu121", "rocm6.1", "cpu", "", None, "post"])
def test_non_vendor_labels(raw):
    assert parse_label(raw) is None


def test_label_of_full_versions():
    assert label_of("2.4.1") is None
    label = label_of("0.8.5.post1+das.opt1.dtk25041")
    assert label is not None and str(label.dtk) == "25.04.1"


def test_releases_compare_as_numbers_not_text():
    # as text, dtk9 > dtk25041 and opt10 < opt9; parsed they order correctly
    assert DtkRelease.parse("dtk2504") < DtkRelease.parse("dtk25041") < DtkRelease.parse("2604")
    assert DtkRelease.parse("25.04.1") < DtkRelease.parse("25.04.2") < DtkRelease.parse("26.10")
    assert parse_label("das.opt10.dtk2504").opt > parse_label("das.opt9.dtk2504").opt
    assert DtkRelease.parse("25.04") == DtkRelease.parse("dtk2504")
    assert DtkRelease.parse("dtk-25.04.1") == DtkRelease(25, 4, 1)
    assert DtkRelease.parse("25.04.1").series == DtkRelease.parse("25.04").series


def test_bad_release():
    with pytest.raises(ValueError, match="not a DTK release"):
        DtkRelease.parse("twenty-five")


def test_torch_abi_matches_release_tuples():
    assert TorchAbi(2, 4, 1).matches((2, 4, 1))
    assert TorchAbi(2, 10, 0).matches((2, 10))
    assert not TorchAbi(2, 9, 0).matches((2, 4, 1))
