"""A rollback undoes what its transaction did and nothing else: after a dtkpip that was killed
mid-install, a package plain pip installed since, a script put in ``bin/`` and a file dropped
in site-packages survive the next command's rollback, and it says it kept them; the journal
snapshots only the files of the distributions the change touches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import dtkguard_in
from tests.support.venvs import Venv, hermetic_env, make_venv
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache
REPO = Path(__file__).resolve().parents[2]

#: open a transaction, let pip install ``sys.argv[3:]``, then die by SIGKILL (touches:
#: sys.argv[2], "-" for an unknown plan)
_KILLED = (
    "import os,subprocess,sys;from dtkguard.journal import transaction as journal;"
    "t={} if sys.argv[2]=='-' else {'touches':sys.argv[2].split(',')};"
    "cm=journal.transaction(sys.argv[1],'dtkpip',['dtkpip','install'],**t);"
    "txn=cm.__enter__();print(txn.dir,flush=True);"
    "subprocess.run([sys.argv[1],'-m','pip','install','--no-index',*sys.argv[3:]],check=True,"
    "capture_output=True);os.kill(os.getpid(),9)"
)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("journal-wheels")
    tool = {"console_scripts": {"first-tool": "first_pkg:main"}}
    for version in ("1.0", "2.0"):
        files = {"first_pkg/__init__.py": f"V = {version!r}\ndef main(): pass\n"}
        if version == "2.0":
            files["first_pkg/new_in_2.py"] = "NEW = True\n"
        build_wheel(dest, "first-pkg", version, files=files, entry_points=tool)
    build_wheel(dest, "later-pkg", "1.0", files={"later_pkg/__init__.py": "L = 1\n"})
    return dest


def _venv(tmp_path: Path, wheels: Path) -> Venv:
    venv = make_venv(tmp_path / "venv", pip_version="26.3")
    venv.pip("install", "--no-index", "-f", str(wheels), "first-pkg==1.0")
    return venv


def _killed(venv: Venv, wheels: Path, touches: str, *reqs: str) -> Path:
    env = hermetic_env(PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED, str(venv.python), touches, "-f", str(wheels), *reqs],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -9, proc.stderr
    return Path(proc.stdout.strip())


def _after_the_window(txn_dir: Path) -> None:
    """Wait until the killed transaction's heartbeat window is over (what runs later is not
    its doing): a condition, not a timed assertion."""
    from dtkguard.journal.owned import last_beat_ns

    end = last_beat_ns(str(txn_dir / "heartbeat")) or 0
    while time.time_ns() <= end:
        time.sleep(0.05)


@pytest.mark.parametrize("touches", ["first-pkg", "-"], ids=["plan-known", "plan-unknown"])
def test_rollback_keeps_what_it_did_not_make(tmp_path: Path, wheels: Path, touches: str) -> None:
    venv = _venv(tmp_path, wheels)
    txn_dir = _killed(venv, wheels, touches, "first-pkg==2.0")
    assert venv.installed()["first-pkg"] == "2.0"  # killed after pip: the env is between states
    _after_the_window(txn_dir)
    venv.pip("install", "--no-index", "-f", str(wheels), "later-pkg==1.0")
    script = venv.bin / "my-tool"
    script.write_text("#!/bin/sh\necho mine\n")
    dropped = venv.site_packages / "notes.txt"
    dropped.write_text("keep me\n")

    proc = dtkguard_in(hermetic_env(), "history", "--python", str(venv.python), "--json")
    assert proc.returncode == 0, proc.stderr
    assert "did not finish; rolling the environment back" in proc.stderr
    installed = venv.installed()
    assert installed["first-pkg"] == "1.0"  # the change is undone
    assert not (venv.site_packages / "first_pkg" / "new_in_2.py").exists()
    assert "'1.0'" in (venv.site_packages / "first_pkg" / "__init__.py").read_text()
    assert (venv.bin / "first-tool").exists()
    assert installed.get("later-pkg") == "1.0"  # what came after is not
    assert script.read_text() == "#!/bin/sh\necho mine\n" and dropped.read_text() == "keep me\n"
    later = [f for f in (venv.site_packages / "later_pkg").iterdir()]
    assert later, "plain pip's package lost its files"
    told = proc.stderr
    assert "kept" in told and "notes.txt" in told and "my-tool" in told and "later_pkg" in told
    [txn] = json.loads(proc.stdout)
    assert txn["state"] == "rolled-back"
    assert any(p.endswith("notes.txt") for p in txn["unaccounted"])


def test_snapshot_holds_only_the_touched_distributions(tmp_path: Path, wheels: Path) -> None:
    """Issue 30: dtkuv and dtkpip hard-linked every site-packages file before the run; now
    only the files of the distributions the plan names are kept and listed, and of the rest
    only the top-level entries of each root (what existed before)."""
    venv = _venv(tmp_path, wheels)
    txn_dir = _killed(venv, wheels, "first-pkg", "first-pkg==2.0")
    kept = sorted(os.listdir(txn_dir / "pre"))
    entries = [ln.split("\t") for ln in (txn_dir / "pre.list").read_text().splitlines()]
    linked = [(e[1], e[3]) for e in entries if e[2] == "f"]
    assert len(kept) == len(linked)
    site = [rel for root, rel in linked if root == "0"]
    assert site and all(rel.startswith("first_pkg") for rel in site), site
    assert [rel for root, rel in linked if root != "0"] == ["first-tool"]  # its script only
    assert any(e[2] == "d" and e[3] == "pip" for e in entries)  # pip: its folder only
    assert not any(e[3].startswith("pip/") for e in entries)
    assert json.loads((txn_dir / "txn.json").read_text())["scope"] == "plan"


def _replace(path: Path, text: str) -> None:
    """Write ``path`` as an editor or an installer does: a new file renamed over it."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)


@pytest.mark.parametrize("touches", ["first-pkg", "-"], ids=["plan-known", "plan-unknown"])
def test_rollback_keeps_what_other_writers_did_after_the_kill(
    tmp_path: Path, wheels: Path, touches: str
) -> None:
    """Neighbours of the case above: uv installs a package after the kill, a ``.pth`` is
    dropped, a file that existed before (another package's, or the touched one's) is
    rewritten after the transaction's window: none of it is the change's, all of it stays."""
    venv = _venv(tmp_path, wheels)
    (venv.site_packages / "site_conf.py").write_text("MINE = 0\n")
    (venv.site_packages / "old.pth").write_text("# before\n")
    txn_dir = _killed(venv, wheels, touches, "first-pkg==2.0")
    _after_the_window(txn_dir)
    venv.uv_pip("install", "--no-index", "-f", str(wheels), "later-pkg==1.0")
    (venv.site_packages / "zz-user.pth").write_text(str(tmp_path) + "\n")
    _replace(venv.site_packages / "site_conf.py", "MINE = 1\n")
    _replace(venv.site_packages / "old.pth", "# after\n")
    touched = venv.site_packages / "first_pkg" / "__init__.py"
    _replace(touched, "EDITED = True\n")

    proc = dtkguard_in(hermetic_env(), "history", "--python", str(venv.python), "--json")
    assert proc.returncode == 0, proc.stderr
    assert "did not finish; rolling the environment back" in proc.stderr
    assert venv.installed().get("later-pkg") == "1.0"
    assert list((venv.site_packages / "later_pkg").iterdir())
    assert (venv.site_packages / "zz-user.pth").read_text() == str(tmp_path) + "\n"
    assert (venv.site_packages / "site_conf.py").read_text() == "MINE = 1\n"
    assert (venv.site_packages / "old.pth").read_text() == "# after\n"
    assert touched.read_text() == "EDITED = True\n"  # rewritten since: not the change's
    assert not (venv.site_packages / "first_pkg" / "new_in_2.py").exists()
    [txn] = json.loads(proc.stdout)
    kept = txn["unaccounted"]
    for name in ("site_conf.py", "old.pth", "__init__.py", "zz-user.pth"):
        assert any(p.endswith(name) for p in kept), (name, kept)
