# ruff: noqa: F811  (the `env` fixture is imported, and taken as an argument)
"""The guard's trust lives in the store, outside the env (issue 23): each attack of the issue is
reproduced on a real guarded venv with real pip, uv and venv, and `check` names it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded
from tests.guard.test_baseline import env  # noqa: F401  (a new guarded venv, newest pip)
from tests.support.pythons import find_python
from tests.support.venvs import hermetic_env, run_uv

pytestmark = pytest.mark.wheel_cache


def check(g: Guarded, *args: str) -> tuple[int, list[dict]]:
    proc = g.dtkguard(
        "check", "--python", str(g.venv.python), "--policy", str(g.policy), "-f", "json", *args
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def rules(findings: list[dict]) -> set[str]:
    return {f["rule"] for f in findings}


def test_the_state_is_in_the_store_not_in_the_env(env: Guarded, private_store: Path) -> None:
    g = env
    assert g.store.dir.is_relative_to(private_store)
    for path in (g.store.baseline, g.store.manifest, g.store.policy, g.store.tripwire):
        assert path.is_file(), path
    assert (g.store.dir.stat().st_mode & 0o777) == 0o700
    state = g.venv.path / "dtkguard"
    assert sorted(p.name for p in state.iterdir()) == [
        "constraints.txt",
        "policy.json",
        "store.json",
        "tripwire.txt",
    ]
    pointer = json.loads((state / "store.json").read_text())
    assert pointer["store"] == str(g.store.dir)
    assert (state / "store.json").stat().st_mode & 0o222 == 0  # read-only
    assert check(g) == (0, [])


@pytest.mark.parametrize("how", ["venv", "uv", "uv-allow-existing"])
def test_a_recreated_env_is_env_replaced(env: Guarded, how: str) -> None:
    """`python -m venv --clear`, `uv venv --clear` (uv's own hint when the folder exists) and
    `uv venv --allow-existing --python 3.X` leave an env without torch: not a PASS."""
    g = env
    path = g.venv.path
    if how == "venv":
        subprocess.run([sys.executable, "-m", "venv", "--clear", path], check=True)
    elif how == "uv":
        run_uv("venv", "--clear", "--python", sys.executable, path)
    else:
        other = _other_python()
        if other is None:
            pytest.skip("needs a second Python version")
        run_uv("venv", "--allow-existing", "--python", other, path)
    code, found = check(g)
    assert code == 1
    assert "env-replaced" in rules(found), found
    if how != "uv-allow-existing":  # that one leaves the old site-packages, off the path
        assert "guard-missing" in rules(found)
        assert any(f["rule"] == "vendor-missing" for f in found)


def _other_python() -> str | None:
    mine = sys.version_info[1]
    for minor in (12, 11, 10, 13, 9):
        found = find_python(f"3.{minor}") if minor != mine else None
        if found:
            return found
    return None


def test_deleting_the_state_in_the_env_does_not_blind_check(env: Guarded) -> None:
    """Delete the env's state folder (or a baseline there), then remove a vendor build."""
    g = env
    shutil.rmtree(g.venv.path / "dtkguard")
    shutil.rmtree(next(g.venv.site_packages.glob("torchaudio-*.dist-info")))
    code, found = check(g)
    assert code == 1
    assert {"vendor-missing", "guard-missing"} <= rules(found), found


def test_rewriting_a_vendor_file_and_every_record_in_the_env(env: Guarded) -> None:
    """Rewrite a vendor file and whatever the env holds about it: the store still knows."""
    g = env
    target = g.venv.site_packages / "torch" / "version.py"
    target.write_text("__version__ = '2.7.0'\n")
    # the tripwire snapshot in the env, at the new stat
    tw = g.venv.path / "dtkguard" / "tripwire.txt"
    st = target.stat()
    lines = [
        f"stat\ttorch\t{st.st_size}\t{st.st_mtime_ns}\t{target}"
        if line.endswith(str(target))
        else line
        for line in tw.read_text().splitlines()
    ]
    tw.write_text("\n".join(lines) + "\n")
    code, found = check(g)
    assert code == 1
    assert "vendor-files-changed" in rules(found) and "guard-missing" in rules(found), found


def test_same_size_and_mtime_put_back_is_found(env: Guarded) -> None:
    """`cp -p`, `rsync -t`, `tar` keep mtimes: a rewrite at the same size with the mtime put
    back is found by the ctime pass."""
    g = env
    target = g.venv.site_packages / "torch" / "__init__.py"
    data = target.read_bytes()
    st = target.stat()
    forged = data[:-2] + (b"#\n" if data[-2:] != b"#\n" else b"!\n")
    assert len(forged) == len(data)
    target.write_bytes(forged)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert target.stat().st_mtime_ns == st.st_mtime_ns
    code, found = check(g)
    assert code == 1
    changed = [f for f in found if f["rule"] == "vendor-files-changed"]
    assert changed and "torch/__init__.py" in changed[0]["message"], found


def test_a_truncated_or_edited_override_log_is_found(env: Guarded) -> None:
    g = env
    proc = g.pip(
        "install",
        *g.index_args,
        "--no-deps",
        "nvidia-cublas-cu12",
        env=hermetic_env(DTKGUARD_OVERRIDE="test: an override"),
    )
    assert proc.returncode == 0, proc.stderr
    log = g.store.overrides
    assert len(log.read_text().splitlines()) == 1
    _, found = check(g)
    assert "override-used" in rules(found) and "guard-state-tampered" not in rules(found)
    log.write_text("")  # truncated
    _, found = check(g)
    assert "guard-state-tampered" in rules(found), found
    log.write_text(json.dumps({"user": "nobody", "reason": "edited", "prev": ""}) + "\n")
    _, found = check(g)
    assert "guard-state-tampered" in rules(found), found


def test_patched_pip_is_protected_changed(env: Guarded) -> None:
    g = env
    pip_init = next(g.venv.site_packages.glob("pip/__init__.py"))
    pip_init.write_text(pip_init.read_text() + "\n# patched\n")
    (g.venv.bin / "pip").unlink()
    code, found = check(g)
    assert code == 1
    bad = [f for f in found if f["rule"] == "protected-changed"]
    assert bad and "pip/__init__.py" in bad[0]["message"] and "bin/pip" in bad[0]["message"]


def test_the_finder_deleted_is_guard_missing(env: Guarded) -> None:
    g = env
    (g.venv.site_packages / "_dtkguard_finder.py").unlink()
    code, found = check(g)
    assert code == 1 and "guard-missing" in rules(found), found
    assert TORCH
