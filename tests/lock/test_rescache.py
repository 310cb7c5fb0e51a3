"""The resolution cache and the page cache: the lock is byte-identical with and without them,
every input change misses, and an index page is asked for again with its validator."""

from __future__ import annotations

import os
import shutil
import zipfile

import pytest

from tests.support.cli import dtkguard_in
from tests.support.index import serve_index
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel

HIT = "from the resolution cache"


#: beta 1.1 asks for nothing on Python 3 (a long marker, so a rewrite can keep its size)
QUIET = ["some-long-project-name-never-needed; python_version < '3'"]


def _wheels(folder):
    build_wheel(folder, "alpha", "1.0", requires_dist=["beta>=1"])
    build_wheel(folder, "beta", "1.0")
    build_wheel(folder, "beta", "1.1", requires_dist=QUIET)
    build_wheel(folder, "gamma", "1")  # needed only once beta 1.1 is rewritten
    return folder


def _run(tmp_path, *args, cache="c"):
    """``dtkguard lock ARGS -o pylock.t.toml`` with the cache folder ``cache``: (exit code,
    stderr, the lock's bytes or None)."""
    out = tmp_path / "pylock.t.toml"
    out.unlink(missing_ok=True)
    env = hermetic_env(DTKGUARD_CACHE_DIR=str(tmp_path / cache))
    proc = dtkguard_in(env, "lock", *args, "-o", out.name, cwd=tmp_path)
    return proc.returncode, proc.stderr, out.read_bytes() if out.exists() else None


def _fresh(tmp_path, *args):
    """The same lock made with no cache at all."""
    return _run(tmp_path, "--no-cache", *args, cache="none")


BASE = ("--no-index", "--find-links", "w", "--python-version", "3.10")


def test_a_warm_lock_is_the_cold_lock_byte_for_byte(tmp_path):
    _wheels(tmp_path / "w")
    code, err, cold = _run(tmp_path, "alpha", *BASE)
    assert code == 0 and HIT not in err, err
    code, err, warm = _run(tmp_path, "alpha", *BASE)
    assert code == 0 and HIT in err, err
    assert warm == cold == _fresh(tmp_path, "alpha", *BASE)[2]
    # --no-cache keeps no metadata, page or resolution (the compiled policy is cached apart)
    assert not [p for p in ("metadata-v1", "pages-v1", "resolutions-v1")
                if (tmp_path / "none" / p).exists()]  # fmt: skip


def _policy(tmp_path, deny: str) -> str:
    path = tmp_path / "p.toml"
    path.write_text(
        '[policy]\nname = "t"\nextends = ["dtk-25.04.1"]\n'
        + (f'\n[[deny]]\npattern = "{deny}"\nreason = "test"\n' if deny else "")
    )
    return str(path)


def _add(tmp_path):
    build_wheel(tmp_path / "w", "beta", "1.2")


def _remove(tmp_path):
    (tmp_path / "w" / "beta-1.1-py3-none-any.whl").unlink()


def _rewrite(tmp_path):
    """beta 1.1 rewritten in place with a new dependency, keeping its size (padded with a zip
    comment), inode and mtime: only its bytes and its ctime change."""
    path = tmp_path / "w" / "beta-1.1-py3-none-any.whl"
    st = path.stat()
    new = build_wheel(tmp_path / "new", "beta", "1.1", requires_dist=["gamma"])
    with zipfile.ZipFile(new, "a") as zf:
        zf.comment = b" " * (st.st_size - new.stat().st_size)
    with path.open("r+b") as fh:
        fh.write(new.read_bytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    now = path.stat()
    assert (now.st_size, now.st_ino, now.st_mtime_ns) == (st.st_size, st.st_ino, st.st_mtime_ns)


#: (the arguments before, the arguments after (they come last: they win), a change made to
#: the folder)
CHANGES = {
    "requirement": (["alpha"], ["alpha", "beta<1.1"], None),
    "policy": (["alpha", "--policy", "P0"], ["alpha", "--policy", "P1"], None),
    "target": (["alpha"], ["alpha", "--python-version", "3.11"], None),
    "pre-releases": (["alpha"], ["alpha", "--pre"], None),
    "file added": (["alpha"], ["alpha"], _add),
    "file removed": (["alpha"], ["alpha"], _remove),
    "file rewritten in place": (["alpha"], ["alpha"], _rewrite),
    "requirements file edited": (["-r", "r.txt"], ["-r", "r.txt"], lambda t: _edit(t, "r.txt")),
    "included file edited": (["-r", "top.txt"], ["-r", "top.txt"], lambda t: _edit(t, "inc.txt")),
    "requirement spelled otherwise": (["alpha"], ["Alpha >= 0"], None),
}


def _requirement_files(tmp_path):
    """``r.txt`` (alpha) and ``top.txt``, which holds only ``-r inc.txt`` (alpha)."""
    (tmp_path / "r.txt").write_text("alpha\n")
    (tmp_path / "top.txt").write_text("-r inc.txt\n")
    (tmp_path / "inc.txt").write_text("alpha\n")


def _edit(tmp_path, name):
    """A requirement added to ``name``, its mtime kept."""
    path = tmp_path / name
    st = path.stat()
    path.write_text("alpha\nbeta<1.1\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_every_input_change_misses(tmp_path, change):
    before, after, edit = CHANGES[change]
    _wheels(tmp_path / "w")
    _requirement_files(tmp_path)
    policies = {"P0": _policy(tmp_path, ""), "P1": None}
    if change == "policy":
        (tmp_path / "p1").mkdir()
        policies["P1"] = _policy(tmp_path / "p1", "beta")
    before = [policies.get(a) or a for a in before]
    after = [policies.get(a) or a for a in after]
    _run(tmp_path, *BASE, *before)
    if edit is not None:
        edit(tmp_path)
    code, err, got = _run(tmp_path, *BASE, *after)
    assert HIT not in err, err
    want = _fresh(tmp_path, *BASE, *after)
    assert (code, got) == (want[0], want[2]), err
    # and the new answer is served once it is the cached one
    again = _run(tmp_path, *BASE, *after)
    assert again[2] == got
    assert HIT in again[1] if code == 0 else again[1] == err  # a refusal is said the same


def test_a_find_links_change_is_seen_in_the_lock(tmp_path):
    _wheels(tmp_path / "w")
    _run(tmp_path, "alpha", *BASE)
    _rewrite(tmp_path)
    code, err, got = _run(tmp_path, "alpha", *BASE)
    assert code == 0 and b'name = "gamma"' in got, err


def test_an_unsatisfiable_request_is_cached_and_still_refused(tmp_path):
    _wheels(tmp_path / "w")
    first = _run(tmp_path, "alpha", "beta<1", *BASE)
    second = _run(tmp_path, "alpha", "beta<1", *BASE)
    assert first[0] == second[0] == 1
    assert first[1] == second[1] and second[2] is None


def test_damaged_entries_are_misses(tmp_path):
    _wheels(tmp_path / "w")
    cold = _run(tmp_path, "alpha", *BASE)[2]
    entries = [p for p in (tmp_path / "c" / "resolutions-v1").rglob("*") if p.is_file()]
    assert entries
    for path in entries:
        path.write_bytes(path.read_bytes().replace(b"beta", b"bet4"))
    code, err, got = _run(tmp_path, "alpha", *BASE)
    assert code == 0 and HIT not in err and got == cold


def _index_run(tmp_path, index, *extra):
    return _run(tmp_path, "alpha", "--index-url", index.url, "--python-version", "3.10", *extra)


def test_an_index_page_with_a_new_etag_misses(tmp_path):
    _wheels(tmp_path / "w")
    with serve_index(tmp_path / "w", validators=True) as index:
        cold = _index_run(tmp_path, index)
        index.clear()
        _code, err, warm = _index_run(tmp_path, index)
        assert HIT in err and warm == cold[2]
        # every page was asked for again, with its validator, and was not modified
        pages = [r for r in index.log if r.path.startswith("/simple/")]
        assert pages and all(r.status == 304 for r in pages)
        assert not [r for r in index.log if r.path.startswith("/files/")]
        _add(tmp_path)
        _code, err, changed = _index_run(tmp_path, index)
        assert HIT not in err, err
        assert changed == _fresh(tmp_path, "alpha", "--index-url", index.url,
                                 "--python-version", "3.10")[2]  # fmt: skip
        assert b'version = "1.2"' in changed


def test_a_fresh_page_is_not_asked_for_again(tmp_path):
    _wheels(tmp_path / "w")
    with serve_index(tmp_path / "w", validators=True, cache_control="max-age=600") as index:
        cold = _index_run(tmp_path, index)
        index.clear()
        _code, err, warm = _index_run(tmp_path, index)
        assert HIT in err and warm == cold[2]
        assert index.requests == []


def test_an_index_without_validators_is_read_again(tmp_path):
    _wheels(tmp_path / "w")
    with serve_index(tmp_path / "w") as index:
        cold = _index_run(tmp_path, index)
        shutil.rmtree(tmp_path / "c" / "resolutions-v1")
        index.clear()
        warm = _index_run(tmp_path, index)[2]
        assert warm == cold[2]
        assert {r.status for r in index.log if r.path.startswith("/simple/")} == {200}
        assert not list((tmp_path / "c" / "pages-v1").rglob("*.*"))


def test_an_invalid_requirement_is_refused_every_time(tmp_path):
    """The key takes requirements as typed: one that does not parse never made an entry."""
    _wheels(tmp_path / "w")
    assert _run(tmp_path, "alpha", *BASE)[0] == 0
    for _ in range(2):
        code, err, got = _run(tmp_path, "alpha", "beta>>1", *BASE)
        assert code == 2 and "invalid requirement 'beta>>1'" in err and got is None, err
        assert HIT not in err and "Traceback" not in err


def test_a_library_upgrade_misses(tmp_path, monkeypatch):
    """The code of the libraries that shape a lock is in the key: a file of one rewritten (an
    upgrade, an edit) gives another key; the running Python's version is in it too."""
    import sys

    from dtkguard.lock import rescache

    lib = tmp_path / "site" / "fakelib"
    (lib / "sub").mkdir(parents=True)
    (lib / "__init__.py").write_text("x = 1\n")
    (lib / "sub" / "m.py").write_text("y = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(rescache, "LIBRARIES", ("fakelib",))
    first = rescache.code_digest()
    assert rescache.code_digest() == first
    st = (lib / "sub" / "m.py").stat()
    (lib / "sub" / "m.py").write_text("y = 2\n")  # same size
    os.utime(lib / "sub" / "m.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert rescache.code_digest() != first
    changed = rescache.code_digest()
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    assert rescache.code_digest() != changed


def test_a_hit_imports_no_resolver_stack(tmp_path):
    """A resolution-cache hit of a find-links lock parses nothing and builds nothing: neither
    packaging, resolvelib, tomlkit, pydantic, dataclasses, typing nor a thread pool is imported."""
    import json
    import subprocess
    import sys

    from tests.support.cli import REPO

    _wheels(tmp_path / "w")
    assert _run(tmp_path, "alpha", *BASE)[0] == 0
    script = (
        "import json, sys\n"
        "from dtkguard.cli import main\n"
        f"code = main({['lock', 'alpha', *BASE, '-o', 'pylock.t.toml']!r})\n"
        "heavy = ('packaging', 'resolvelib', 'tomlkit', 'pydantic', 'dataclasses', "
        "'concurrent', 'pip_api', 'tempfile', 'zipfile', 'http', 'typing')\n"
        "print(json.dumps([code, sorted(m for m in sys.modules if m.split('.')[0] in heavy)]))"
    )
    env = hermetic_env(DTKGUARD_CACHE_DIR=str(tmp_path / "c"), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path,
                          capture_output=True, text=True)  # fmt: skip
    assert HIT in proc.stderr, proc.stderr
    code, heavy = json.loads(proc.stdout.strip().splitlines()[-1])
    assert code == 0 and heavy == [], heavy
