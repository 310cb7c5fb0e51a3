"""What an ELF file links: ``DT_NEEDED``, ``DT_RUNPATH``/``DT_RPATH`` and ``DT_SONAME``.

Standard library only, no dtkguard imports: the pip hook gets a copy of this file beside it
(``_dtkguard_elf.py``), as it gets `dtkguard.decision`. The reader follows the ELF header to
the program headers, the ``PT_DYNAMIC`` segment and, through the ``PT_LOAD`` segment that maps
``DT_STRTAB``, to the names; 32- and 64-bit, little- and big-endian. It reads a few KB of a
file (never the code), through a ``read(offset, size) -> bytes`` callable, so the same parser
serves a file on disk, a stored zip member (its bytes inside the wheel) and a deflated one (a
seekable stream that inflates as it goes).

Every count and offset is checked against fixed limits and the file's size before it is used:
a truncated file, offsets past the end, huge counts or a dynamic segment with no end give
`ElfError` (a `ValueError`) with one sentence, never a traceback, a hang or a large read.
"""

from __future__ import annotations

import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    import re
    import zipfile
    from collections.abc import Callable, Iterable
    from typing import IO, TypeAlias, TypedDict

    #: ``read(offset, n)``: the ``n`` bytes of the file at ``offset`` (fewer at its end)
    Read: TypeAlias = Callable[[int, int], bytes]
    #: a program header: (p_type, p_offset, p_vaddr, p_filesz)
    Segment: TypeAlias = tuple[int, int, int, int]
    #: a program header with its flags: (p_type, p_offset, p_vaddr, p_filesz, p_flags)
    FlaggedSegment: TypeAlias = tuple[int, int, int, int, int]
    #: a dynamic entry: (d_tag, d_val)
    Dynamic: TypeAlias = tuple[int, int]
    #: (member name, its `Linkage` or None, why not) of `wheel_linkages`
    MemberLinkage: TypeAlias = tuple[str, "Linkage | None", str]

    class LinkageDict(TypedDict):
        """`Linkage.to_json`."""

        exact: bool
        needed: list[str]
        soname: str | None
        rpath: list[str]
        runpath: list[str]


MAGIC = b"\x7fELF"
#: program headers read at most (real shared objects have about ten)
MAX_PHNUM = 256
#: dynamic entries read at most (real ones have a few dozen; a big C++ library about 60)
MAX_DYNAMIC = 2048
#: a library name or search path is at most this long
MAX_STRING = 4096
#: DT_NEEDED entries kept at most
MAX_NEEDED = 512
#: bytes one file may cost the reader in all (header, program headers, dynamic, names)
MAX_READ = 256 << 10

_NULL, _NEEDED, _STRTAB, _STRSZ, _SONAME, _RPATH, _RUNPATH = 0, 1, 5, 10, 14, 15, 29
_PT_LOAD, _PT_DYNAMIC = 1, 2
_TYPES = {1: "relocatable", 2: "executable", 3: "shared", 4: "core"}


class ElfError(ValueError):
    """The file is not an ELF file this reader accepts; the text says why."""


class NotElf(ElfError):
    """The file does not start with the ELF magic (a data file named ``.so``)."""


class Linkage:
    """What one ELF file links: its dynamic entries (empty for a static file)."""

    __slots__ = (
        "bits", "endian", "exact", "kind", "machine", "needed", "rpath", "runpath", "soname"
    )  # fmt: skip

    def __init__(
        self,
        bits: int,
        endian: str,
        kind: str,
        machine: int,
        needed: Iterable[str] = (),
        soname: str | None = None,
        rpath: Iterable[str] = (),
        runpath: Iterable[str] = (),
    ) -> None:
        #: False when ``needed`` holds the library names of the file's head (`read_member` of a
        #: large compressed member) rather than its DT_NEEDED entries
        self.exact = True
        self.bits = bits
        self.endian = endian
        self.kind = kind
        self.machine = machine
        self.needed = tuple(needed)
        self.soname = soname
        self.rpath = tuple(rpath)
        self.runpath = tuple(runpath)

    def to_json(self) -> LinkageDict:
        return {
            "exact": self.exact,
            "needed": list(self.needed),
            "soname": self.soname,
            "rpath": list(self.rpath),
            "runpath": list(self.runpath),
        }

    def __repr__(self) -> str:
        return f"Linkage({self.bits}-bit {self.endian}, needed={list(self.needed)!r})"


def is_elf(head: bytes | bytearray | memoryview) -> bool:
    """Do these first bytes start an ELF file?"""
    return bytes(head[:4]) == MAGIC


class _Budget:
    """``read`` with a total byte cap and a check that every read is whole."""

    def __init__(self, read: Read, size: int) -> None:
        self._read = read
        self.size = size
        self.spent = 0

    def take(self, offset: int, length: int, what: str) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ElfError(f"{what}: reaches past the end of the file ({self.size} bytes)")
        self.spent += length
        if self.spent > MAX_READ:
            raise ElfError(f"{what}: reading it would pass the reader's limit of {MAX_READ} bytes")
        data = self._read(offset, length)
        if len(data) != length:
            raise ElfError(f"{what}: the file is truncated")
        return data


def parse(read: Read, size: int) -> Linkage:
    """The `Linkage` of an ELF file of ``size`` bytes that ``read(offset, n)`` returns."""
    src = _Budget(read, size)
    ident = src.take(0, 16, "the ELF identification")
    if ident[:4] != MAGIC:
        raise ElfError("not an ELF file")
    bits = {1: 32, 2: 64}.get(ident[4])
    endian = {1: "<", 2: ">"}.get(ident[5])
    if bits is None or endian is None:
        raise ElfError(f"unknown ELF class {ident[4]} or data encoding {ident[5]}")
    header = src.take(16, 36 if bits == 32 else 48, "the ELF header")
    fmt = endian + ("HHIIIIIHHHHHH" if bits == 32 else "HHIQQQIHHHHHH")
    e_type, machine, _, _, phoff, _, _, _, phentsize, phnum, _, _, _ = struct.unpack(fmt, header)
    kind = _TYPES.get(e_type, f"type {e_type}")
    segments = _program_headers(src, bits, endian, phoff, phentsize, phnum)
    loads = [s for s in segments if s[0] == _PT_LOAD]
    dynamic = next((s for s in segments if s[0] == _PT_DYNAMIC), None)
    if dynamic is None:
        return Linkage(bits, _ENDIAN[endian], kind, machine)
    entries = _dynamic_entries(src, bits, endian, dynamic)
    return _linkage(src, bits, endian, kind, machine, entries, loads)


_ENDIAN = {"<": "little", ">": "big"}


def _program_headers(
    src: _Budget, bits: int, endian: str, phoff: int, phentsize: int, phnum: int
) -> list[Segment]:
    """[(p_type, p_offset, p_vaddr, p_filesz)] of the program headers."""
    if phnum == 0:
        return []
    if phnum > MAX_PHNUM:
        raise ElfError(f"{phnum} program headers (the reader's limit is {MAX_PHNUM})")
    need = 32 if bits == 32 else 56
    if phentsize < need:
        raise ElfError(f"program header size {phentsize} is smaller than {need}")
    raw = src.take(phoff, phentsize * phnum, "the program headers")
    out: list[Segment] = []
    for i in range(phnum):
        entry = raw[i * phentsize : i * phentsize + need]
        if bits == 32:
            p_type, p_offset, p_vaddr, _, p_filesz, _, _, _ = struct.unpack(endian + "8I", entry)
        else:
            p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = struct.unpack(
                endian + "IIQQQQQQ", entry
            )
        out.append((p_type, p_offset, p_vaddr, p_filesz))
    return out


def _dynamic_entries(src: _Budget, bits: int, endian: str, dynamic: Segment) -> list[Dynamic]:
    """[(d_tag, d_val)] up to DT_NULL; a segment without one ends at its size."""
    _, offset, _, filesz = dynamic
    width = 8 if bits == 32 else 16
    count = filesz // width
    if count > MAX_DYNAMIC:
        raise ElfError(f"{count} dynamic entries (the reader's limit is {MAX_DYNAMIC})")
    raw = src.take(offset, count * width, "the dynamic segment")
    fmt = endian + ("iI" if bits == 32 else "qQ")
    out: list[Dynamic] = []
    for i in range(count):
        tag, value = struct.unpack_from(fmt, raw, i * width)
        if tag == _NULL:
            break
        out.append((tag, value))
    return out


def _linkage(
    src: _Budget,
    bits: int,
    endian: str,
    kind: str,
    machine: int,
    entries: list[Dynamic],
    loads: list[Segment],
) -> Linkage:
    strtab = next((v for t, v in entries if t == _STRTAB), None)
    strsz = next((v for t, v in entries if t == _STRSZ), None)
    names = [(t, v) for t, v in entries if t in (_NEEDED, _SONAME, _RPATH, _RUNPATH)]
    if not names:
        return Linkage(bits, _ENDIAN[endian], kind, machine)
    if len([1 for t, _ in names if t == _NEEDED]) > MAX_NEEDED:
        raise ElfError(f"more than {MAX_NEEDED} DT_NEEDED entries")
    if strtab is None:
        raise ElfError("the dynamic segment names libraries but has no DT_STRTAB")
    base = _file_offset(strtab, loads)
    table = _StringTable(src, base, strsz)
    out: dict[int, list[str]] = {_NEEDED: [], _SONAME: [], _RPATH: [], _RUNPATH: []}
    for tag, value in names:
        out[tag].append(table.get(value))
    return Linkage(
        bits,
        _ENDIAN[endian],
        kind,
        machine,
        out[_NEEDED],
        out[_SONAME][0] if out[_SONAME] else None,
        [p for s in out[_RPATH] for p in s.split(":") if p],
        [p for s in out[_RUNPATH] for p in s.split(":") if p],
    )


def _file_offset(vaddr: int, loads: list[Segment]) -> int:
    """The file offset of virtual address ``vaddr``, through the PT_LOAD that maps it."""
    for _, offset, start, filesz in loads:
        if start <= vaddr < start + filesz:
            return offset + (vaddr - start)
    raise ElfError(f"DT_STRTAB {vaddr:#x} lies in no loadable segment")


class _StringTable:
    """NUL-terminated names at offsets into DT_STRTAB, each read on its own (a few bytes)."""

    def __init__(self, src: _Budget, base: int, size: int | None) -> None:
        self.src = src
        self.base = base
        self.size = size

    def get(self, index: int) -> str:
        if self.size is not None and index >= self.size:
            raise ElfError(f"a name at {index} lies past DT_STRSZ {self.size}")
        start = self.base + index
        room = self.src.size - start
        if self.size is not None:
            room = min(room, self.size - index)
        length = 64
        while True:
            chunk = self.src.take(start, min(length, room, MAX_STRING), "a library name")
            end = chunk.find(b"\0")
            if end >= 0:
                return chunk[:end].decode("utf-8", "replace")
            if len(chunk) >= min(room, MAX_STRING):
                raise ElfError(f"a library name at {index} has no end within {MAX_STRING} bytes")
            length *= 4


# -- sources -----------------------------------------------------------------------------


def read_path(path: str | os.PathLike[str], follow: bool = True) -> Linkage:
    """The `Linkage` of the regular file at ``path``; `OSError` when it cannot be opened,
    `ElfError` when it is not an acceptable ELF file."""
    import os
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ElfError("not a regular file")
        return parse(lambda offset, n: os.pread(fd, n, offset), st.st_size)
    finally:
        os.close(fd)


def member_reader(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[Read, int]:
    """(read, size) of the stored (uncompressed) zip member ``info`` of the open
    `zipfile.ZipFile` ``zf``, read in place: only the bytes asked for."""
    start = _stored_start(zf, info)
    raw = zf.fp
    if TYPE_CHECKING:  # an open ZipFile has its file (None once closed: then seek raises)
        assert raw is not None

    def read_stored(offset: int, n: int) -> bytes:
        raw.seek(start + offset)
        return raw.read(n)

    return read_stored, info.file_size


def _stored_start(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """Where a stored member's bytes begin in the archive: after its local header."""
    fp = zf.fp
    if TYPE_CHECKING:  # as in `member_reader`
        assert fp is not None
    fp.seek(info.header_offset)
    local = fp.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise ElfError(f"{info.filename}: bad local header in the archive")
    name_len: int
    extra_len: int
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    return info.header_offset + 30 + name_len + extra_len


#: a compressed member is inflated whole up to its dynamic segment when that ends within this
#: (exact); a library's dynamic segment follows its code, so past it inflating that far would
#: cost what pip's own unpacking does (a wheel of ten 12 MB libraries: as long again)
EXACT_LIMIT = 1 << 20
#: past `EXACT_LIMIT` only its head is inflated, where linkers put the dynamic string table,
#: at most this far
HEAD_LIMIT = 16 << 20
_LIBRARY_NAME: re.Pattern[bytes] | None = None


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Linkage:
    """The `Linkage` of a zip member; `ElfError` for a member that is not acceptable ELF.

    A stored member is read in place (a few KB). A compressed one is inflated as a stream, and
    only as far as needed: to the end of its ``PT_DYNAMIC`` when that lies within `EXACT_LIMIT`
    bytes (the exact answer); otherwise (a larger library, whose dynamic segment follows its
    code) only the part before its first executable segment, at most `HEAD_LIMIT` bytes, where
    ``.dynstr`` lies, and ``needed`` are the library names written there (``exact`` False: a
    superset of DT_NEEDED that also holds the SONAME and versioned library names)."""
    import zipfile
    import zlib

    try:
        if info.compress_type == zipfile.ZIP_STORED and not info.flag_bits & 0x1:
            read, size = member_reader(zf, info)
            if read(0, 4) != MAGIC:
                raise NotElf("not an ELF file")
            return parse(read, size)
        with zf.open(info) as stream:
            return _read_stream(stream, info.file_size)
    except (
        OSError,
        EOFError,
        zlib.error,
        RuntimeError,
        NotImplementedError,
        zipfile.BadZipFile,
    ) as exc:
        raise ElfError(f"the archive member cannot be read ({exc})") from None


def _read_stream(stream: IO[bytes], size: int) -> Linkage:
    head = stream.read(min(size, 4096))
    if head[:4] != MAGIC:
        raise NotElf("not an ELF file")
    want = _headers_end(head)
    if len(head) < want <= min(size, MAX_READ):  # program headers placed past the first 4 KiB
        head += _read_upto(stream, want - len(head))
    segments = _segments_of(head, size)
    dynamic = next((s for s in segments if s[0] == _PT_DYNAMIC), None)
    if dynamic is not None and dynamic[1] + dynamic[3] > size:
        raise ElfError(f"the dynamic segment: reaches past the end of the file ({size} bytes)")
    if dynamic is None or dynamic[1] + dynamic[3] <= EXACT_LIMIT:
        want = len(head) if dynamic is None else dynamic[1] + dynamic[3]
        data = head + _read_upto(stream, want - len(head)) if want > len(head) else head
        return parse(lambda offset, n: data[offset : offset + n], size)
    code = [s[1] for s in segments if s[0] == _PT_LOAD and s[4] & 1 and s[1] > 0]
    end = min([*code, HEAD_LIMIT, size])
    data = head + _read_upto(stream, end - len(head)) if end > len(head) else head
    bits, endian = {1: 32, 2: 64}[data[4]], {1: "<", 2: ">"}[data[5]]
    e_type, machine = struct.unpack_from(endian + "HH", data, 16)
    names = _library_names(data[:end])
    linkage = Linkage(bits, _ENDIAN[endian], _TYPES.get(e_type, f"type {e_type}"), machine, names)
    linkage.exact = False
    return linkage


def _headers_end(head: bytes) -> int:
    """Where the program headers end, from the ELF header in ``head`` (0 when unreadable)."""
    if len(head) < 64 or head[4] not in (1, 2) or head[5] not in (1, 2):
        return 0
    endian = "<" if head[5] == 1 else ">"
    phoff: int
    phentsize: int
    phnum: int
    if head[4] == 1:  # 32-bit
        (phoff,) = struct.unpack_from(endian + "I", head, 28)
        phentsize, phnum = struct.unpack_from(endian + "HH", head, 42)
    else:
        (phoff,) = struct.unpack_from(endian + "Q", head, 32)
        phentsize, phnum = struct.unpack_from(endian + "HH", head, 54)
    return phoff + phentsize * min(phnum, MAX_PHNUM)


def _read_upto(stream: IO[bytes], n: int) -> bytes:
    chunks: list[bytes] = []
    left = n
    while left > 0:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _segments_of(head: bytes, size: int) -> list[FlaggedSegment]:
    """The program headers of an ELF file from its first bytes (`_program_headers`, with the
    segment flags): [(p_type, p_offset, p_vaddr, p_filesz, p_flags)]."""
    src = _Budget(lambda offset, n: head[offset : offset + n], min(size, len(head)))
    ident = src.take(0, 16, "the ELF identification")
    bits = {1: 32, 2: 64}.get(ident[4])
    endian = {1: "<", 2: ">"}.get(ident[5])
    if bits is None or endian is None:
        raise ElfError(f"unknown ELF class {ident[4]} or data encoding {ident[5]}")
    header = src.take(16, 36 if bits == 32 else 48, "the ELF header")
    fmt = endian + ("HHIIIIIHHHHHH" if bits == 32 else "HHIQQQIHHHHHH")
    _, _, _, _, phoff, _, _, _, phentsize, phnum, _, _, _ = struct.unpack(fmt, header)
    plain = _program_headers(src, bits, endian, phoff, phentsize, phnum)
    flags_at, width = (24, "I") if bits == 32 else (4, "I")
    out: list[FlaggedSegment] = []
    for i, seg in enumerate(plain):
        (flags,) = struct.unpack_from(endian + width, head, phoff + i * phentsize + flags_at)
        out.append((*seg, flags))
    return out


def _library_names(data: bytes) -> list[str]:
    """The NUL-delimited library file names (``libfoo.so.1``) in ``data``, each once."""
    import re

    global _LIBRARY_NAME
    if _LIBRARY_NAME is None:
        _LIBRARY_NAME = re.compile(
            rb"(?<=\0)[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,250}\.so(?:\.[0-9][0-9.]*)?(?=\0)"
        )
    names = {m.group().decode("ascii") for m in _LIBRARY_NAME.finditer(data)}
    if len(names) > MAX_NEEDED:
        raise ElfError(f"more than {MAX_NEEDED} library names in the file's head")
    return sorted(names)


#: a shared object by name: ``_C.cpython-310-x86_64-linux-gnu.so``, ``libfoo.so.5.2``,
#: ``libgalaxyhip.so.5.2.25484.1857-0f32e4f0`` (a ``.so`` that ends the name or a dot-part)
_SHARED_NAME: re.Pattern[str] | None = None


def shared_name(name: str) -> bool:
    """Is the file ``name`` (a path) named like a shared object (``*.so``, ``*.so.N...``)?"""
    global _SHARED_NAME
    if _SHARED_NAME is None:
        import re

        _SHARED_NAME = re.compile(r"[^/]\.so(?:\.[0-9][^/]*)?$")
    return _SHARED_NAME.search(name) is not None


#: folders whose files without a dot in their name are judged too: executables
EXECUTABLE_FOLDERS = ("bin", "scripts")


def native_name(name: str) -> bool:
    """Might the file ``name`` (a path) be native code that is judged by what it links: named
    like a shared object (`shared_name`), or without a dot in its base name in a folder of
    `EXECUTABLE_FOLDERS` (an executable: ``bin/``, a wheel's ``.data/scripts/``)? Its first
    bytes decide: only a file that starts with the ELF magic is read further."""
    folder, _, base = name.rpartition("/")
    if not base or shared_name(base):
        return bool(base)
    return "." not in base and folder.rpartition("/")[2] in EXECUTABLE_FOLDERS


def wheel_linkages(zf: zipfile.ZipFile) -> list[MemberLinkage]:
    """(member name, `Linkage` or None, why not) for each member of the open wheel ``zf``
    named like native code (`native_name`) that starts with the ELF magic; a member that is
    not ELF is skipped."""
    out: list[MemberLinkage] = []
    for info in zf.infolist():
        if info.is_dir() or not native_name(info.filename) or ".dist-info/" in info.filename:
            continue
        try:
            out.append((info.filename, read_member(zf, info), ""))
        except NotElf:
            continue
        except ElfError as exc:
            out.append((info.filename, None, str(exc)))
        except Exception as exc:  # a broken archive member: judged as unreadable, never raised
            out.append((info.filename, None, f"the archive member cannot be read ({exc!r})"))
    return out
