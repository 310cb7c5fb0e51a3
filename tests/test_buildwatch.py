"""The pip hook's build journal (`dtkguard.buildwatch`), run on plain folders: no pip, no venv.

The hook hands it the facts (the protected set, the vendor builds' files, the sites, the store)
and the lookups (who owns a file, which wheel is a vendor build); each case here is one a build
inside pip (or a uv run under dtkuv's watch) meets: a file rewritten, replaced or removed, an
entry planted in a watched folder, and where the bytes to put back come from."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
import zipfile
from pathlib import Path

import pytest

from dtkguard import buildwatch as bw
from dtkguard.decision import canonical, same_version
from dtkguard.sitefacts import wheel_file_name


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_watched_paths_are_the_protected_set_vendor_files_their_folders_and_sites() -> None:
    vendor = {"torch": ["/s/torch/__init__.py", "/s/torch/__pycache__/x.pyc", "/bin/torchrun"]}
    paths = bw.watched_paths({"/s/_dtkguard_pip_hook.py": "guard"}, vendor, ["/s"])
    assert sorted(paths) == [
        "/bin",
        "/bin/torchrun",
        "/s",
        "/s/_dtkguard_pip_hook.py",
        "/s/torch",
        "/s/torch/__init__.py",
        "/s/torch/__pycache__/x.pyc",  # the file is watched, its byte-code folder is not
    ]


def test_stat_all_and_changed(tmp_path: Path) -> None:
    kept, replaced, gone = (tmp_path / n for n in ("kept", "replaced", "gone"))
    for path in (kept, replaced, gone):
        path.write_text("same")
    stats = bw.stat_all([str(kept), str(tmp_path / "never")])
    assert stats[str(tmp_path / "never")] is None
    assert stats[str(kept)][:2] == (4, kept.stat().st_ino)
    snap = bw.snapshot([str(p) for p in (kept, replaced, gone, tmp_path)], None)
    assert snap["names"] == {str(tmp_path): {"kept", "replaced", "gone"}} and snap["store"] is None
    assert bw.changed(snap) == []
    new = tmp_path / "new"
    new.write_text("same")  # the same bytes and size, another inode
    new.replace(replaced)
    gone.unlink()
    assert bw.changed(snap) == sorted([str(replaced), str(gone), str(tmp_path)])


def test_changed_text_names_what_was_and_was_not_put_back() -> None:
    text = bw.changed_text(["/s/a", "/s/b"], 2, [], "/env/bin/python")
    assert "changed /s/a and 1 more" in text and "put back what it changed (2 path(s))" in text
    text = bw.changed_text(["/s/a"], 0, [("/s/a", "no copy")], "/env/bin/python")
    assert " and " not in text.split("(the guard")[0]
    assert "but not 1: /s/a (no copy)" in text
    assert "dtkguard restore --python /env/bin/python" in text


def _none(path: str) -> None:
    return None


def _never(name: str, key: str, version: str) -> bool:
    return False


def _store(tmp_path: Path, protected: dict, baseline: dict | None = None) -> Path:
    store = tmp_path / "store"
    (store / "blobs").mkdir(parents=True)
    (store / "protected.json").write_text(json.dumps({"files": protected}))
    (store / "baseline.json").write_text(json.dumps({"vendor": baseline or {}}))
    return store


def test_put_back_removes_planted_entries_and_restores_from_the_store(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    hook, link, pth = site / "hook.py", site / "pip.conf", site / "evil.pth"
    hook.write_text("original\n")
    os.chmod(hook, 0o640)
    os.utime(hook, ns=(1_000_000_000, 1_000_000_000))
    link.symlink_to("/etc/pip.conf")
    other = tmp_path / "alias"
    os.link(hook, other)  # a hard link (a uv cache's) gets the bytes back too
    blob = b"original\n"
    store = _store(
        tmp_path,
        {
            str(hook): {"kind": "file", "sha256": _sha(blob)},
            str(link): {"kind": "link", "target": "/etc/pip.conf"},
        },
    )
    (store / "blobs" / _sha(blob)).write_bytes(blob)
    snap = bw.snapshot([str(site), str(hook), str(link)], str(store))
    hook.write_text("evil!!!!!\n")  # in place: the same inode
    link.unlink()
    link.symlink_to("/tmp/elsewhere")
    pth.write_text("import evil\n")
    (site / "__pycache__").mkdir()  # pip's byte code folder is not a build's planting
    changed = bw.changed(snap)
    assert str(hook) in changed and str(link) in changed
    sources = bw.Sources(str(store), _none, _never)
    done, failed = bw.put_back(snap, changed, sources)
    assert failed == [] and done == 3  # the .pth planted, the hook and the link put back
    assert not pth.exists() and (site / "__pycache__").is_dir()
    assert hook.read_bytes() == other.read_bytes() == blob
    assert os.readlink(link) == "/etc/pip.conf"
    st = hook.stat()
    assert (st.st_mode & 0o777, st.st_mtime_ns) == (0o640, 1_000_000_000)


def test_put_back_says_why_a_file_cannot_come_back(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    damaged, unknown, fifo = site / "damaged.py", site / "unknown.py", site / "fifo"
    for path in (damaged, unknown):
        path.write_text("x\n")
    os.mkfifo(fifo)
    store = _store(tmp_path, {str(damaged): {"kind": "file", "sha256": _sha(b"x\n")}})
    (store / "blobs" / _sha(b"x\n")).write_bytes(b"not x\n")  # the blob does not match
    snap = bw.snapshot([str(damaged), str(unknown), str(fifo)], str(store))
    for path in (damaged, unknown, fifo):
        path.unlink()
        path.write_text("changed\n")
    done, failed = bw.put_back(snap, bw.changed(snap), bw.Sources(str(store), _none, _never))
    assert done == 0
    assert dict(failed) == {
        str(damaged): "the store's copy of it is missing or damaged",
        str(unknown): "neither a protected file nor a vendor build's: no copy of it",
        str(fifo): "not a file before: no copy of it",
    }
    # no store at all (an env guarded before the store): nothing but the reasons
    done, failed = bw.put_back(snap, [str(damaged)], bw.Sources(None, _none, _never))
    assert (done, failed) == (
        0,
        [(str(damaged), "neither a protected file nor a vendor build's: no copy of it")],
    )


def test_put_back_creates_a_removed_folder_and_removes_a_new_path(tmp_path: Path) -> None:
    folder, added = tmp_path / "torch", tmp_path / "planted"
    folder.mkdir(mode=0o755)
    snap = bw.snapshot([str(folder), str(added)], None)
    folder.rmdir()
    folder.write_text("a file where the folder was")
    added.mkdir()
    (added / "x").write_text("x")
    changed = bw.changed(snap)
    assert changed == sorted([str(folder), str(added)])
    assert bw.put_back(snap, changed, bw.Sources(None, _none, _never)) == (2, [])
    assert folder.is_dir() and not added.exists()


def _wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _is_build(name: str, key: str, version: str) -> bool:
    parts = wheel_file_name(name)
    return parts is not None and canonical(parts[0]) == key and same_version(parts[1], version)


def test_a_vendor_file_comes_back_from_the_vault_or_the_find_links(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "torch" / "__pycache__").mkdir(parents=True)
    init, version, pyc = (
        site / "torch" / "__init__.py",
        site / "torch" / "version.py",
        site / "torch" / "__pycache__" / "version.pyc",
    )
    init.write_bytes(b"import torch._C\n")
    version.write_bytes(b"__version__ = '2.4.1'\n")
    pyc.write_bytes(b"\0code")
    files = {
        "torch/__init__.py": {"sha256": _sha(init.read_bytes())},
        "torch/version.py": {"sha256": _sha(version.read_bytes())},
        "torch/__pycache__/version.pyc": {"pyc": True},
    }
    store = _store(tmp_path, {}, {"torch": {"version": "2.4.1+das.dtk2504", "files": files}})
    (store / "vault").mkdir()
    # the vault holds another build of torch only; the policy's find-links hold the vendor one
    _wheel(store / "vault" / "torch-2.4.1-py3-none-any.whl", {"torch/__init__.py": b"community\n"})
    links = tmp_path / "links"
    links.mkdir()
    _wheel(
        links / "torch-2.4.1+das.dtk2504-py3-none-any.whl",
        {
            "torch/__init__.py": init.read_bytes(),
            "torch-2.4.1+das.dtk2504.data/purelib/torch/version.py": version.read_bytes(),
        },
    )

    def owner_of(path: str) -> tuple[str, str] | None:
        rel = os.path.relpath(path, site)
        return ("torch", rel) if rel in files else None

    snap = bw.snapshot([str(init), str(version), str(pyc)], str(store))
    for path in (init, version, pyc):
        path.write_bytes(b"evil = True\n")
    changed = bw.changed(snap)
    unreachable = ["https://example.invalid/simple", str(tmp_path / "gone")]
    sources = bw.Sources(str(store), owner_of, _is_build, [*unreachable, f"file://{links}"])
    assert bw.put_back(snap, changed, sources) == (3, [])
    assert init.read_bytes() == b"import torch._C\n"
    assert version.read_bytes() == b"__version__ = '2.4.1'\n"
    assert not pyc.exists()  # byte code: Python writes it again from the source
    # without the find-links no wheel holds those bytes; without a digest nothing is trusted
    init.write_bytes(b"evil = True\n")
    sources = bw.Sources(str(store), owner_of, _is_build)
    assert bw.put_back(snap, [str(init)], sources) == (
        0,
        [(str(init), "no wheel of torch in the vault or the policy's find-links holds it")],
    )
    del files["torch/__init__.py"]["sha256"]
    (store / "baseline.json").write_text(
        json.dumps({"vendor": {"torch": {"version": "2.4.1+das.dtk2504", "files": files}}})
    )
    sources = bw.Sources(str(store), owner_of, _is_build)
    assert bw.put_back(snap, [str(init)], sources)[1] == [
        (str(init), "the guard's baseline holds no digest of it")
    ]


def test_wheel_member_reads_the_site_path_or_its_data_scheme(tmp_path: Path) -> None:
    wheel = _wheel(
        tmp_path / "w-1-py3-none-any.whl",
        {"a/b.py": b"site", "w-1.data/platlib/c.so": b"plat"},
    )
    assert bw.wheel_member(str(wheel), "a/b.py") == b"site"
    assert bw.wheel_member(str(wheel), "c.so") == b"plat"
    assert bw.wheel_member(str(wheel), "d.py") is None
    (tmp_path / "broken.whl").write_text("not a zip")
    assert bw.wheel_member(str(tmp_path / "broken.whl"), "a/b.py") is None


@pytest.mark.parametrize("module", ["buildwatch", "pipoverride"])
def test_the_copy_imports_only_the_standard_library(module: str) -> None:
    """The hook loads it by path inside pip (pip's build environments take site-packages off
    ``sys.path``): it may import the standard library only, and nothing of dtkguard."""
    path = Path(bw.__file__).with_name(f"{module}.py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module, ast.dump(node)
            names.add(node.module.split(".")[0])
    assert names and names <= sys.stdlib_module_names, names - sys.stdlib_module_names
