"""The lock writer: validation before writing, closure check, determinism, requirements files."""

from __future__ import annotations

import sys

import pytest
from packaging.requirements import Requirement

from dtkguard.errors import InputError
from dtkguard.lock.read import read_lock
from dtkguard.lock.requirements import from_files
from dtkguard.lock.write import (
    LockEntry,
    build_document,
    closure_problems,
    dumps,
    require_pylock,
    write_lock,
)

MARKERS = {
    "python_version": "3.10",
    "python_full_version": "3.10.0",
    "sys_platform": "linux",
    "platform_machine": "x86_64",
    "platform_system": "Linux",
    "extra": "",
}


def _entry(name, version, reqs=(), **kw):
    return LockEntry(
        name,
        version,
        [Requirement(r) for r in reqs],
        wheel_name=f"{name}-{version}-py3-none-any.whl",
        url=f"http://127.0.0.1:1/files/{name}-{version}-py3-none-any.whl",
        sha256="0" * 64,
        size=10,
        **kw,
    )


def test_closure_check_follows_markers_and_extras():
    entries = [
        _entry("a", "1.0", ["b>=1", 'c; python_version < "3.10"', "d[x]"]),
        _entry("b", "0.9"),
        _entry("d", "2.0", ['e; extra == "x"', 'f; extra == "y"']),
    ]
    assert closure_problems(entries, MARKERS) == [
        "a 1.0 requires b>=1, the lock holds 0.9",
        'd 2.0 [x] requires e; extra == "x", which the lock does not hold',
    ]
    assert closure_problems([_entry("b", "1.0")], MARKERS) == []


def test_document_is_validated_before_anything_is_written(tmp_path):
    doc = build_document(
        [_entry("a", "1.0")],
        requires_python="==3.10.*",
        environments=["sys_platform == 'linux'"],
        tool={"policy": "p"},
    )
    doc["packages"][0]["wheels"][0]["name"] = "other-1.0-py3-none-any.whl"
    out = tmp_path / "pylock.x.toml"
    with pytest.raises(InputError) as err:
        write_lock(out, doc)
    assert "refusing to write an invalid PEP 751 lock" in str(err.value)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_written_lock_reads_back_and_renders_identically(tmp_path):
    entries = [
        _entry("zeta", "1.0", tool={"source": "public"}),
        _entry("torch", "2.4.1+das.opt1.dtk25041", tool={"source": "vendor"}),
    ]
    doc = build_document(
        entries,
        requires_python="==3.10.*",
        environments=[],
        tool={
            "policy": "dtk",
            "inputs": {"requirements": ["a", "b"]},
            "installed": [{"name": "x", "version": "1"}],
        },
    )
    data = write_lock(tmp_path / "pylock.t.toml", doc)
    assert data == dumps(doc).encode() == (tmp_path / "pylock.t.toml").read_bytes()
    lock = read_lock(tmp_path / "pylock.t.toml")
    assert [name for name, _, _ in lock.pins()] == ["torch", "zeta", "x"]
    assert [(i.key, i.version) for i in lock.dtkguard.installed] == [("x", "1")]
    assert "x" not in lock.by_name()
    assert lock.dtkguard.table["inputs"] == {"requirements": ["a", "b"]}


def test_missing_pylock_is_said_clearly(monkeypatch):
    import packaging

    monkeypatch.setitem(sys.modules, "packaging.pylock", None)  # as on packaging < 26
    monkeypatch.delattr(packaging, "pylock", raising=False)
    with pytest.raises(InputError) as err:
        require_pylock()
    assert "needs packaging>=26.1" in str(err.value)


def test_requirements_files_through_pip_api(tmp_path):
    (tmp_path / "base.txt").write_text("numpy>=1.26 \\\n  --hash=sha256:" + "a" * 64 + "\n")
    (tmp_path / "r.txt").write_text(
        "# comment\n-r base.txt\nvllm[audio]==0.8.5 ; python_version < '3.12'\n"
        "--index-url http://127.0.0.1:1/simple/\n"
    )
    reqs = {r.name: r for r in from_files([str(tmp_path / "r.txt")])}
    assert str(reqs["numpy"].specifier) == ">=1.26"
    assert (
        reqs["vllm"].extras == {"audio"} and str(reqs["vllm"].marker) == 'python_version < "3.12"'
    )
    with pytest.raises(InputError) as err:
        from_files([str(tmp_path / "missing.txt")])
    assert err.value.field == "-r"
