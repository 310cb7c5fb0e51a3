"""`wheel_listing`: one read of a wheel's zip serves the file and the binary judgements of a
run, and a wheel rewritten or replaced since is read again (real wheels, real files)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from dtkguard.guard.file_effects import wheel_effect
from dtkguard.resolve.binaries import wheel_listing
from tests.support.wheels import build_wheel


def _names(wheel: Path) -> set[str]:
    return {n for n in wheel_listing(wheel).names if not n.startswith("x-1.0.dist-info/")}


def test_a_wheel_rewritten_in_place_is_read_again(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "a", "x", "1.0", files={"x/a.py": "a"})
    assert _names(wheel) == {"x/a.py"}
    other = build_wheel(tmp_path / "b", "x", "1.0", files={"x/a.py": "a", "torch/b.py": "b"})
    inode = wheel.stat().st_ino
    with open(wheel, "r+b") as fh:  # the same file (inode), new bytes
        fh.write(other.read_bytes())
        fh.truncate()
    assert wheel.stat().st_ino == inode
    assert _names(wheel) == {"x/a.py", "torch/b.py"}


def test_a_wheel_replaced_by_rename_is_read_again(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "a", "x", "1.0", files={"x/a.py": "a"})
    assert _names(wheel) == {"x/a.py"}
    other = build_wheel(tmp_path / "b", "x", "1.0", files={"x/c.py": "c"})
    os.replace(other, wheel)
    assert _names(wheel) == {"x/c.py"}


def test_a_broken_member_the_file_judgement_reads_is_refused(tmp_path: Path) -> None:
    built = build_wheel(tmp_path / "a", "x", "1.0", files={"x/a.py": "a", "x.pth": "import x\n"})
    wheel = tmp_path / built.name
    with zipfile.ZipFile(built) as src, zipfile.ZipFile(wheel, "w") as out:
        for info in src.infolist():  # stored: the bytes themselves
            out.writestr(info.filename, src.read(info), zipfile.ZIP_STORED)
    data = bytearray(wheel.read_bytes())
    data[data.index(b"import x\n")] = ord("J")  # its CRC no longer right
    wheel.write_bytes(bytes(data))
    assert "x.pth" in wheel_listing(wheel).error
    site = str(tmp_path / "site")
    scheme = {k: site for k in ("purelib", "platlib", "scripts", "data", "headers")}
    try:
        wheel_effect(wheel, scheme, [site])
    except zipfile.BadZipFile as exc:
        assert "x.pth" in str(exc)
    else:
        raise AssertionError("a member that cannot be read was judged")


def test_a_pth_reaching_the_site_top_through_a_symlinked_folder_is_read(tmp_path: Path) -> None:
    """Where a member lands is the file judgement's to say: every name holding ``.pth`` is
    read, not only those at the wheel's top."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "alias").symlink_to(site)
    text = "import os; os.system('x')\n"
    wheel = build_wheel(tmp_path, "x", "1.0", files={"alias/zz.pth": text, "x/a.py": ""})
    real = os.path.realpath(site)
    scheme = {k: real for k in ("purelib", "platlib", "scripts", "data", "headers")}
    assert wheel_effect(wheel, scheme, [real])["contents"] == {f"{real}/zz.pth": text}
