"""The baseline of `guard install`, `check` against it and `guard status` of a tampered one.

Each route that no hook stops (a manual ``rm -rf``, a manual copy, an ``installer``-style write,
uv with ``--no-config``) damages a real guarded venv; `check` must exit 1 naming the damage.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, _build
from tests.support.cache import PIP_VERSIONS

pytestmark = pytest.mark.wheel_cache


@pytest.fixture
def env(
    tmp_path: Path,
    guard_policy: Path,
    vendor_wheelhouse: Path,
    public_dir: Path,
    extra_wheelhouse: Path,
) -> Guarded:
    """A new guarded venv (newest pip: these routes never go through pip)."""
    return _build(
        tmp_path / "venv",
        PIP_VERSIONS[-1],
        guard_policy,
        vendor_wheelhouse,
        public_dir,
        extra_wheelhouse,
    )


def baseline_of(g: Guarded) -> dict:
    return json.loads((g.venv.path / "dtkguard" / "baseline.json").read_text())


def check(g: Guarded, *args: str):
    return g.dtkguard(
        "check", "--python", str(g.venv.python), "--policy", str(g.policy), "-f", "json", *args
    )


def test_guard_install_records_the_vendor_builds(env: Guarded) -> None:
    from dtkguard.guard.baseline import is_baseline_build, load

    path = env.venv.path / "dtkguard" / "baseline.json"
    data = load(path)
    assert data is not None and data["python"] == str(env.venv.python)
    assert set(data["vendor"]) == {"torch", "torchvision", "torchaudio", "triton", "vllm"}
    assert data["dists"]["pip"]["version"] == PIP_VERSIONS[-1]
    torch = data["vendor"]["torch"]
    assert torch["version"] == TORCH and torch["top_level"] == ["torch"]
    assert torch["dist_info"] == f"torch-{TORCH}.dist-info"
    site = Path(torch["site"])
    record = site / torch["dist_info"] / "RECORD"
    assert torch["record"]["sha256"] == hashlib.sha256(record.read_bytes()).hexdigest()
    version_py = site / "torch" / "version.py"
    assert torch["files"]["torch/version.py"] == {
        "sha256": hashlib.sha256(version_py.read_bytes()).hexdigest(),
        "size": version_py.stat().st_size,
        "mtime_ns": version_py.stat().st_mtime_ns,
    }
    assert data["restore"] == f"dtkguard restore --python {env.venv.python}"
    manifest = json.loads((env.venv.path / "dtkguard" / "manifest.json").read_text())
    assert manifest["files"][str(path)]["layer"] == "baseline"
    # identity: the name and the label are not enough
    digest = torch["record"]["sha256"]
    assert is_baseline_build(data, "torch", TORCH, record_sha256=digest) is True
    assert is_baseline_build(data, "Torch", TORCH, record_sha256="0" * 64) is False
    assert is_baseline_build(data, "torch", "2.4.1", record_sha256=digest) is None
    wheel_files = {r: f["sha256"] for r, f in torch["files"].items()}
    assert is_baseline_build(data, "torch", TORCH, files=wheel_files) is True
    forged = dict(wheel_files, **{"torch/version.py": "0" * 64})
    assert is_baseline_build(data, "torch", TORCH, files=forged) is False
    assert (
        is_baseline_build(data, "torch", TORCH, files={**wheel_files, "torch/x.py": "1"}) is False
    )
    assert is_baseline_build(data, "torch", TORCH) is False


def test_guard_install_keeps_the_baseline_and_refuses_a_tampered_one(env: Guarded) -> None:
    py = str(env.venv.python)
    path = env.venv.path / "dtkguard" / "baseline.json"
    before = path.read_text()
    again = env.dtkguard("guard", "install", "--python", py, "--policy", str(env.policy))
    assert again.returncode == 0 and "written" not in again.stdout, again.stdout
    assert path.read_text() == before
    data = json.loads(before)
    data["vendor"]["torch"]["record"]["sha256"] = "0" * 64  # bless another build
    path.write_text(json.dumps(data))
    status = env.dtkguard("guard", "status", "--python", py)
    assert status.returncode == 1
    assert any(
        line.split()[:2] == ["tampered", "baseline"] for line in status.stdout.splitlines()
    ), status.stdout
    refused = env.dtkguard("guard", "install", "--python", py, "--policy", str(env.policy))
    assert refused.returncode == 2 and "--rebaseline" in refused.stderr
    path.unlink()
    missing = env.dtkguard("guard", "status", "--python", py)
    assert missing.returncode == 1 and "absent  baseline" in missing.stdout


def test_guard_install_refuses_to_record_a_damaged_vendor_build(
    tmp_path: Path, env: Guarded
) -> None:
    py = str(env.venv.python)
    assert env.dtkguard("guard", "remove", "--python", py).returncode == 0
    assert not (env.venv.path / "dtkguard").exists()
    (env.venv.site_packages / "torch" / "version.py").write_text("hip = None\ncuda = '12.4'\n")
    before = env.venv.snapshot()
    proc = env.dtkguard("guard", "install", "--python", py, "--policy", str(env.policy))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "torch/version.py (modified)" in proc.stderr
    assert env.venv.snapshot() == before  # nothing written


def test_guard_remove_removes_the_baseline_and_the_tripwire(env: Guarded) -> None:
    py = str(env.venv.python)
    assert env.dtkguard("guard", "remove", "--python", py).returncode == 0
    assert not (env.venv.path / "dtkguard").exists()
    assert not list(env.venv.site_packages.glob("*dtkguard*"))
    assert not list((env.venv.site_packages / "__pycache__").glob("*dtkguard*"))


def test_compare_hashes_only_what_changed(env: Guarded) -> None:
    from dtkguard.guard.baseline import CompareStats, compare, load

    data = load(env.venv.path / "dtkguard" / "baseline.json")
    assert data is not None
    total = sum(len(e["files"]) + 1 for e in data["vendor"].values())
    stats = CompareStats()
    assert compare(data, stats=stats) == []
    assert (stats.stated, stats.hashed) == (total, 0)
    site = env.venv.site_packages
    # same bytes, new mtime (a reinstall of the same build): hashed, and not a change
    init = site / "torch" / "__init__.py"
    os.utime(init, ns=(init.stat().st_atime_ns, init.stat().st_mtime_ns + 10**9))
    # same size, other bytes: hashed, a change
    version = site / "torch" / "version.py"
    text = version.read_text()
    forged = text.replace("cuda: Optional[str] = None", "cuda: Optional[str] = '12'")
    assert forged != text and len(forged) == len(text)
    version.write_text(forged)
    stats = CompareStats()
    changes = compare(data, stats=stats)
    assert [(c.key, c.kind, c.files) for c in changes] == [
        ("torch", "files", [("torch/version.py", "modified")])
    ]
    assert stats.stated == total
    assert stats.hashed == 2  # __init__.py and version.py: their size is unchanged
    # a size change needs no hashing
    version.write_text(forged + "# more\n")
    stats = CompareStats()
    assert [c.files for c in compare(data, stats=stats)] == [[("torch/version.py", "modified")]]
    assert stats.hashed == 1
