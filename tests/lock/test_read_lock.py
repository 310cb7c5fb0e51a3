"""`read_lock` returns packaging's `Pylock` plus dtkguard's ``[tool.dtkguard]`` view (issue 31
item 5), and the commands that read a lock say what they said before: `export` of the
committed image lock is byte-identical to the goldens written before the change."""

from __future__ import annotations

import json
import shutil

from packaging.pylock import Pylock
from packaging.version import Version

from dtkguard.lock.read import files, read_lock
from tests.support.cli import REPO

from .conftest import run_cli

LOCK = REPO / "lockfiles" / "pylock.das-25041-vllm.toml"
GOLDEN = REPO / "tests" / "data" / "golden" / "export"

#: a hand-written lock: a version and a marker spelled otherwise than packaging's normal form,
#: an sdist, a wheel by path, and an installed entry of `lock --from-env`
ODD = """\
lock-version = "1.0"
created-by = "hand"
requires-python = ">=3.10,<3.13"

[[packages]]
name = "alpha"
version = "1.0.0-RC1"
marker = "sys_platform == 'linux'"
index = "https://example.invalid/simple"

[packages.sdist]
name = "alpha-1.0.0rc1.tar.gz"
url = "https://example.invalid/alpha.tar.gz"
hashes = { sha256 = "aa" }

[[packages]]
name = "beta"
version = "2"
wheels = [{ path = "w/beta-2-py3-none-any.whl", hashes = { sha256 = "bb" } }]

[tool.dtkguard]
policy = "dtk-25.04.1"
note = "kept as written"

[[tool.dtkguard.installed]]
name = "Site_Tool"
version = "1.0"
reason = "no wheel"
"""


def test_export_of_the_committed_lock_is_byte_identical(tmp_path):
    work = tmp_path / "lockfiles"
    shutil.copytree(LOCK.parent, work, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    lock = work / LOCK.name
    for kind in ("constraints", "requirements"):
        proc = run_cli("export", kind, lock)
        assert proc.returncode == 0, proc.stderr
        want = (GOLDEN / f"{kind}.txt").read_text().replace("LOCKDIR", str(work))
        assert proc.stdout == want, kind
        out = tmp_path / f"{kind}.txt"
        assert run_cli("export", kind, lock, "-o", out).returncode == 0
        assert out.read_text() == want


def test_read_lock_is_packagings_pylock_plus_the_dtkguard_table(tmp_path):
    (tmp_path / "pylock.odd.toml").write_text(ODD)
    lock = read_lock(tmp_path / "pylock.odd.toml")
    assert isinstance(lock.pylock, Pylock)
    alpha = lock.by_name()["alpha"]
    assert alpha.version == Version("1.0.0rc1") and alpha.index
    assert [f.url for f in files(alpha)] == ["https://example.invalid/alpha.tar.gz"]
    assert lock.dtkguard.policy == "dtk-25.04.1" and lock.dtkguard.table["note"]
    [site_tool] = lock.dtkguard.installed
    assert (site_tool.key, site_tool.version, site_tool.table["reason"]) == (
        "site-tool",
        "1.0",
        "no wheel",
    )
    assert "site-tool" not in lock.by_name()  # not a package of the lock: no file to install
    assert list(lock.pins()) == [
        ("alpha", "1.0.0rc1", 'sys_platform == "linux"'),
        ("beta", "2", None),
        ("Site_Tool", "1.0", None),
    ]


def test_export_prints_versions_and_markers_in_packagings_normal_form(tmp_path):
    """Deliberate: the lock's own spelling is not kept; pip and uv read both the same."""
    (tmp_path / "pylock.odd.toml").write_text(ODD)
    proc = run_cli("export", "constraints", tmp_path / "pylock.odd.toml")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:] == [
        'alpha==1.0.0rc1 ; sys_platform == "linux"',
        "beta==2",
    ]  # the installed entry has no wheel: not a constraint
    proc = run_cli("export", "requirements", tmp_path / "pylock.odd.toml")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "--index-url https://example.invalid/simple" in lines
    assert f"--find-links {(tmp_path / 'w').as_posix()}" in lines
    assert 'alpha==1.0.0rc1 ; sys_platform == "linux" \\' in lines
    assert "    --hash=sha256:aa" in lines and "    --hash=sha256:bb" in lines


def test_a_lock_packaging_refuses_is_one_line_naming_file_line_and_field(tmp_path):
    for bad, field in (
        (ODD.replace('version = "2"', 'version = "two"'), "packages[1].version"),
        (ODD.replace('name = "beta"', 'name = "Beta_Pkg"'), "packages[1].name"),
        (ODD.replace('name = "Site_Tool"', "name = 3"), "tool.dtkguard.installed[0].name"),
    ):
        path = tmp_path / "pylock.bad.toml"
        path.write_text(bad)
        for argv in (
            ("export", "constraints", path),
            ("audit", "--path", tmp_path, "--lock", path),
        ):
            proc = run_cli(*argv)
            assert proc.returncode == 2, (argv, proc.stderr)
            assert "Traceback" not in proc.stderr
            [line] = [s for s in proc.stderr.splitlines() if s.strip()]
            assert str(path) in line and field in line, line


def test_drift_counts_the_installed_entries_of_a_from_env_lock(tmp_path):
    """`check --lock`: an installed entry is locked (never drift-extra), and missing when the
    target lacks it, as before the lock model changed."""
    site = tmp_path / "site"
    meta = site / "beta-2.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: beta\nVersion: 2\n")
    (meta / "RECORD").write_text("beta-2.dist-info/METADATA,,\n")
    lock = tmp_path / "pylock.odd.toml"
    lock.write_text(ODD.replace("sys_platform == 'linux'", "sys_platform == 'nowhere'"))
    proc = run_cli("audit", "--path", site, "--lock", lock, "-f", "json")
    report = json.loads(proc.stdout)
    got = {(f["rule"], f["subject"]) for f in report["findings"] if f["rule"].startswith("drift")}
    assert got == {("drift-missing", "site-tool")}, proc.stdout
    assert report["facts"]["lock"]["packages"] == 3
