"""The library behind check, audit and doctor: one request, one call, one Report (no argparse)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dtkguard.audit.assemble import AuditRequest, audit
from dtkguard.audit.check import check
from dtkguard.audit.doctor import FAMILIES, doctor
from dtkguard.audit.request import Request
from dtkguard.env.open import TargetSpec
from dtkguard.errors import InputError, TargetError
from dtkguard.rules.catalog import checked_by
from tests.support.sitetree import COMMUNITY_TORCH_VERSION_PY, add_dist, vendor_site

from .conftest import write_lock

HY_SMI = Path(__file__).resolve().parents[1] / "data" / "hy-smi" / "k100ai-old-driver.txt"


@pytest.fixture
def clobbered(tmp_path: Path) -> Path:
    site = vendor_site(tmp_path / "site")
    for dist_info in site.glob("torch-*.dist-info"):
        for f in dist_info.iterdir():
            f.unlink()
        dist_info.rmdir()
    add_dist(site, "torch", "2.4.1", files={"torch/version.py": COMMUNITY_TORCH_VERSION_PY})
    return site


def _rules(report) -> set[str]:
    return {f.rule for f in report.findings}


def test_each_command_is_one_call_on_a_request(clobbered: Path, tmp_path: Path) -> None:
    target = TargetSpec(paths=(str(clobbered),))
    lock = write_lock(tmp_path / "pylock.toml", [("torch", "2.4.1+das.opt1.dtk25041")])
    checked = check(Request(target=target, lock=str(lock)))
    assert checked.command == "check" and {"vendor-replaced", "drift-version"} <= _rules(checked)
    assert "drift-version" in checked.rules and checked.facts["dists"] == 6
    audited = audit(AuditRequest(target=target, lock=str(lock), inventory=True))
    assert audited.command == "audit" and _rules(checked) <= _rules(audited)
    assert audited.facts["lock"]["packages"] == 1 and audited.inventory
    assert "device" in audited.facts
    doctored = doctor(Request(target=target, hy_smi_output=str(HY_SMI)))
    assert doctored.command == "doctor" and "vendor-replaced" in _rules(doctored)
    assert _rules(doctored) <= set(checked_by(FAMILIES)) == set(doctored.rules)
    assert doctored.facts["doctor"]["vendor"]["installed"] >= 1


def test_bad_input_before_the_target_and_an_empty_target_is_exit_3(tmp_path: Path) -> None:
    missing = TargetSpec(paths=(str(tmp_path / "missing"),))
    with pytest.raises(InputError, match="policy"):
        check(Request(target=missing, policy=str(tmp_path / "nope.toml")))
    with pytest.raises(InputError, match="at least 1"):
        audit(AuditRequest(target=missing, workers=0))
    (tmp_path / "empty").mkdir()
    empty = TargetSpec(paths=(str(tmp_path / "empty"),))
    for run in (check, doctor):
        with pytest.raises(TargetError, match="nothing to check"):
            run(Request(target=empty))
    assert check(Request(target=empty, allow_empty=True)).findings == []
