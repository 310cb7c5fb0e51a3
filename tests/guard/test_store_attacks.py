"""The guard's trust lives in the store, outside the env (issue 23): each attack of the issue is
reproduced on a real guarded venv with real pip, uv and venv, and `check` names it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, _build
from tests.support.cache import PIP_VERSIONS
from tests.support.need import missing
from tests.support.pythons import find_python
from tests.support.venvs import hermetic_env, run_uv

pytestmark = pytest.mark.wheel_cache


@pytest.fixture
def env(tmp_path: Path, request: pytest.FixtureRequest) -> Guarded:
    """A new guarded venv (newest pip) whose vendor builds have all they require (no vllm:
    the fixtures' vendor vllm comes without its community requirements)."""
    inputs = ("guard_policy", "vendor_wheelhouse", "public_dir", "extra_wheelhouse")
    values = (request.getfixturevalue(n) for n in inputs)
    return _build(tmp_path / "venv", PIP_VERSIONS[-1], *values, with_vllm=False)


def _other(path: Path, request: pytest.FixtureRequest) -> Guarded:
    inputs = ("guard_policy", "vendor_wheelhouse", "public_dir", "extra_wheelhouse")
    values = (request.getfixturevalue(n) for n in inputs)
    return _build(path, PIP_VERSIONS[-1], *values, with_vllm=False)


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


@pytest.mark.parametrize("how", ["venv", "virtualenv", "uv", "uv-allow-existing"])
def test_a_recreated_env_is_env_replaced(env: Guarded, how: str) -> None:
    """`python -m venv --clear`, `virtualenv --clear`, `uv venv --clear` (uv's own hint when
    the folder exists) and `uv venv --allow-existing --python 3.X` leave an env without torch:
    not a PASS."""
    g = env
    path = g.venv.path
    if how == "venv":
        subprocess.run([sys.executable, "-m", "venv", "--clear", path], check=True)
    elif how == "virtualenv":
        virtualenv_clear(path)
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


def virtualenv_clear(path: Path) -> None:
    """`virtualenv --clear PATH` (virtualenv is a test extra: missing, it skips, or fails
    under .ci/run)."""
    import importlib.util

    if importlib.util.find_spec("virtualenv") is None:
        missing("virtualenv (pip install -e '.[test]')")
    cmd = [sys.executable, "-m", "virtualenv", "--clear", "--no-periodic-update", str(path)]
    subprocess.run(cmd, check=True, capture_output=True, env=hermetic_env())


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


def test_deleting_the_stores_baseline_does_not_blind_check(env: Guarded) -> None:
    """The store's own baseline deleted (its manifest still lists it), then a vendor build
    removed: not a PASS; guard-missing (critical) names the baseline. (What the removal took
    is not named: the baseline that knew it is the file that went.)"""
    g = env
    g.store.baseline.unlink()
    shutil.rmtree(next(g.venv.site_packages.glob("torchaudio-*.dist-info")))
    code, found = check(g)
    assert code == 1
    gone = [f for f in found if f["rule"] == "guard-missing"]
    assert any(str(g.store.baseline) in f["message"] for f in gone), found
    assert all(f["severity"] == "critical" for f in gone)


def test_rewriting_a_vendor_file_and_every_record_in_the_env(env: Guarded) -> None:
    """Rewrite a vendor file and whatever the env holds about it (a baseline and a manifest
    in its state folder that vouch for the new bytes, the tripwire snapshot): the store still
    knows, and `restore` puts the file back from it."""
    import hashlib

    g = env
    target = g.venv.site_packages / "torch" / "version.py"
    original = target.read_bytes()
    target.write_text("__version__ = '2.7.0'\n")
    # a baseline in the env (where a guard before the store kept it) that matches the change
    state = g.venv.path / "dtkguard"
    forged = json.loads(g.store.baseline.read_text())
    data = target.read_bytes()
    rel = str(target.relative_to(g.venv.site_packages))
    st = target.stat()
    now = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "ino": st.st_ino}
    now.update(mtime_ns=st.st_mtime_ns, ctime_ns=st.st_ctime_ns)
    assert any(rel in b.get("files", {}) for b in forged["vendor"].values())
    for build in forged["vendor"].values():
        if rel in build.get("files", {}):
            build["files"][rel].update(now)
    text = json.dumps(forged)
    (state / "baseline.json").write_text(text)
    manifest = json.loads(g.store.manifest.read_text())
    sha = hashlib.sha256(text.encode()).hexdigest()
    manifest["files"][str(state / "baseline.json")] = {"layer": "baseline", "sha256": sha}
    (state / "manifest.json").write_text(json.dumps(manifest))
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
    proc = g.dtkguard("restore", "--python", str(g.venv.python), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert target.read_bytes() == original
    assert check(g) == (0, [])


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


def _forge(journal: Path, victim: Path) -> None:
    """An open transaction whose txn.json names ``victim`` as a root and nothing before it:
    rolling it back would delete everything under ``victim``."""
    txn = journal / "0001"
    txn.mkdir(parents=True)
    data = {"id": 1, "tool": "dtkpip", "argv": ["x"], "time": "", "state": "open"}
    (txn / "txn.json").write_text(json.dumps({**data, "roots": [str(victim)]}))
    (txn / "pre.list").write_text("")


@pytest.mark.parametrize("where", ["store", "env"])
def test_a_forged_open_transaction_deletes_nothing(
    env: Guarded, tmp_path: Path, where: str
) -> None:
    """A forged open transaction makes the next journal command roll back `/elsewhere`: it is
    refused (never acted on) and `check` reports it. In the env's old journal folder it is
    moved into the store by the next `guard install`, and refused there too."""
    g = env
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me\n")
    py = str(g.venv.python)
    if where == "store":
        _forge(g.store.journal, victim)
    else:
        _forge(g.venv.path / "dtkguard" / "journal", victim)
        proc = g.dtkguard("guard", "install", "--python", py, "--policy", str(g.policy))
        assert proc.returncode == 0, proc.stderr
        assert not (g.venv.path / "dtkguard" / "journal").exists()
    proc = g.dtkguard("history", "--python", py)
    assert (victim / "precious.txt").read_text() == "keep me\n"
    assert "refusing journal transaction 0001" in proc.stderr, proc.stderr
    assert "not the env's folders" in proc.stderr
    _, found = check(g)
    bad = [f for f in found if f["rule"] == "guard-state-tampered"]
    assert bad and "transaction 0001" in bad[0]["message"], found
    # dtkpip journals a real change in spite of it, and still leaves the victim alone
    proc = g.dtkpip("install", *g.index_args, "--no-deps", "pins-torch==1.0")
    assert proc.returncode == 0, proc.stderr
    assert (victim / "precious.txt").is_file()


def test_an_edited_transaction_is_reported(env: Guarded) -> None:
    g = env
    proc = g.dtkpip("install", *g.index_args, "--no-deps", "pins-torch==1.0")
    assert proc.returncode == 0, proc.stderr
    assert check(g)[0] == 0
    txn = next(g.store.journal.glob("0*/txn.json"))
    data = json.loads(txn.read_text())
    data["argv"] = ["something else"]
    txn.write_text(json.dumps(data))
    _, found = check(g)
    assert "guard-state-tampered" in rules(found), found


def test_check_all_guarded_checks_every_env_of_the_store(
    env: Guarded, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    g = env
    other = _other(tmp_path / "other", request)
    proc = g.dtkguard("check", "--all-guarded", "-f", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shutil.rmtree(next(other.venv.site_packages.glob("torch-*.dist-info")))
    shutil.rmtree(g.venv.path)
    proc = g.dtkguard("check", "--all-guarded")
    assert proc.returncode == 1
    assert "env-replaced" in proc.stdout and "vendor-missing" in proc.stdout
    assert str(g.venv.path) in proc.stdout and str(other.venv.path) in proc.stdout
    bad = g.dtkguard("check", "--all-guarded", "--python", str(other.venv.python))
    assert bad.returncode == 2 and "give no target" in bad.stderr


def test_an_in_env_guard_is_moved_into_the_store(env: Guarded) -> None:
    """A guard from before the store (its state in <prefix>/dtkguard/) moves on the next
    `guard install`: baseline, manifest, override log, journal."""
    g = env
    state = g.venv.path / "dtkguard"
    # make it look like a guard from before the store
    manifest = json.loads(g.store.manifest.read_text())
    entry = manifest["files"].pop(str(g.store.baseline))
    manifest["files"][str(state / "baseline.json")] = entry
    shutil.copyfile(g.store.baseline, state / "baseline.json")
    (state / "manifest.json").write_text(json.dumps(manifest))
    record = {"user": "old", "reason": "before the store", "allowed": [], "time": "t"}
    (state / "overrides.jsonl").write_text(json.dumps(record) + "\n")
    shutil.rmtree(g.store.dir)
    proc = g.dtkguard("guard", "install", "--python", str(g.venv.python), "--policy", str(g.policy))
    assert proc.returncode == 0, proc.stderr
    assert "unchanged  baseline" in proc.stdout  # the same baseline, carried over
    assert sorted(p.name for p in state.iterdir()) == [
        "constraints.txt",
        "policy.json",
        "store.json",
        "tripwire.txt",
    ]
    assert g.store.baseline.is_file() and g.store.overrides.is_file()
    _, found = check(g)
    assert rules(found) == {"override-used"}, found


def test_a_layer_rewritten_after_the_layer_stat_cache_holds_it_is_found(env: Guarded) -> None:
    """check hashes a guard layer once, then trusts its inode, ctime and size: a rewrite at
    the same size with the mtime put back (a new ctime), and a same-size copy renamed into its
    place (a new inode), are each guard-missing, on that run and on the next."""
    g = env
    _, found = check(g)
    assert "guard-missing" not in rules(found), found
    cache = json.loads(g.store.layer_stat_cache.read_text())
    layer = g.venv.site_packages / "_dtkguard_decision.py"
    assert str(layer) in cache, sorted(cache)
    assert "guard-missing" not in rules(check(g)[1])  # the cache's fast pass: still clean
    data, st = layer.read_bytes(), layer.stat()
    forged = data[:-2] + (b"#\n" if data[-2:] != b"#\n" else b"!\n")
    layer.write_bytes(forged)
    os.utime(layer, ns=(st.st_atime_ns, st.st_mtime_ns))
    for _ in range(2):
        _, found = check(g)
        assert "guard-missing" in rules(found) and "_dtkguard_decision.py" in str(found), found
    layer.write_bytes(data)
    assert "guard-missing" not in rules(check(g)[1])
    copy = layer.with_name("planted.tmp")
    copy.write_bytes(forged)
    os.replace(copy, layer)
    _, found = check(g)
    assert "guard-missing" in rules(found) and "_dtkguard_decision.py" in str(found), found


def test_a_modified_layer_is_hashed_once_and_found_on_every_run(env: Guarded) -> None:
    """A layer that differs from the manifest keeps the digest its hash found (once its ctime
    is settled: `stat_cache.settled`), beside its stat: every check finds it modified without
    hashing it again, and the file put back (a new ctime) is hashed and clean at once."""
    import time

    from dtkguard.util.stat_cache import RACY_NS

    g = env
    check(g)
    layer = g.venv.site_packages / "_dtkguard_finder.py"
    data = layer.read_bytes()
    layer.write_bytes(data + b"\n# planted\n")
    _, found = check(g)
    assert "guard-missing" in rules(found) and "_dtkguard_finder.py" in str(found), found
    st = layer.stat()
    kept = json.loads(g.store.layer_stat_cache.read_text()).get(str(layer))
    assert kept is None or kept[:2] != [st.st_ino, st.st_ctime_ns]  # racy: not kept
    time.sleep(RACY_NS / 1e9 + 0.1)
    for _ in range(2):
        _, found = check(g)
        assert "guard-missing" in rules(found) and "_dtkguard_finder.py" in str(found), found
        st = layer.stat()
        kept = json.loads(g.store.layer_stat_cache.read_text())[str(layer)]
        assert kept[:3] == [st.st_ino, st.st_ctime_ns, st.st_size], kept
        assert kept[3] == hashlib.sha256(layer.read_bytes()).hexdigest()
    layer.write_bytes(data)
    assert "guard-missing" not in rules(check(g)[1])


def test_a_forged_layer_stat_cache_entry_hides_nothing(env: Guarded) -> None:
    """A cache entry is believed only as the digest found of that very file: an entry that
    names the planted file's inode and ctime beside another digest than the manifest's says
    modified."""
    g = env
    check(g)
    layer = g.venv.site_packages / "_dtkguard_finder.py"
    layer.write_bytes(layer.read_bytes() + b"\n# planted\n")
    st = layer.stat()
    forged = {str(layer): [st.st_ino, st.st_ctime_ns, st.st_size, "0" * 64]}
    g.store.layer_stat_cache.write_text(json.dumps(forged))
    _, found = check(g)
    assert "guard-missing" in rules(found) and "_dtkguard_finder.py" in str(found), found
