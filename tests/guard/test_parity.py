"""One verdict everywhere: a table of (policy, install) cases judged by the pip hook (real pip in
a real guarded venv), dtkpip, dtkuv (real uv) and `lock`. They all call `dtkguard.decision`;
this test keeps it so.

``VERDICT_PATHS`` is the seam for more routes (the uv shim, say): add a function
``(Guarded, policy, wheels, requirement) -> bool`` (True: installed / locked) and every case runs
through it too.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache

#: name -> extra TOML after the common head (extends the bundled policy, vendor find-links)
POLICIES = {
    "base": "",
    "allow-26.04": "",
    "medium-deny": (
        '[[deny]]\npattern = "medium-thing"\nreason = "tolerated, reported"\nseverity = "medium"\n'
    ),
    "waived": (
        '[[exceptions]]\nrule = "denied-package"\npackage = "nvidia-cublas-cu12"\n'
        'reason = "vendor asked for it"\nexpires = 2099-01-01\n'
    ),
    "expired": (
        '[[exceptions]]\nrule = "denied-package"\npackage = "nvidia-cublas-cu12"\n'
        'reason = "vendor asked for it"\nexpires = 2000-01-01\n'
    ),
}

#: (policy, requirement, installed?) — one verdict for every path
CASES = [
    ("base", "torch==2.6.0", False),
    ("base", "fancy-kernel==1.0+das.dtk2604", False),  # another DTK release, not allowed
    ("allow-26.04", "fancy-kernel==1.0+das.dtk2604", True),
    ("base", "nvidia-cublas-cu12==12.4.5.8", False),
    ("waived", "nvidia-cublas-cu12==12.4.5.8", True),
    ("expired", "nvidia-cublas-cu12==12.4.5.8", False),
    ("medium-deny", "medium-thing==1.0", True),  # below the veto severity: reported, allowed
    ("base", "bitsandbytes==0.45.0+das.dtk25041", True),  # vendor-builds-ok
    ("base", "bitsandbytes==0.44.1", False),
    ("base", "plain-thing==1.0", True),
]


@pytest.fixture(scope="module")
def parity_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("parity-wheels")
    for name, version in (
        ("torch", "2.6.0"),
        ("fancy-kernel", "1.0+das.dtk2604"),
        ("nvidia-cublas-cu12", "12.4.5.8"),
        ("medium-thing", "1.0"),
        ("bitsandbytes", "0.45.0+das.dtk25041"),
        ("bitsandbytes", "0.44.1"),
        ("plain-thing", "1.0"),
    ):
        module = name.replace("-", "_")
        build_wheel(dest, name, version, files={f"{module}_parity/__init__.py": ""})
    return dest


@pytest.fixture(scope="module")
def parity_policies(tmp_path_factory: pytest.TempPathFactory, vendor_wheelhouse: Path) -> dict:
    dest = tmp_path_factory.mktemp("parity-policies")
    out = {}
    for name, extra in POLICIES.items():
        allow = ', dtk-allow = ["25.04", "26.04"]' if name == "allow-26.04" else ""
        head = (
            f'[policy]\nname = "parity-{name}"\nextends = ["dtk-25.04.1"]\n'
            + ('dtk-allow = ["25.04", "26.04"]\n' if allow else "")
            + f"\n[sources]\nfind-links = [{str(vendor_wheelhouse)!r}]\n\n".replace("'", '"')
        )
        path = dest / f"{name}.toml"
        path.write_text(head + extra)
        out[name] = path
    return out


def _installed(g: Guarded, req: str) -> bool:
    """Did ``req`` (``name==version``) land? Then take it out again."""
    name, _, version = req.partition("==")
    done = g.venv.installed().get(name) == version
    if done:
        assert g.pip("uninstall", "-y", name).returncode == 0
    return done


def via_hook(g: Guarded, policy: Path, wheels: Path, req: str) -> bool:
    proc = g.pip("install", "--no-deps", "--no-index", "-f", str(wheels), req)
    assert proc.returncode in (0, 1), proc.stderr
    assert (proc.returncode == 1) == ("dtkguard: refusing" in proc.stderr), proc.stderr
    return _installed(g, req)


def via_dtkpip(g: Guarded, policy: Path, wheels: Path, req: str) -> bool:
    proc = g.dtkpip("install", "--no-deps", "--no-index", "-f", str(wheels), req)
    assert proc.returncode in (0, 1), proc.stderr
    return _installed(g, req)


def via_lock(g: Guarded, policy: Path, wheels: Path, req: str) -> bool:
    out = wheels.parent / "pylock.parity.toml"
    out.unlink(missing_ok=True)
    proc = g.dtkguard(
        "lock", req, "--policy", str(policy), "--no-index", "--find-links", str(wheels),
        "-o", str(out), "-q",
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    assert (proc.returncode == 0) == out.is_file()
    return proc.returncode == 0


def via_dtkuv(g: Guarded, policy: Path, wheels: Path, req: str) -> bool:
    from tests.support.cache import uv_binary

    env = hermetic_env(UV_CACHE_DIR=str(wheels.parent / "uv-cache"), DTKGUARD_UV=uv_binary())
    proc = g.dtkguard(
        "uv", "--python", str(g.venv.python), "pip", "install", "--no-deps", "--offline",
        "--no-index", "--find-links", str(wheels), req, env=env,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    assert (proc.returncode == 1) == ("dtkuv: stopped" in proc.stderr), proc.stderr
    return _installed(g, req)


VERDICT_PATHS: dict[str, Callable[[Guarded, Path, Path, str], bool]] = {
    "pip hook": via_hook,
    "dtkpip": via_dtkpip,
    "dtkuv": via_dtkuv,
    "lock": via_lock,
}


@pytest.mark.parametrize(("policy", "req", "expected"), CASES)
def test_one_verdict(
    policy: str,
    req: str,
    expected: bool,
    guarded: Guarded,
    parity_wheels: Path,
    parity_policies: dict,
) -> None:
    path = parity_policies[policy]
    py = str(guarded.venv.python)
    proc = guarded.dtkguard("guard", "install", "--python", py, "--policy", str(path))
    assert proc.returncode == 0, proc.stderr
    try:
        verdicts = {
            route: judge(guarded, path, parity_wheels, req)
            for route, judge in VERDICT_PATHS.items()
        }
    finally:
        restore = ["guard", "install", "--python", py, "--policy", str(guarded.policy)]
        assert guarded.dtkguard(*restore).returncode == 0
    assert verdicts == dict.fromkeys(VERDICT_PATHS, expected), verdicts
    assert guarded.venv.installed()["torch"] == TORCH
    assert subprocess.run([py, "-c", "pass"]).returncode == 0
