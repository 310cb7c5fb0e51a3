"""The ELF reader on real shared objects (gcc) and hand-written ones (32-bit, big-endian),
on disk and inside wheels (stored and deflated), and on hostile files: a clear `ElfError`,
never a traceback, a hang or a large read."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest

from dtkguard import elf
from tests.support.elf import (
    AMDHIP,
    CUDART,
    GALAXYHIP,
    build_large_shared,
    build_shared,
    hostile_elves,
    write_elf,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("elf")
    return {
        "cuda": build_shared(tmp / "cuda.so", (CUDART,), runpath="$ORIGIN/../lib"),
        "dtk": build_shared(tmp / "dtk.so", (GALAXYHIP,), soname="libdtkext.so.1"),
        "rocm": build_shared(tmp / "rocm.so", (AMDHIP,)),
        "plain": build_shared(tmp / "plain.so"),
    }


def _counting(data: bytes) -> tuple[list[int], object]:
    spent = [0]

    def read(offset: int, n: int) -> bytes:
        spent[0] += n
        return data[offset : offset + n]

    return spent, read


def test_gcc_built_objects_name_what_they_link(built):
    assert elf.read_path(built["cuda"]).needed[0] == CUDART
    assert elf.read_path(built["cuda"]).runpath == ("$ORIGIN/../lib",)
    dtk = elf.read_path(built["dtk"])
    assert dtk.needed[0] == GALAXYHIP and dtk.soname == "libdtkext.so.1"
    assert elf.read_path(built["rocm"]).needed[0] == AMDHIP
    plain = elf.read_path(built["plain"])
    assert CUDART not in plain.needed and GALAXYHIP not in plain.needed
    assert (plain.bits, plain.endian, plain.kind) == (64, "little", "shared")


def test_reads_a_few_kilobytes_of_a_file_whatever_its_size(built, tmp_path):
    data = built["cuda"].read_bytes() + b"\0" * (8 << 20)  # a large file: the code is never read
    spent, read = _counting(data)
    assert elf.parse(read, len(data)).needed[0] == CUDART
    assert spent[0] < 4096


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("endian", ["<", ">"])
def test_every_class_and_byte_order(bits, endian):
    data = write_elf((CUDART, "libc.so.6"), bits=bits, endian=endian, soname="libx.so.1",
                     runpath="$ORIGIN:/opt/dtk/lib")  # fmt: skip
    link = elf.parse(lambda o, n: data[o : o + n], len(data))
    assert link.needed == (CUDART, "libc.so.6")
    assert link.soname == "libx.so.1" and link.runpath == ("$ORIGIN", "/opt/dtk/lib")
    assert (link.bits, link.endian) == (bits, "little" if endian == "<" else "big")


def test_rpath_is_read_like_runpath():
    data = write_elf((CUDART,), runpath="/a:/b")
    patched = data.replace(b"\x1d\x00\x00\x00\x00\x00\x00\x00", b"\x0f\x00\x00\x00\x00\x00\x00\x00")
    link = elf.parse(lambda o, n: patched[o : o + n], len(patched))
    assert link.rpath == ("/a", "/b") and link.runpath == ()


@pytest.mark.parametrize("name", sorted(hostile_elves()))
def test_hostile_files_are_a_clear_refusal_within_the_limits(name):
    data = hostile_elves()[name]
    spent, read = _counting(data)
    with pytest.raises(elf.ElfError) as err:
        elf.parse(read, len(data))
    assert str(err.value) and "\n" not in str(err.value)
    assert spent[0] <= elf.MAX_READ


def test_a_file_that_is_not_elf(tmp_path):
    (tmp_path / "data.so").write_bytes(b"just data, named .so")
    with pytest.raises(elf.ElfError, match="not an ELF file"):
        elf.read_path(tmp_path / "data.so")
    with pytest.raises(elf.ElfError, match="not a regular file"):
        elf.read_path(tmp_path)


def _zip(members: dict[str, tuple[bytes, int]]) -> zipfile.ZipFile:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, (data, method) in members.items():
            zf.writestr(zipfile.ZipInfo(name), data, compress_type=method)
    return zipfile.ZipFile(io.BytesIO(buf.getvalue()))


def test_wheel_members_stored_and_deflated(built):
    cuda = built["cuda"].read_bytes()
    zf = _zip(
        {
            "pkg/_C.cpython-310-x86_64-linux-gnu.so": (cuda, zipfile.ZIP_STORED),
            "pkg.libs/libfoo-1a2b3c4d.so.1.2": (cuda, zipfile.ZIP_DEFLATED),
            "pkg/data.so": (b"not elf", zipfile.ZIP_DEFLATED),
            "pkg/__init__.py": (b"", zipfile.ZIP_DEFLATED),
            "pkg/notes.so.txt": (cuda, zipfile.ZIP_DEFLATED),
        }
    )
    found = {name: (link, err) for name, link, err in elf.wheel_linkages(zf)}
    assert set(found) == {
        "pkg/_C.cpython-310-x86_64-linux-gnu.so",
        "pkg.libs/libfoo-1a2b3c4d.so.1.2",
    }
    for link, err in found.values():
        assert err == "" and link.exact and link.needed[0] == CUDART


def test_a_large_deflated_member_is_judged_by_its_head(built, monkeypatch):
    """Past EXACT_LIMIT the dynamic segment is not inflated: the library names of the part
    before the code (where .dynstr is) stand in for DT_NEEDED."""
    monkeypatch.setattr(elf, "EXACT_LIMIT", 4096)
    big = built["cuda"].read_bytes()
    zf = _zip({"pkg/_C.so": (big, zipfile.ZIP_DEFLATED)})
    [(_, link, err)] = elf.wheel_linkages(zf)
    assert err == "" and not link.exact and CUDART in link.needed


@pytest.mark.parametrize("name", sorted(hostile_elves()))
@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_hostile_members_are_reported_not_raised(name, method):
    zf = _zip({"pkg/_C.so": (hostile_elves()[name], method)})
    [(_, link, err)] = elf.wheel_linkages(zf)
    assert link is None and err and "Traceback" not in err


def test_a_corrupt_deflated_member_is_reported(built):
    data = built["cuda"].read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("pkg/_C.so"), data, compress_type=zipfile.ZIP_DEFLATED)
    raw = bytearray(buf.getvalue())
    raw[60:200] = b"\xff" * 140  # the deflate stream, past the local header
    [(_, link, err)] = elf.wheel_linkages(zipfile.ZipFile(io.BytesIO(bytes(raw))))
    assert link is None and "cannot be read" in err


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_program_headers_past_the_first_4_kib_are_read_in_every_member(method):
    """A loader follows e_phoff wherever it points: so does the reader of a deflated member
    (it once read only the first 4 KiB, and called such a CUDA library unreadable)."""
    data = bytearray(write_elf((CUDART,), pad=6000))
    data[5000 : 5000 + 2 * 56] = data[64 : 64 + 2 * 56]
    struct.pack_into("<Q", data, 32, 5000)
    [(_, link, err)] = elf.wheel_linkages(_zip({"pkg/_C.so": (bytes(data), method)}))
    assert err == "" and link.needed == (CUDART,)


def test_a_code_segment_at_the_start_leaves_the_header_readable(monkeypatch):
    """Past EXACT_LIMIT, an executable PT_LOAD at offset 1 must not cut the ELF header off the
    bytes the names are read from (it gave an IndexError as the reason)."""
    monkeypatch.setattr(elf, "EXACT_LIMIT", 200)
    data = bytearray(write_elf((CUDART,), pad=400))
    struct.pack_into("<IQ", data, 64 + 4, 5, 1)  # PT_LOAD: flags R+X, offset 1
    struct.pack_into("<Q", data, 64 + 56 + 8, 300)  # PT_DYNAMIC past EXACT_LIMIT
    [(_, link, err)] = elf.wheel_linkages(_zip({"pkg/_C.so": (bytes(data), zipfile.ZIP_DEFLATED)}))
    assert err == "" and not link.exact


@pytest.mark.parametrize(
    ("name", "shared", "native"),
    [
        ("pkg/_C.cpython-310-x86_64-linux-gnu.so", True, True),
        ("pkg/lib.solver.so", True, True),
        ("pkg/libgalaxyhip.so.5.2.25484.1857-0f32e4f0", True, True),
        ("pkg.libs/libcudart-1a2b3c4d.so.12", True, True),
        ("pkg/libcudart.so", True, True),
        ("x-1.0.data/scripts/tool", False, True),
        ("../../../bin/tool", False, True),
        ("pkg/bin/kernels", False, True),
        ("pkg/kernels", False, False),
        ("x-1.0.dist-info/RECORD", False, False),
        ("pkg/notes.so.txt", False, False),
        ("pkg/module.py", False, False),
        ("pkg/.so", False, False),
        ("pkg/", False, False),
    ],
)
def test_which_names_may_be_native_code(name, shared, native):
    assert elf.shared_name(name) is shared
    assert elf.native_name(name) is native


def test_a_deflated_library_of_a_few_mb_is_judged_by_its_head_not_inflated(tmp_path):
    """A 4 MB library has its dynamic segment after its code: inflating that far would cost
    what pip's unpacking does (a wheel of ten such libraries took as long again), so its head
    answers (``exact`` False) and still names the CUDA runtime."""
    so = build_large_shared(tmp_path / "libk.so", 4 << 20, (CUDART,))
    zf = _zip({"pkg/libk.so": (so.read_bytes(), zipfile.ZIP_DEFLATED)})
    [(_, link, err)] = elf.wheel_linkages(zf)
    assert err == "" and not link.exact and CUDART in link.needed
