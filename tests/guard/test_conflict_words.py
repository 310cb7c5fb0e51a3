"""Plain pip in a guarded environment: a resolution that fails on the guard's vendor pins is
explained in dtkguard's words after pip's own (issue 18), on the oldest and newest pip."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed

pytestmark = pytest.mark.wheel_cache

VLLM = "0.8.5.post1+das.opt1.dtk25041"


def _pinned(g: Guarded, *args: str):
    """pip as the guarded env runs it: the constraints the site pip.conf names (tests run with
    ``PIP_CONFIG_FILE=/dev/null``, so the same file is passed explicitly)."""
    constraints = g.venv.path / "dtkguard" / "constraints.txt"
    return g.pip("install", *g.index_args, "-c", str(constraints), *args)


def test_pinned_package_conflict_is_explained(guarded: Guarded, vendor_wheelhouse: Path) -> None:
    before = guarded.venv.snapshot()
    proc = _pinned(guarded, "vllm==0.9.2")
    assert proc.returncode == 1
    err = proc.stderr
    assert "(constraint)" in proc.stdout + err  # pip's own words stay
    policy = guarded.policy
    assert f"the guard of policy site-das ({policy})" in err, err
    assert f"you asked for vllm==0.9.2; this environment keeps vllm {VLLM}" in err
    assert "dtkpip install vllm==0.9.2" in err
    assert f"pip install --find-links {vendor_wheelhouse} 'vllm=={VLLM}'" in err
    assert "dtkguard policy explain vllm" in err
    assert 'DTKGUARD_OVERRIDE="reason" dtkpip install vllm==0.9.2' in err
    assert changed(before, guarded.venv.snapshot()) == []


def test_dependency_conflict_names_what_the_request_needs(guarded: Guarded) -> None:
    proc = _pinned(guarded, "pins-torch==2.0")
    assert proc.returncode == 1
    assert f"pins-torch 2.0 needs torch==2.6.0; this environment keeps torch {TORCH}" in (
        proc.stderr
    ), proc.stderr


def test_other_failures_keep_pip_words_only(guarded: Guarded) -> None:
    proc = _pinned(guarded, "no-such-package-anywhere")
    assert proc.returncode == 1
    assert "dtkguard" not in proc.stderr
