from __future__ import annotations

import sys

import pytest
from modelkit import DATA

from dtkguard.env import device

HY = DATA / "hy-smi"


def test_text_formats():
    assert device.parse((HY / "showproductname-hcu.txt").read_text()) == ["K100_AI", "K100_AI"]
    assert device.parse((HY / "showproductname-dcu-old.txt").read_text()) == ["BW1000"]


def test_json_valid_and_malformed():
    assert device.parse((HY / "json-valid.json").read_text()) == ["BW1100", "BW1100"]
    assert device.parse((HY / "json-malformed.txt").read_text()) == ["K100_AI", "K100_AI"]


@pytest.mark.parametrize(
    ("raw", "norm"), [("k100-ai ", "K100_AI"), ("BW1100", "BW1100"), ("K100 AI", "K100_AI")]
)
def test_normalise(raw, norm):
    assert device.normalise(raw) == norm


def test_runs_hy_smi(tmp_path):
    fake = tmp_path / "hy-smi"
    fake.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"assert '--showproductname' in sys.argv\n"
        f"print(open({str(HY / 'showproductname-hcu.txt')!r}).read())\n"
    )
    fake.chmod(0o755)
    assert device.read_card_series(str(fake)) == ["K100_AI", "K100_AI"]


def test_without_hy_smi(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(device, "DEFAULT_PATHS", (str(tmp_path / "absent"),))
    assert device.find_hy_smi() is None
    assert device.read_card_series() == []
    assert device.read_card_series(str(tmp_path / "absent")) == []


def test_hy_smi_that_prints_nothing_useful(tmp_path):
    fake = tmp_path / "hy-smi"
    fake.write_text("#!/bin/sh\necho 'ERROR: driver not loaded'\nexit 1\n")
    fake.chmod(0o755)
    assert device.read_card_series(str(fake)) == []
