"""Real ELF files for tests: shared objects built by the system compiler, and a small writer
for what it cannot build here (32-bit, big-endian) and for hostile files.

`build_shared` runs ``gcc -shared -Wl,--no-as-needed`` against stub libraries (each a real
shared object with its SONAME), so the result's ``DT_NEEDED`` are exactly the stubs named.
`write_elf` lays out a minimal ELF file by hand: header, program headers (one PT_LOAD over
the whole file, one PT_DYNAMIC), a string table and a dynamic segment; the hostile variants
start from it and break one field.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

from tests.support.need import missing

CUDART = "libcudart.so.12"
GALAXYHIP = "libgalaxyhip.so.5"
AMDHIP = "libamdhip64.so.6"


def gcc() -> str:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        missing("gcc (apt-get install gcc)")
    return cc


def stub_library(folder: Path, soname: str) -> Path:
    """A real shared object named ``soname`` (its SONAME too), exporting one function."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / soname
    if out.exists():
        return out
    src = folder / f"{soname}.c"
    src.write_text(f"int stub_{abs(hash(soname)) % 10**8}(void) {{ return 1; }}\n")
    subprocess.run(
        [gcc(), "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(out), str(src)],
        check=True,
        capture_output=True,
    )
    return out


def build_shared(
    out: Path,
    needs: tuple[str, ...] = (),
    *,
    stubs: Path | None = None,
    soname: str | None = None,
    runpath: str | None = None,
    extra_c: str = "",
) -> Path:
    """Build ``out`` (a shared object) that needs the stub libraries ``needs`` (SONAMEs)."""
    stubs = stubs or out.parent / "_stubs"
    for name in needs:
        stub_library(stubs, name)
    src = out.with_name(out.name + ".c")
    src.write_text(f"int ext_entry(void) {{ return 42; }}\n{extra_c}")
    cmd = [gcc(), "-shared", "-fPIC", "-o", str(out), str(src), "-Wl,--no-as-needed"]
    if soname:
        cmd.append(f"-Wl,-soname,{soname}")
    if runpath:
        cmd.append(f"-Wl,-rpath,{runpath},--enable-new-dtags")
    cmd += [f"-L{stubs}", *(f"-l:{n}" for n in needs)]
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(cmd, check=True, capture_output=True)
    return out


# -- a hand-written ELF file ---------------------------------------------------------------


def write_elf(
    needed: tuple[str, ...] = (),
    *,
    bits: int = 64,
    endian: str = "<",
    soname: str | None = None,
    runpath: str | None = None,
    machine: int = 62,
    pad: int = 0,
) -> bytes:
    """A minimal ELF shared object (``e_type`` 3) with these dynamic entries, as bytes."""
    names = b"\0"
    offsets = {}
    for name in (*needed, *(x for x in (soname, runpath) if x)):
        offsets[name] = len(names)
        names += name.encode() + b"\0"
    ehsize, phentsize = (52, 32) if bits == 32 else (64, 56)
    phoff = ehsize
    strtab_off = phoff + 2 * phentsize
    dyn_off = strtab_off + len(names) + (-len(names) % 8)
    entries = [(1, offsets[n]) for n in needed]
    if soname:
        entries.append((14, offsets[soname]))
    if runpath:
        entries.append((29, offsets[runpath]))
    entries += [(5, 0x1000 + strtab_off), (10, len(names)), (0, 0)]
    dyn_fmt = endian + ("iI" if bits == 32 else "qQ")
    dynamic = b"".join(struct.pack(dyn_fmt, t, v) for t, v in entries)
    size = dyn_off + len(dynamic) + pad
    header = _ident(bits, endian) + _header(bits, endian, machine, phoff, phentsize, ehsize)
    loads = _phdr(bits, endian, 1, 0, 0x1000, size) + _phdr(
        bits, endian, 2, dyn_off, 0x1000 + dyn_off, len(dynamic)
    )
    body = header + loads + names
    body += b"\0" * (dyn_off - len(body))
    return body + dynamic + b"\0" * pad


def _ident(bits: int, endian: str) -> bytes:
    return b"\x7fELF" + bytes([1 if bits == 32 else 2, 1 if endian == "<" else 2, 1]) + bytes(9)


def _header(bits: int, endian: str, machine: int, phoff: int, phentsize: int, ehsize: int):
    if bits == 32:
        return struct.pack(endian + "HHIIIIIHHHHHH", 3, machine, 1, 0, phoff, 0, 0, ehsize,
                           phentsize, 2, 40, 0, 0)  # fmt: skip
    return struct.pack(endian + "HHIQQQIHHHHHH", 3, machine, 1, 0, phoff, 0, 0, ehsize,
                       phentsize, 2, 64, 0, 0)  # fmt: skip


def _phdr(bits: int, endian: str, kind: int, offset: int, vaddr: int, size: int) -> bytes:
    if bits == 32:
        return struct.pack(endian + "8I", kind, offset, vaddr, vaddr, size, size, 4, 4)
    return struct.pack(endian + "IIQQQQQQ", kind, 4, offset, vaddr, vaddr, size, size, 8)


def hostile_elves() -> dict[str, bytes]:
    """ELF files that break the reader's expectations, one way each (64-bit little-endian)."""
    good = write_elf((CUDART, "libc.so.6"))
    phnum_at, phoff_at = 56, 32
    dyn_off = struct.unpack_from("<Q", good, 64 + 56 + 8)[0]
    out = {
        "truncated-header": good[:30],
        "truncated-phdrs": good[:100],
        "truncated-dynamic": good[: dyn_off + 8],
        "huge-phnum": good[:phnum_at] + struct.pack("<H", 0xFFFF) + good[phnum_at + 2 :],
        "phoff-past-eof": good[:phoff_at] + struct.pack("<Q", 1 << 40) + good[phoff_at + 8 :],
        "bad-class": good[:4] + b"\x07" + good[5:],
    }
    # a dynamic segment that claims a million entries (and has no DT_NULL in what exists)
    filesz_at = 64 + 56 + 32
    out["huge-dynamic"] = good[:filesz_at] + struct.pack("<Q", 16 << 20) + good[filesz_at + 8 :]
    # a dynamic segment of only DT_NEEDED entries pointing at one name, no DT_NULL: "looping"
    loop = bytearray(good)
    for i in range((len(good) - dyn_off) // 16):
        struct.pack_into("<qQ", loop, dyn_off + 16 * i, 1, 1)
    out["looping-dynamic"] = bytes(loop)
    # DT_STRTAB outside every PT_LOAD, and a name offset past DT_STRSZ
    out["strtab-unmapped"] = _patch_dynamic(good, dyn_off, 5, 0xDEAD0000)
    out["name-past-strsz"] = _patch_dynamic(good, dyn_off, 10, 1)
    # a name without its terminating NUL: DT_STRTAB at the file's last bytes, all non-NUL
    tail = bytearray(good + b"A" * 64)
    struct.pack_into("<Q", tail, 64 + 32, len(tail))  # the PT_LOAD covers the tail
    struct.pack_into("<Q", tail, 64 + 40, len(tail))
    tail = bytearray(_patch_dynamic(bytes(tail), dyn_off, 5, 0x1000 + len(good)))
    out["unterminated-name"] = _patch_dynamic(bytes(tail), dyn_off, 10, 1 << 20)
    out["many-needed"] = write_elf(tuple(f"libx{i}.so" for i in range(600)))
    return out


def _patch_dynamic(data: bytes, dyn_off: int, tag: int, value: int) -> bytes:
    out = bytearray(data)
    i = dyn_off
    while i + 16 <= len(out):
        t, _ = struct.unpack_from("<qQ", out, i)
        if t == tag:
            struct.pack_into("<qQ", out, i, t, value)
        if t == 0:
            break
        i += 16
    return bytes(out)


def build_large_shared(out: Path, size: int, needs: tuple[str, ...] = ()) -> Path:
    """A real shared object of about ``size`` bytes, laid out like a large GPU library: its
    bulk is a read-only section of real machine code (this machine's libraries, concatenated)
    placed before the writable segment that holds ``.dynamic``, as ``.nv_fatbin`` or
    ``.rodata`` are in libtorch; it needs the stub libraries ``needs``."""
    tmp = out.parent / f"_{out.name}.build"
    tmp.mkdir(parents=True, exist_ok=True)
    blob = tmp / "blob.bin"
    with open(blob, "wb") as fh:
        written = 0
        sources = sorted(Path("/usr/lib").rglob("*.so*")) + sorted(Path("/usr/bin").glob("*"))
        while written < size:
            for src in sources:
                try:
                    data = src.read_bytes() if src.is_file() and not src.is_symlink() else b""
                except OSError:
                    continue
                data = data[: size - written]
                fh.write(data)
                written += len(data)
                if written >= size:
                    break
    for tool in ("ld", "objcopy"):
        if shutil.which(tool) is None:
            missing(f"{tool} (apt-get install binutils)")
    subprocess.run(["ld", "-r", "-b", "binary", "-o", str(tmp / "blob.o"), "blob.bin"],
                   cwd=tmp, check=True, capture_output=True)  # fmt: skip
    subprocess.run(
        ["objcopy", "--rename-section", ".data=.rodata,alloc,load,readonly,data,contents",
         str(tmp / "blob.o"), str(tmp / "ro.o")],
        check=True, capture_output=True,
    )  # fmt: skip
    stubs = tmp / "stubs"
    for name in needs:
        stub_library(stubs, name)
    src = tmp / "main.c"
    src.write_text("int ext_entry(void) { return 42; }\n")
    cmd = [gcc(), "-shared", "-fPIC", "-o", str(out), str(src), str(tmp / "ro.o"),
           "-Wl,--no-as-needed", "-Wl,-z,noexecstack", f"-L{stubs}"]  # fmt: skip
    cmd += [f"-l:{n}" for n in needs]
    subprocess.run(cmd, check=True, capture_output=True)
    shutil.rmtree(tmp)
    return out
