"""The baseline of `guard install`, `check` against it and `guard status` of a tampered one.

Each route that no hook stops (a manual ``rm -rf``, a manual copy, an ``installer``-style write,
uv with ``--no-config``) damages a real guarded venv; `check` must exit 1 naming the damage.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.guard.conftest import REPO, TORCH, Guarded, _build
from tests.support.cache import PIP_VERSIONS
from tests.support.sitetree import add_egg
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache


@pytest.fixture
def env(tmp_path: Path, request: pytest.FixtureRequest) -> Guarded:
    """A new guarded venv (newest pip: these routes never go through pip)."""
    inputs = ("guard_policy", "vendor_wheelhouse", "public_dir", "extra_wheelhouse")
    return _build(
        tmp_path / "venv", PIP_VERSIONS[-1], *(request.getfixturevalue(n) for n in inputs)
    )


def baseline_of(g: Guarded) -> dict:
    return json.loads(g.store.baseline.read_text())


def check(g: Guarded, *args: str):
    return g.dtkguard(
        "check", "--python", str(g.venv.python), "--policy", str(g.policy), "-f", "json", *args
    )


def test_guard_install_records_the_vendor_builds(env: Guarded) -> None:
    from dtkguard.env.baseline import is_baseline_build, load

    path = env.store.baseline
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
    st = version_py.stat()
    # size, inode and st_ctime_ns (which os.utime cannot set back) are the fast pass's keys
    assert torch["files"]["torch/version.py"] == {
        "sha256": hashlib.sha256(version_py.read_bytes()).hexdigest(),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ino": st.st_ino,
        "ctime_ns": st.st_ctime_ns,
    }
    assert data["restore"] == f"dtkguard restore --python {env.venv.python}"
    manifest = json.loads(env.store.manifest.read_text())
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


def test_the_identity_of_a_wheel_by_its_record_and_the_lock(
    env: Guarded, vendor_wheelhouse: Path, public_dir: Path
) -> None:
    """`guard install --lock` records the lock's wheel hashes; a wheel's RECORD rows or its
    sha256 tell the vendor build from a relabelled one."""
    from dtkguard.env.baseline import is_baseline_build, load

    lock = REPO / "lockfiles" / "pylock.das-25041-vllm.toml"
    py = str(env.venv.python)
    proc = env.dtkguard("guard", "install", "--python", py, "--lock", str(lock))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0].split()[:2] == ["written", "baseline"]
    data = load(env.store.baseline)
    assert data is not None and data["lock"]["path"] == str(lock)
    vendor = vendor_wheelhouse / f"torch-{TORCH}-py3-none-any.whl"
    wheel_sha = hashlib.sha256(vendor.read_bytes()).hexdigest()
    assert data["lock"]["packages"]["torch"]["wheels"][0]["hashes"]["sha256"] == wheel_sha
    assert is_baseline_build(data, "torch", TORCH, wheel_sha256=wheel_sha) is True
    other = hashlib.sha256(community_torch(public_dir).read_bytes()).hexdigest()
    assert is_baseline_build(data, "torch", TORCH, wheel_sha256=other) is False

    def record_rows(wheel: Path) -> dict[str, str]:
        with zipfile.ZipFile(wheel) as zf:
            name = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
            rows = [line.split(",") for line in zf.read(name).decode().splitlines()]
        return {r[0]: r[1] for r in rows if r[1]}

    assert is_baseline_build(data, "torch", TORCH, files=record_rows(vendor)) is True
    community = record_rows(community_torch(public_dir))
    assert is_baseline_build(data, "torch", TORCH, files=community) is False


def test_guard_install_keeps_the_baseline_and_refuses_a_tampered_one(env: Guarded) -> None:
    py = str(env.venv.python)
    path = env.store.baseline
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
    tampered = findings(env)
    assert ("baseline-tampered", str(path)) in tampered
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
    from dtkguard.env.baseline import CompareStats, compare, load

    data = load(env.store.baseline)
    assert data is not None
    # every recorded file and RECORD, but not what pip wrote itself (INSTALLER, REQUESTED)
    own = [r for e in data["vendor"].values() for r in e["files"]]
    total = len(data["vendor"]) + sum(not r.endswith(("/INSTALLER", "/REQUESTED")) for r in own)
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


# --- routes no hook sees: check exit 1 naming the damage, the tripwire warns on import -------


def import_torch(g: Guarded) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(g.venv.python), "-c", "import torch; print(torch.__file__)"],
        env=hermetic_env(),
        capture_output=True,
        text=True,
    )


def findings(g: Guarded) -> dict[tuple[str, str], dict]:
    proc = check(g)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return {(f["rule"], f["subject"]): f for f in json.loads(proc.stdout)["findings"]}


def write_wheel(wheel: Path, site: Path) -> None:
    """What ``python -m installer`` does with a purelib wheel: write its files, nothing else."""
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    for info in site.glob("*.dist-info"):
        if zf.namelist()[0].split("/")[0] in info.name or info.name in zf.namelist()[-1]:
            (info / "INSTALLER").write_text("installer\n")


def community_torch(public_dir: Path) -> Path:
    return public_dir / "torch-2.4.1-py3-none-any.whl"


def restore_hint(g: Guarded) -> str:
    return f"dtkguard restore --python {g.venv.python}"


def test_rm_rf_of_a_vendor_dist(env: Guarded) -> None:
    site = env.venv.site_packages
    shutil.rmtree(site / f"torch-{TORCH}.dist-info")
    shutil.rmtree(site / "torch")
    found = findings(env)
    missing = found[("vendor-missing", "torch")]
    assert missing["severity"] == "critical" and TORCH in missing["message"]
    assert missing["remediation"].endswith(restore_hint(env))
    proc = import_torch(env)
    assert proc.returncode == 1 and "ModuleNotFoundError" in proc.stderr
    assert f"dtkguard: torch {TORCH} is gone" in proc.stderr
    assert restore_hint(env) in proc.stderr


def test_manual_copy_over_torch_version_py(env: Guarded, public_dir: Path, tmp_path: Path) -> None:
    site = env.venv.site_packages
    with zipfile.ZipFile(community_torch(public_dir)) as zf:
        (site / "torch" / "version.py").write_bytes(zf.read("torch/version.py"))
    found = findings(env)
    changed = found[("vendor-files-changed", "torch")]
    assert "torch/version.py (modified)" in changed["message"]
    assert changed["evidence"]["files"] == [{"path": "torch/version.py", "change": "modified"}]
    assert ("torch-build", "torch") in found
    proc = import_torch(env)
    assert proc.returncode == 0, proc.stderr
    assert "torch/version.py (modified)" in proc.stderr and restore_hint(env) in proc.stderr
    # on-import = "error": the import is refused
    strict = tmp_path / "strict.toml"
    strict.write_text(
        f'[policy]\nname = "strict"\nextends = [{str(env.policy)!r}]\n\n'
        '[guard]\non-import = "error"\n'.replace("'", '"')
    )
    proc = env.dtkguard(
        "guard", "install", "--python", str(env.venv.python), "--policy", str(strict)
    )
    assert proc.returncode == 0, proc.stderr
    refused = import_torch(env)
    assert refused.returncode == 1
    assert "ImportError: dtkguard: torch" in refused.stderr
    assert "torch/version.py (modified)" in refused.stderr


def test_installer_style_write_of_a_community_torch(env: Guarded, public_dir: Path) -> None:
    write_wheel(community_torch(public_dir), env.venv.site_packages)
    found = findings(env)
    changed = found[("vendor-files-changed", "torch")]
    assert "torch/__init__.py (modified)" in changed["message"]
    assert "torch/version.py (modified)" in changed["message"]
    proc = import_torch(env)
    assert "dtkguard: torch" in proc.stderr and "torch/version.py (modified)" in proc.stderr


def test_a_relabelled_build_is_not_the_vendor_build(
    env: Guarded, public_dir: Path, tmp_path: Path
) -> None:
    """A community torch renamed to the vendor's name and label, written over it."""
    with zipfile.ZipFile(community_torch(public_dir)) as zf:
        files = {n: zf.read(n) for n in zf.namelist() if not n.startswith("torch-")}
    forged = build_wheel(tmp_path / "forged", "torch", TORCH, files=files)
    site = env.venv.site_packages
    shutil.rmtree(site / f"torch-{TORCH}.dist-info")
    write_wheel(forged, site)
    listed = env.venv.installed()
    assert listed["torch"] == TORCH  # the name and the label are the vendor's
    found = findings(env)
    assert found[("vendor-not-baseline", "torch")]["severity"] == "critical"
    assert ("vendor-files-changed", "torch") in found
    assert ("vendor-replaced", "torch") not in found  # the label alone looks right
    proc = import_torch(env)
    assert "dtkguard: torch" in proc.stderr and "RECORD (modified)" in proc.stderr


def test_uv_no_config_replaces_torch(
    env: Guarded, public_dir: Path, uv: str, tmp_path: Path
) -> None:
    proc = subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--python",
            str(env.venv.python),
            "--no-config",
            "--offline",
            "--no-index",
            "--find-links",
            str(public_dir),
            "--no-deps",
            "--reinstall",
            "torch==2.4.1",
        ],
        env=hermetic_env(UV_CACHE_DIR=str(tmp_path / "uv-cache")),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert env.venv.installed()["torch"] == "2.4.1"
    found = findings(env)
    assert ("vendor-missing", "torch") in found and ("vendor-replaced", "torch") in found
    assert "2.4.1 is there now" in found[("vendor-missing", "torch")]["message"]
    assert f"dtkguard: torch {TORCH} is gone" in import_torch(env).stderr


def test_an_egg_in_front_of_the_vendor_torch(env: Guarded, public_dir: Path) -> None:
    """``setup.py install`` of old setuptools: an egg and easy-install.pth, nothing removed."""
    with zipfile.ZipFile(community_torch(public_dir)) as zf:
        files = {n: zf.read(n).decode() for n in zf.namelist() if n.startswith("torch/")}
    egg = add_egg(env.venv.site_packages, "torch", "2.4.1", files)
    found = findings(env)
    assert egg.name in found[("vendor-replaced", "torch")]["location"]
    proc = import_torch(env)
    assert egg.name in proc.stdout  # the egg is what `import torch` loads
    assert f"loads {egg}/torch/__init__.py, not the vendor build torch {TORCH}" in proc.stderr


def test_a_clean_guarded_env_is_quiet(env: Guarded) -> None:
    proc = check(env)
    assert proc.returncode == 0, proc.stdout
    imported = import_torch(env)
    assert imported.returncode == 0 and imported.stderr == ""


def test_a_reinstall_of_the_same_vendor_build_is_not_damage(
    env: Guarded, vendor_wheelhouse: Path, uv: str, tmp_path: Path
) -> None:
    """pip (with .pyc rows and REQUESTED) and then uv (no .pyc, INSTALLER=uv) rewrite RECORD
    and every mtime, not the build: check stays clean; `guard install` then refreshes the
    stats, so the tripwire is quiet again."""
    py = str(env.venv.python)
    wheel = vendor_wheelhouse / f"torch-{TORCH}-py3-none-any.whl"
    pip = env.pip("install", "--no-index", "--no-deps", "--force-reinstall", str(wheel))
    assert pip.returncode == 0, pip.stderr
    assert check(env).returncode == 0, check(env).stdout
    uv_env = hermetic_env(UV_CACHE_DIR=str(tmp_path / "uv-cache"))
    args = ["--no-config", "--offline", "--no-index", "--no-deps", "--reinstall", str(wheel)]
    proc = subprocess.run(
        [uv, "pip", "install", "--python", py, *args], env=uv_env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    record = env.venv.site_packages / f"torch-{TORCH}.dist-info" / "RECORD"
    assert ".pyc" not in record.read_text()  # uv rewrote it
    proc = check(env)
    assert proc.returncode == 0, proc.stdout
    assert "RECORD (modified)" in import_torch(env).stderr  # stat only: it cannot know
    again = env.dtkguard("guard", "install", "--python", py, "--policy", str(env.policy))
    assert again.returncode == 0 and "written  baseline" in again.stdout, again.stdout
    imported = import_torch(env)
    assert imported.returncode == 0 and imported.stderr == ""


def test_pyc_files_are_derived_but_a_planted_one_is_damage(env: Guarded) -> None:
    from dtkguard.env.baseline import compare, load

    data = load(env.store.baseline)
    assert data is not None
    pycs = sorted((env.venv.site_packages / "torch" / "__pycache__").glob("version.*.pyc"))
    assert pycs and any(r.endswith(pycs[0].name) for r in data["vendor"]["torch"]["files"])
    pycs[0].unlink()  # Python writes it again: not a change
    assert compare(data) == []
    pycs[0].write_bytes(b"planted" * 40)
    changes = compare(data)
    assert [(c.kind, c.files) for c in changes] == [
        ("files", [(f"torch/__pycache__/{pycs[0].name}", "modified")])
    ]
