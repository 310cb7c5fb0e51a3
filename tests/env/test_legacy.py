"""Legacy installs in the environment reader: .egg directories and zips, .egg-link,
easy-install.pth; a torch installed as an egg is reported by `check`; --root confinement."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dtkguard.env import environment as envs
from tests.support.cli import dtkguard
from tests.support.sitetree import COMMUNITY_TORCH_VERSION_PY, add_egg, vendor_site

TORCH_FILES = {"torch/__init__.py": "", "torch/version.py": COMMUNITY_TORCH_VERSION_PY}


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return dtkguard("check", "-f", "json", *args)


def _torches(env: envs.Environment) -> list[tuple[str, bool]]:
    return [(d.version, d.legacy) for d in env if d.key == "torch"]


def test_egg_directory_zip_and_pth(tmp_path: Path) -> None:
    site = vendor_site(tmp_path / "site")
    add_egg(site, "torch", "2.4.1", TORCH_FILES)
    add_egg(site, "flash_attn", "2.6.1", {"flash_attn/__init__.py": ""}, zipped=True)
    env = envs.from_paths([site])
    assert _torches(env) == [("2.4.1+das.opt1.dtk25041", False), ("2.4.1", True)]
    egg = env.get("flash-attn")
    assert egg is not None and egg.legacy and egg.path.name.endswith(".egg")
    assert egg.location.endswith("flash_attn-2.6.1-py{}.{}.egg".format(*sys.version_info[:2]))
    assert env.warnings == []


def test_egg_without_easy_install_pth_and_egg_link(tmp_path: Path) -> None:
    site = vendor_site(tmp_path / "site")
    add_egg(site, "torch", "2.7.0", TORCH_FILES, pth=False)
    project = tmp_path / "src" / "mylib"
    (project / "mylib.egg-info").mkdir(parents=True)
    (project / "mylib.egg-info" / "PKG-INFO").write_text("Name: mylib\nVersion: 0.1\n\n")
    (site / "mylib.egg-link").write_text(f"{project}\n.\n")
    env = envs.from_paths([site])
    assert ("2.7.0", True) in _torches(env)
    assert env.get("mylib") is not None and env.get("mylib").legacy


def test_check_reports_a_torch_installed_as_an_egg(tmp_path: Path) -> None:
    site = vendor_site(tmp_path / "site")
    clean = _check("--path", str(site), "--policy", "dtk-25.04.1")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    add_egg(site, "torch", "2.4.1", TORCH_FILES)
    proc = _check("--path", str(site), "--policy", "dtk-25.04.1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = {(f["rule"], f["subject"]) for f in json.loads(proc.stdout)["findings"]}
    assert ("vendor-replaced", "torch") in found
    where = [f["location"] for f in json.loads(proc.stdout)["findings"]]
    assert any(".egg" in (w or "") for w in where)


def test_python_target_sees_the_egg_in_front_of_site_packages(tmp_path: Path) -> None:
    """A real interpreter processes easy-install.pth: the egg is on sys.path first."""
    import venv

    venv.EnvBuilder(with_pip=False).create(tmp_path / "v")
    py = tmp_path / "v" / "bin" / "python"
    site = Path(
        subprocess.run(
            [py, "-c", "import sysconfig;print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    vendor_site(site)
    add_egg(site, "torch", "2.4.1", TORCH_FILES, zipped=True)
    origin = subprocess.run(
        [py, "-c", "import torch;print(torch.__file__)"], capture_output=True, text=True
    ).stdout
    assert ".egg" in origin  # the egg shadows the vendor torch
    env = envs.from_python(str(py))
    assert _torches(env)[0] == ("2.4.1", True)
    proc = _check("--python", str(py), "--policy", "dtk-25.04.1")
    assert proc.returncode == 1
    assert "vendor-replaced" in proc.stdout


def test_root_confinement_of_legacy_entries(tmp_path: Path) -> None:
    """Absolute paths and symlinks in easy-install.pth and .egg-link resolve inside the root:
    an egg outside the root is never read."""
    outside = tmp_path / "outside"
    add_egg(outside, "evil", "6.6.6", {"evil/__init__.py": ""}, pth=False)
    root = tmp_path / "image"
    site = vendor_site(root / "usr" / "lib" / "python3.10" / "site-packages")
    egg_name = next(outside.glob("*.egg")).name
    (site / "easy-install.pth").write_text(
        f"{outside / egg_name}\n../../../../../../../{outside.relative_to('/')}/{egg_name}\n"
    )
    (site / "link.egg").symlink_to(outside / egg_name)
    project = outside / "proj"
    (project / "proj.egg-info").mkdir(parents=True)
    (project / "proj.egg-info" / "PKG-INFO").write_text("Name: proj\nVersion: 1\n\n")
    (site / "proj.egg-link").write_text(f"{project}\n")
    env = envs.from_root(root)
    assert env.get("evil") is None and env.get("proj") is None
    assert env.get("torch") is not None
    # the same entries, resolved on the host, do reach them
    host = envs.from_paths([site])
    assert host.get("evil") is not None and host.get("proj") is not None


def test_nul_and_overlong_egg_lines_and_a_5000_digit_record_size(tmp_path: Path) -> None:
    """Issue 27 item 10: a NUL or a line over 4 KiB in ``easy-install.pth`` or ``.egg-link``,
    and a RECORD size of 5,000 digits, each raised a traceback; now a warning naming the file,
    and an unverifiable row."""
    from tests.support.cli import run_in_process
    from tests.support.sitetree import add_dist

    site = vendor_site(tmp_path / "site")
    (site / "easy-install.pth").write_bytes(b"./a\x00b\n" + b"x" * 5000 + b"\n")
    (site / "dev.egg-link").write_bytes(b"/src/\x00dev\n.\n")
    add_dist(site, "native", "1.0", files={"native/x.py": b""})
    record = site / "native-1.0.dist-info" / "RECORD"
    record.write_text("native/x.py,sha256=AAAA," + "9" * 5000 + "\n")
    env = envs.from_paths([site])
    no_path = [w for w in env.warnings if "a line that is no path" in w]
    assert len(no_path) == 3, env.warnings  # two lines of easy-install.pth, one .egg-link
    assert any("easy-install.pth" in w for w in no_path)
    assert any("dev.egg-link" in w for w in no_path)
    result = run_in_process("audit", "--path", str(site), "--verify-files", "-f", "json")
    assert result.code in (0, 1), result.err
    assert "Traceback" not in result.err
