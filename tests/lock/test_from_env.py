"""`dtkguard lock --from-env`: an installed set back into a lock, matched by RECORD."""

from __future__ import annotations

import shutil

from dtkguard.lock.read import files, read_lock
from tests.support.venvs import make_venv
from tests.support.wheels import build_wheel

from .conftest import HERE, run_cli


def test_from_env_matches_wheels_by_record_and_keeps_the_rest(
    tmp_path, das_wheelhouses, portable_index
):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(das_wheelhouses[1], work / "vendor")
    args = ("--vendor-find-links", "vendor", "--index-url", portable_index.url)
    proc = run_cli("lock", "vllm", *args, *HERE, "-o", "pylock.das.toml", cwd=work)
    assert proc.returncode == 0, proc.stderr
    venv = make_venv(tmp_path / "img", with_pip=False)
    venv.uv_pip("sync", "--preview-features", "pylock", work / "pylock.das.toml")
    # vllm is reinstalled from another build of the same version (its RECORD differs); an
    # unknown dist is added by hand
    other_build = tmp_path / "rebuild"
    build_wheel(other_build, "vllm", "0.8.5.post1+das.opt1.dtk25041", files={"vllm/x.py": "1\n"})
    venv.uv_pip("install", "--reinstall", "--no-deps", next(other_build.glob("*.whl")))
    local = venv.site_packages / "site_tool-1.0.dist-info"
    local.mkdir()
    (local / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: site-tool\nVersion: 1.0\n"
        "Requires-Dist: torch>=2\nRequires-Dist: not-installed\n\n"
    )
    (local / "RECORD").write_text("site_tool-1.0.dist-info/METADATA,,\n")

    proc = run_cli(
        "lock",
        "--from-env",
        "--path",
        venv.site_packages,
        *args,
        *HERE,
        "-o",
        "pylock.env.toml",
        cwd=work,
    )
    assert proc.returncode == 0, proc.stderr
    # the closure check reads installed-only dists too (site-tool's metadata from the env)
    assert "warning: site-tool 1.0 requires not-installed, which the lock" in proc.stderr
    assert "requires torch" not in proc.stderr
    env_lock = read_lock(work / "pylock.env.toml")
    orig = read_lock(work / "pylock.das.toml")
    by_name = env_lock.by_name()
    # every dist is in the lock, with the version installed
    assert env_lock.versions() == {**orig.versions(), "site-tool": "1.0"}
    torch = by_name["torch"]
    assert torch.wheels and torch.tool and torch.tool["dtkguard"]["match"] == "record"
    assert next(files(torch)).hashes == next(files(orig.by_name()["torch"])).hashes
    installed = {i.key: i for i in env_lock.dtkguard.installed}
    assert {"vllm", "site-tool"} <= set(installed) and not set(installed) & set(by_name)
    assert "installed files differ" in installed["vllm"].table["reason"]
    assert installed["site-tool"].table["reason"].startswith("no wheel")
    # the lock stays installable: uv installs the matched part
    other = make_venv(tmp_path / "again", with_pip=False)
    other.uv_pip("install", "--preview-features", "pylock", "-r", work / "pylock.env.toml")
    assert "vllm" not in other.installed() and other.installed()["torch"] == str(torch.version)


def test_from_env_locks_for_the_environments_python_not_the_policys(tmp_path):
    """The policy targets Python 3.10; a venv of another Python gets a lock pip installs."""
    import sys

    wheels = tmp_path / "wheels"
    build_wheel(wheels, "alpha", "1.0")
    venv = make_venv(tmp_path / "img", with_pip=False)
    venv.uv_pip("install", "--no-index", "--find-links", wheels, "alpha")
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    for how in (("--path", venv.site_packages), ("--python", venv.python)):
        proc = run_cli("lock", "--from-env", *how, "--find-links", wheels, "--no-index",
                       "-o", "pylock.env.toml", cwd=tmp_path)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        text = (tmp_path / "pylock.env.toml").read_text()
        assert f'requires-python = "=={here}.*"' in text, how
        assert read_lock(tmp_path / "pylock.env.toml").versions()["alpha"] == "1.0"


def test_from_env_of_a_dist_installed_without_its_dependencies_warns_and_locks(tmp_path):
    """``pip install --no-deps``: the lock holds what is installed and names what is missing
    (with an extra of the missing dependency: it was a KeyError) and its requirer."""
    house = tmp_path / "house"
    build_wheel(
        house,
        "app",
        "1.0",
        requires_dist=["ray[cgraph]>=2", "helper==1.0", "absent; python_version < '3'"],
    )
    build_wheel(house, "helper", "1.0", requires_dist=["ray[default]"])
    venv = make_venv(tmp_path / "venv", with_pip=False)
    venv.uv_pip("install", "--no-deps", "--no-index", "--find-links", house, "app", "helper")
    assert {"app", "helper"} <= set(venv.installed()) and "ray" not in venv.installed()
    proc = run_cli(
        "lock", "--from-env", "--python", venv.python, "--no-index", "--find-links", house,
        *HERE, "-o", "pylock.env.toml", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "which the lock does not hold" in line]
    assert warnings == [
        "dtkguard: warning: app 1.0 requires ray[cgraph]>=2, which the lock does not hold",
        "dtkguard: warning: helper 1.0 requires ray[default], which the lock does not hold",
    ]
    by_name = read_lock(tmp_path / "pylock.env.toml").versions()
    assert {k: v for k, v in by_name.items() if k in ("app", "helper")} == {
        "app": "1.0",
        "helper": "1.0",
    }
    assert "ray" not in by_name
