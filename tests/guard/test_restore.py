# ruff: noqa: F811  (the `env` fixture is imported, and taken as an argument)
"""`dtkguard restore` with real pip in real guarded venvs: each way of clobbering the DAS-like
env ends, after restore, byte-identical to the baseline (every vendor file; `audit
--verify-files` clean); the plan is printed first; bad input exits 2, an unreadable target 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded
from tests.guard.test_baseline import env  # noqa: F401  (a new guarded venv, newest pip)
from tests.support.cache import PIP_VERSIONS
from tests.support.cli import command
from tests.support.reports import DAS_25041
from tests.support.venvs import hermetic_env

pytestmark = pytest.mark.wheel_cache

OVERRIDE = hermetic_env(DTKGUARD_OVERRIDE="test: clobber on purpose")


def files(g: Guarded) -> dict[str, str]:
    """Every file of the venv but dtkguard's own state (the journal grows by design)."""
    return {k: v for k, v in g.venv.snapshot().items() if not k.startswith("dtkguard/")}


def restore(g: Guarded, *args: str):
    """``dtkguard restore`` as a script runs it (``--yes``: no terminal to ask on)."""
    return g.dtkguard("restore", "--python", str(g.venv.python), "--yes", *args)


def verify_clean(g: Guarded) -> None:
    proc = g.dtkguard(
        "audit",
        "--python",
        str(g.venv.python),
        "--verify-files",
        "-f",
        "json",
        "--policy",
        str(g.policy),
    )
    data = json.loads(proc.stdout)
    bad = [f for f in data["findings"] if f["rule"].startswith("record")]
    assert bad == [], bad


def pip_runs(proc) -> list[str]:
    """The pip runs a restore made, as its ``-v`` names them (``WHAT: pip ARGS``)."""
    lines = [ln.removeprefix("dtkguard: ") for ln in proc.stderr.splitlines()]
    return [ln.split(": pip ", 1)[0] for ln in lines if ": pip " in ln]


def assert_back(g: Guarded, before: dict[str, str], before_set: dict[str, str]) -> None:
    assert g.venv.installed() == before_set
    after = files(g)
    assert sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)) == []
    verify_clean(g)


def test_vllm_092_clobber_is_restored(env: Guarded) -> None:
    g = env
    before, before_set = files(g), g.venv.installed()
    proc = g.pip("install", *g.index_args, "vllm==0.9.2", env=OVERRIDE)
    assert proc.returncode == 0, proc.stderr
    clobbered = g.venv.installed()
    assert clobbered["torch"] == "2.7.0" and clobbered["vllm"] == "0.9.2"
    assert sum(k.startswith("nvidia-") for k in clobbered) == 14

    plan = restore(g, "--dry-run")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    text = plan.stdout
    assert "Remove (" in text and "14 nvidia-* CUDA wheel(s)" in text
    assert (
        f"the vendor build torch {TORCH}, in place of torch 2.7.0 (a community CUDA build)" in text
    )
    assert f"vllm {DAS_25041['vllm']}" in text
    assert "checked: every file's sha256 of the baseline" in text
    assert "Dry run: nothing was changed" in text
    assert g.venv.installed() == clobbered

    # exactly the command the baseline (and so check and the tripwire) names
    named = json.loads(g.store.baseline.read_text())["restore"]
    assert named == f"dtkguard restore --python {g.venv.python}"
    proc = g.dtkguard(*named.split()[1:], "--yes", "-v")  # a script: no terminal to ask on
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "matches its baseline again" in proc.stdout
    assert_back(g, before, before_set)
    # one pip run: what came in goes without pip (the journal kept its files; the bytes left
    # are what `pip uninstall` leaves, checked above), every checked wheel comes back in one
    assert pip_runs(proc) == ["pip install of the checked wheels"], proc.stderr
    assert "removed without a pip run: " in proc.stderr
    # the override records that let the clobber in were archived with the restore
    assert not g.store.overrides.exists()
    check = g.dtkguard("check", "--python", str(g.venv.python), "--policy", str(g.policy))
    assert check.returncode == 0, check.stdout
    # and a second restore has nothing to do
    again = restore(g)
    assert again.returncode == 0 and "nothing to do" in again.stdout


def test_removed_vendor_build_comes_back(env: Guarded) -> None:
    g = env
    before, before_set = files(g), g.venv.installed()
    proc = g.pip("uninstall", "-y", "torchaudio", env=OVERRIDE)
    assert proc.returncode == 0, proc.stderr
    assert "torchaudio" not in g.venv.installed()
    proc = restore(g)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"torchaudio {DAS_25041['torchaudio']}, not installed" in proc.stdout
    assert_back(g, before, before_set)


def test_wheel_that_overwrote_torch_version_py(env: Guarded, tmp_path: Path) -> None:
    from tests.support.wheels import build_wheel

    g = env
    before, before_set = files(g), g.venv.installed()
    house = tmp_path / "house"
    build_wheel(house, "sneaky", "1.0", files={"torch/version.py": "__version__ = '2.7.0'\n"})
    proc = g.pip("install", "--no-index", "-f", str(house), "sneaky", env=OVERRIDE)
    assert proc.returncode == 0, proc.stderr
    version_py = next(g.venv.site_packages.glob("torch/version.py"))
    assert "2.7.0" in version_py.read_text()
    plan = restore(g, "--dry-run").stdout
    assert "sneaky 1.0: added after the baseline" in plan
    assert "torch/version.py modified" in plan
    proc = restore(g)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_back(g, before, before_set)


def test_restore_from_the_vault_needs_no_wheelhouse(env: Guarded, tmp_path: Path) -> None:
    g = env
    proc = g.dtkguard(
        "guard", "install", "--python", str(g.venv.python), "--policy", str(g.policy), "--vault"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "vault" in proc.stdout and "5 wheel(s)" in proc.stdout
    status = g.dtkguard("guard", "status", "--python", str(g.venv.python))
    assert "vault" in status.stdout and "5 wheel(s)" in status.stdout
    before, before_set = files(g), g.venv.installed()
    proc = g.pip("install", *g.index_args, "vllm==0.9.2", env=OVERRIDE)
    assert proc.returncode == 0, proc.stderr
    # the policy's wheelhouse is gone: only the vault can help
    policy = tmp_path / "nowheels.toml"
    policy.write_text('[policy]\nname = "site-das"\nextends = ["dtk-25.04.1"]\n')
    proc = restore(g, "--policy", str(policy))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "from the vault" in proc.stdout
    assert_back(g, before, before_set)


def test_a_tampered_vault_wheel_is_not_installed(env: Guarded, tmp_path: Path) -> None:
    """A vault wheel swapped for another build of the same name and version: the hash check
    against the baseline skips it; with no other source the build is reported, not installed."""
    import zipfile

    g = env
    proc = g.dtkguard(
        "guard", "install", "--python", str(g.venv.python), "--policy", str(g.policy), "--vault"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheel = next(g.store.vault.glob("torchaudio-*.whl"))
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("torchaudio/_cuda_kernels.py", "evil = True\n")
    assert g.pip("uninstall", "-y", "torchaudio", env=OVERRIDE).returncode == 0
    policy = tmp_path / "nowheels.toml"
    policy.write_text('[policy]\nname = "site-das"\nextends = ["dtk-25.04.1"]\n')
    proc = restore(g, "--policy", str(policy))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Cannot restore (1):" in proc.stdout
    assert "differs from the baseline's files" in proc.stdout
    assert "torchaudio" not in g.venv.installed()


def test_vault_refuses_a_modified_build(env: Guarded) -> None:
    g = env
    init = g.venv.site_packages / "triton" / "__init__.py"
    init.write_text(init.read_text() + "# tampered\n")
    proc = g.dtkguard(
        "guard", "install", "--python", str(g.venv.python), "--policy", str(g.policy), "--vault"
    )
    assert proc.returncode == 1
    assert "refused" in proc.stdout and "triton" in proc.stdout and "modified" in proc.stdout
    assert not list(g.store.vault.glob("triton-*.whl"))


def test_bad_input_and_unreadable_target(env: Guarded, tmp_path: Path) -> None:
    g = env
    bad = tmp_path / "bad.toml"
    bad.write_text("lock-version = [\n")
    proc = restore(g, "--to", str(bad))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr
    proc = g.dtkguard("restore", "--python", str(tmp_path / "nope" / "python"))
    assert proc.returncode == 3 and len(proc.stderr.strip().splitlines()) == 1
    baseline = g.store.baseline
    baseline.write_text(baseline.read_text().replace('"torch"', '"torch" ', 1))
    proc = restore(g)
    assert proc.returncode == 2 and "cannot be trusted" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    baseline.write_text("{not json")
    proc = restore(g)
    assert proc.returncode == 2 and "baseline" in proc.stderr and "Traceback" not in proc.stderr


def test_egg_install_over_the_vendor_build(env: Guarded, tmp_path: Path) -> None:
    """``python setup.py install`` of a community torch: a second torch (an .egg-info) whose
    files overwrote the vendor build's, beside the vendor dist-info; pip never saw it."""
    from tests.support.cache import find_wheel

    g = env
    before, before_set = files(g), g.venv.installed()
    wheel = find_wheel("setuptools")
    assert g.pip("install", "--no-index", "-f", str(wheel.parent), "setuptools").returncode == 0
    proj = tmp_path / "proj"
    (proj / "torch").mkdir(parents=True)
    (proj / "setup.py").write_text(
        'from setuptools import setup\nsetup(name="torch", version="2.7.0", packages=["torch"])\n'
    )
    (proj / "torch" / "__init__.py").write_text("__version__ = '2.7.0'\n")
    (proj / "torch" / "version.py").write_text("__version__ = '2.7.0'\n")
    proc = g.venv.run("setup.py", "-q", "install", cwd=proj, check=False)
    assert proc.returncode == 0, proc.stderr
    assert list(g.venv.site_packages.glob("torch-2.7.0-*.egg-info"))
    plan = restore(g, "--dry-run").stdout
    assert "torch 2.7.0 (a community build) (an egg install): a second install" in plan
    assert "setuptools" in plan
    proc = restore(g)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not list(g.venv.site_packages.glob("torch-*.egg-info"))
    assert_back(g, before, before_set)


def test_restore_killed_mid_way_and_run_again_ends_clean(env: Guarded, tmp_path: Path) -> None:
    """SIGKILL to the restore (and its pip) after the removals, before the vendor builds are
    back; the next restore first rolls the half-done one back, then restores."""
    import os
    import signal
    import subprocess

    g = env
    # a .pth that, once armed, stops pip's install step where it starts: the removals are done,
    # the vendor builds not yet back; it is part of the venv before and after
    armed, ready = tmp_path / "armed", tmp_path / "ready"
    (g.venv.site_packages / "zz_pause_restore.pth").write_text(
        "import os, sys, time; "
        f"a = {str(armed)!r}; "
        "p = ('--require-hashes' in sys.argv) and os.path.exists(a); "
        f"p and (os.unlink(a), open({str(ready)!r}, 'w').close(), time.sleep(600))\n"
    )
    before, before_set = files(g), g.venv.installed()
    assert g.pip("install", *g.index_args, "vllm==0.9.2", env=OVERRIDE).returncode == 0
    clobbered_files, clobbered = files(g), g.venv.installed()
    armed.touch()
    env = hermetic_env(PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    cmd = command("restore", "--python", g.venv.python, "--yes")
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        while not ready.exists():  # waits on an effect, not on a clock
            assert proc.poll() is None, proc.communicate()
            os.sched_yield()
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    half = g.venv.installed()
    assert not any(k.startswith("nvidia-") for k in half)  # the removals had happened
    assert half != clobbered and half != before_set
    proc2 = restore(g)
    assert proc2.returncode == 0, proc2.stdout + proc2.stderr
    assert "did not finish; rolling the environment back" in proc2.stderr
    assert_back(g, before, before_set)
    hist = g.dtkguard("history", "--python", str(g.venv.python), "--json")
    states = [t["state"] for t in json.loads(hist.stdout)]
    assert states == ["rolled-back", "committed"]
    assert clobbered_files != before


def _lock_of(installed: dict[str, str], houses: list[Path], dest: Path) -> Path:
    """A PEP 751 lock of exactly ``installed``: each wheel by path, with its sha256."""
    import hashlib

    from packaging.utils import parse_wheel_filename
    from packaging.version import Version

    wheels = {}
    for house in houses:
        for w in house.glob("*.whl"):
            name, version, _, _ = parse_wheel_filename(w.name)
            wheels[(str(name), version)] = w.resolve()
    out = ['lock-version = "1.0"', 'created-by = "tests"', ""]
    for name, version in sorted(installed.items()):
        w = wheels.get((name, Version(version)))
        if w is None:  # pip itself: not in the wheelhouses, left alone by a lock restore
            continue
        digest = hashlib.sha256(w.read_bytes()).hexdigest()
        out += [
            "[[packages]]",
            f'name = "{name}"',
            f'version = "{version}"',
            f'wheels = [{{ name = "{w.name}", path = "{w}", hashes = {{ sha256 = "{digest}" }} }}]',
            "",
        ]
    dest.write_text("\n".join(out))
    return dest


def test_restore_to_a_lock(env: Guarded, tmp_path: Path, vendor_wheelhouse: Path) -> None:
    """`--to pylock.toml` with no baseline: the lock's paths and hashes are the only source."""
    g = env
    before, before_set = files(g), g.venv.installed()
    houses = [vendor_wheelhouse, Path(g.index_args[2])]
    lock = _lock_of(before_set, houses, tmp_path / "pylock.env.toml")
    g.store.baseline.unlink()  # and out of the store's manifest: a guard without a baseline
    manifest = json.loads(g.store.manifest.read_text())
    del manifest["files"][str(g.store.baseline)]
    g.store.manifest.write_text(json.dumps(manifest))
    before = files(g)
    assert g.pip("install", *g.index_args, "vllm==0.9.2", env=OVERRIDE).returncode == 0
    policy = tmp_path / "nowheels.toml"
    policy.write_text('[policy]\nname = "site-das"\nextends = ["dtk-25.04.1"]\n')
    proc = restore(g, "--to", str(lock), "--policy", str(policy))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "back to the lock" in proc.stdout and "checked: sha256 of the lock" in proc.stdout
    assert_back(g, before, before_set)
    # the guard had no baseline: the lock's state, every wheel checked, becomes it
    assert "dtkguard restore: recorded " in proc.stdout and "(baseline)" in proc.stdout
    assert json.loads(g.store.baseline.read_text())["lock"]["path"] == str(lock)
    # a lock whose hash for torchaudio is not the wheel's: that build is not installed
    import re

    text = lock.read_text()
    entry = text.index('name = "torchaudio"')
    digest = re.compile(r'sha256 = "([0-9a-f]{64})"').search(text, entry)
    assert digest is not None
    tampered = tmp_path / "pylock.bad.toml"
    tampered.write_text(text[: digest.start(1)] + "0" * 64 + text[digest.end(1) :])
    assert g.pip("uninstall", "-y", "torchaudio", env=OVERRIDE).returncode == 0
    proc = restore(g, "--to", str(tampered), "--policy", str(policy))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Cannot restore (1):" in proc.stdout and "matches no hash of the lock" in proc.stdout
    assert "torchaudio" not in g.venv.installed()


def test_a_build_installed_as_a_dependency_comes_back_as_one(
    tmp_path: Path, guard_policy: Path, vendor_wheelhouse: Path, public_dir: Path
) -> None:
    """triton pulled in by torch has no REQUESTED marker (and RECORD has no row for one): the
    restored triton must not gain one, or its RECORD would differ from the baseline's."""
    from tests.support.venvs import make_venv

    venv = make_venv(tmp_path / "venv", pip_version=PIP_VERSIONS[-1])
    index = ["--no-index", "-f", str(public_dir), "-f", str(vendor_wheelhouse)]
    venv.pip("install", *index, f"torch=={TORCH}")
    g = Guarded(venv, guard_policy, index, tmp_path)
    proc = g.dtkguard(
        "guard", "install", "--python", str(venv.python), "--policy", str(guard_policy)
    )
    assert proc.returncode == 0, proc.stderr
    triton_info = next(venv.site_packages.glob("triton-*.dist-info"))
    assert not (triton_info / "REQUESTED").exists()
    before, before_set = files(g), venv.installed()
    assert g.pip("install", *index, "triton==3.3.0", "--no-deps", env=OVERRIDE).returncode == 0
    assert venv.installed()["triton"] == "3.3.0"
    proc = restore(g, "-v")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (triton_info / "REQUESTED").exists()
    assert_back(g, before, before_set)
    # one pip run: triton named like torch (pip replaces 3.3.0), its REQUESTED marker and
    # that marker's RECORD row taken out again
    assert pip_runs(proc) == ["pip install of the checked wheels"], proc.stderr


def test_a_build_whose_requirements_were_not_installed_comes_back_with_no_deps(
    tmp_path: Path, guard_policy: Path, vendor_wheelhouse: Path, public_dir: Path
) -> None:
    """torch installed with ``--no-deps`` (its requirements never were there) comes back in
    one ``--no-deps`` run, byte for byte, nothing else installed."""
    from tests.support.venvs import make_venv

    venv = make_venv(tmp_path / "venv", pip_version=PIP_VERSIONS[-1])
    vendor = ["--no-index", "-f", str(vendor_wheelhouse)]
    assert venv.pip("install", *vendor, "--no-deps", f"torch=={TORCH}").returncode == 0
    g = Guarded(venv, guard_policy, ["--no-index", "-f", str(public_dir)], tmp_path)
    proc = g.dtkguard(
        "guard", "install", "--python", str(venv.python), "--policy", str(guard_policy)
    )
    assert proc.returncode == 0, proc.stderr
    before, before_set = files(g), venv.installed()
    clobber = ["--no-index", "-f", str(public_dir), "--no-deps", "torch==2.7.0"]
    assert g.pip("install", *clobber, env=OVERRIDE).returncode == 0
    proc = restore(g, "-v")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert pip_runs(proc) == ["pip install of the checked wheels"], proc.stderr
    assert_back(g, before, before_set)


def test_other_packages_come_back_from_the_journal(env: Guarded) -> None:
    """A package that is not a vendor build, changed by a journalled dtkpip run, comes back
    from the files the journal kept (checked against its own RECORD), not from an index."""
    g = env
    before, before_set = files(g), g.venv.installed()
    other = "2024.12.0" if before_set["fsspec"] != "2024.12.0" else "2026.9.0"
    proc = g.dtkpip("install", *g.index_args, "--no-deps", f"fsspec=={other}")
    assert proc.returncode == 0, proc.stderr
    # an approved change moved the baseline: nothing to restore, unless to `guard install`
    assert "nothing to do" in restore(g, "--dry-run").stdout
    proc = restore(g, "--dry-run", "--to", "guard-install")
    assert "from the journal (transaction 1)" in proc.stdout, proc.stdout
    assert "RECORD, file by file" in proc.stdout
    proc = g.dtkguard(
        "restore", "--python", str(g.venv.python), "--to", "guard-install", "--yes",
        env=hermetic_env(PIP_NO_INDEX="1"),  # no index at all: only the journal can help
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_back(g, before, before_set)
    # and the baseline is back at `guard install` too: a plain restore has nothing to do
    assert "nothing to do" in restore(g, "--dry-run").stdout


def test_builds_installed_from_a_path_come_back_from_it(
    tmp_path: Path, guard_policy: Path, vendor_wheelhouse: Path, public_dir: Path
) -> None:
    """`pip install ./torch-...whl` writes direct_url.json (in RECORD): the restore installs
    from that same wheel while it exists, so every file, RECORD included, is the baseline's."""
    from tests.support.venvs import make_venv

    venv = make_venv(tmp_path / "venv", pip_version=PIP_VERSIONS[-1])
    index = ["--no-index", "-f", str(public_dir)]
    wheels = [next(vendor_wheelhouse.glob(f"{n}-*.whl")) for n in ("torch", "triton")]
    venv.pip("install", *index, *map(str, wheels))
    g = Guarded(venv, guard_policy, index, tmp_path)
    proc = g.dtkguard(
        "guard", "install", "--python", str(venv.python), "--policy", str(guard_policy)
    )
    assert proc.returncode == 0, proc.stderr
    assert list(venv.site_packages.glob("torch-*.dist-info/direct_url.json"))
    before, before_set = files(g), venv.installed()
    assert g.pip("uninstall", "-y", "torch", "triton", env=OVERRIDE).returncode == 0
    proc = restore(g)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "from the wheel it was installed from" in proc.stdout
    assert_back(g, before, before_set)
