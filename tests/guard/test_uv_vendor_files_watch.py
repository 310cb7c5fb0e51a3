"""dtkuv watches every vendor file without stat'ing it before uv runs.

The vendor builds' files (a vendor torch's 20,000 ``.py`` and ``.pyc``) are watched by the names
in their folders, each folder's identity (device, inode) and a clock stamp per file system (the
ctime of an unnamed ``O_TMPFILE`` file made just before uv's first run): writing, truncating,
``chmod``, ``utime``, ``link`` and ``rename`` set a file's ctime to the clock's now, so after
uv ran a file whose ctime is not before the stamp, one that is gone, a new name, or a folder
that is not the same folder is a change. Each way a build can change a vendor file is refused
here and put back from the store's copies, as the baseline recorded it (bytes, mode, mtime):
real uv, a real PEP 517 backend that does it while uv plans, the venv byte-identical after."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from tests.guard.conftest import Guarded, assert_build_refused_and_put_back
from tests.guard.test_build_journal import BACKEND, write_evil_sdist
from tests.guard.test_uv_index_effects import _dtkuv

pytestmark = pytest.mark.wheel_cache

#: what the backend does to the vendor torch when uv imports it to plan (``T``: the path of
#: ``torch/__init__.py``, ``V``: of ``torch/version.py``, ``AWAY``: a folder outside the venv)
ATTACKS = {
    # the same size and the same mtime: only the ctime moves
    "overwritten-in-place": """
st = os.stat(T)
with open(T, "r+b") as fh:
    fh.write(b"#" * st.st_size)
os.utime(T, ns=(st.st_atime_ns, st.st_mtime_ns))
""",
    # a new file renamed over it, with its mtime
    "replaced-by-rename": """
st = os.stat(T)
with open(T + ".new", "wb") as fh:
    fh.write(b"import os\\n")
os.utime(T + ".new", ns=(st.st_atime_ns, st.st_mtime_ns))
os.replace(T + ".new", T)
""",
    # another vendor file's inode (written long before uv ran) linked in its place
    "a-hard-link-in-its-place": """
os.link(V, T + ".new")
os.replace(T + ".new", T)
""",
    "chmod": """
os.chmod(T, 0o777)
""",
    "a-new-file-in-its-folder": """
with open(os.path.join(os.path.dirname(T), "_planted.py"), "w") as fh:
    fh.write("import os\\n")
""",
    "removed": """
os.unlink(T)
""",
    # the folder moved away (its files keep their ctimes) and a symlink to it in its place
    "its-folder-swapped-for-a-symlink": """
os.rename(os.path.dirname(T), AWAY)
os.symlink(AWAY, os.path.dirname(T))
""",
}


def _attack_sdist(dest: Path, site: Path, away: Path, attack: str) -> Path:
    """An sdist whose backend runs ``attack`` when uv imports it to plan."""
    path = write_evil_sdist(dest, [], [])
    code = (
        f"T = {str(site / 'torch' / '__init__.py')!r}\nV = {str(site / 'torch' / 'version.py')!r}"
    )
    code += f"\nAWAY = {str(away)!r}\n{ATTACKS[attack]}"
    backend = f"TARGETS = []\nPLANTS = []\nLATE = False\n{BACKEND}\n{code}"
    with tarfile.open(path) as tf:
        members = [(m, tf.extractfile(m)) for m in tf.getmembers()]
        files = {m.name: (b.read() if b else b"") for m, b in members}
    files["evilbuild-1.0/backend.py"] = backend.encode()
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_build_that_changes_a_vendor_file_is_refused_and_put_back(
    fresh: Guarded, uv: str, tmp_path: Path, attack: str
) -> None:
    g = fresh
    site = g.venv.site_packages
    target = site / "torch" / "__init__.py"
    sdist = _attack_sdist(tmp_path / "src", site, tmp_path / "away", attack)
    st = os.lstat(target)
    before = g.venv.snapshot()
    proc = _dtkuv(g, tmp_path / "uv-cache", uv, "install", "--no-deps", "--no-index", str(sdist))
    assert_build_refused_and_put_back(g, proc, before)
    assert not (site / "torch").is_symlink()
    assert not (site / "torch" / "_planted.py").exists()
    now = os.lstat(target)
    assert (stat.S_IMODE(now.st_mode), now.st_mtime_ns) == (
        stat.S_IMODE(st.st_mode),
        st.st_mtime_ns,
    )
    if attack in ("overwritten-in-place", "chmod"):
        assert now.st_ino == st.st_ino  # put back in place: its hard links get the bytes too


@pytest.mark.parametrize("kind", ["source", "byte code"])
def test_a_vendor_file_changed_before_uv_ran_is_not_blamed(
    fresh: Guarded, uv: str, tmp_path: Path, kind: str
) -> None:
    """The stamp is taken when dtkuv starts: a vendor file (source or byte code) whose ctime
    is recent but before it (touched a moment earlier) is not a change of uv's run."""
    g = fresh
    torch = g.venv.site_packages / "torch"
    if kind == "source":
        target = torch / "__init__.py"
    else:
        target = next((torch / "__pycache__").glob("__init__.*.pyc"))
    st = os.stat(target)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # its ctime is now, before uv runs
    sdist = write_evil_sdist(tmp_path / "src", [], [])
    proc = _dtkuv(g, tmp_path / "uv-cache", uv, "install", "--no-deps", "--no-index", str(sdist))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "evilbuild" in g.venv.installed()
    assert target.exists()
