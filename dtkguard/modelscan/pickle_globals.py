"""The globals a PyTorch pickle checkpoint references, read with ``pickletools`` (never unpickled).

A new-format checkpoint is a zip holding ``<root>/data.pkl``; the legacy format is a run of
pickles at the start of the file. Float8 tensors show up as the global ``torch float8_e4m3fn``
(or another ``float8_*``), float4 ones as ``torch float4_e2m1fn_x2``.
"""

from __future__ import annotations

import os
import pickletools
import zipfile
from collections import Counter
from typing import IO, Any

from dtkguard.lightclass import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.util.safe_read import CountingReader

#: the largest data.pkl we walk (a real one is a few MB)
MAX_PICKLE = 256 * 1024 * 1024
#: opcodes walked at most (a real checkpoint's data.pkl has tens of thousands); bounds time and
#: the memo table of a pickle built of millions of one-byte opcodes
MAX_OPCODES = 1_000_000
#: the longest string or bytes argument read (a checkpoint's are names and short keys; the
#: data is in storages): a 250 MB one was read and decoded whole, twice its size in memory
MAX_ARG = 16 * 1024 * 1024
#: the legacy format's magic number, protocol version, sys_info, then the object pickle
LEGACY_PICKLES = 4
_STRING_OPS = frozenset(
    {
        "SHORT_BINUNICODE",
        "BINUNICODE",
        "UNICODE",
        "BINUNICODE8",
        "SHORT_BINSTRING",
        "BINSTRING",
        "STRING",
    }
)


class PickleScanError(ValueError):
    """Not a pickle we can walk (one line)."""


@record
class PickleGlobals:
    path: str
    globals: Counter[str] = field(default_factory=Counter)
    rebuilds: int = 0
    members: list[str] = field(default_factory=list)
    #: bytes taken from the file: the zip directory and ``data.pkl`` members, or the legacy
    #: format's leading pickles (tensor storages are never read)
    bytes_read: int = 0


class _Reader:
    """Reads at most ``cap`` bytes. No ``tell``: pickletools then does not need to seek."""

    def __init__(self, raw: IO[bytes] | CountingReader, cap: int) -> None:
        self._raw = raw
        self._left = cap
        self._pushed = b""

    def _take(self, data: bytes) -> bytes:
        self._left -= len(data)
        if self._left < 0:
            raise PickleScanError("pickle larger than the cap")
        return data

    def read(self, n: int = -1) -> bytes:
        if n > MAX_ARG:  # only a string's or bytes' length asks for this much
            raise PickleScanError(
                f"a pickle argument of {n:,} bytes, more than the limit of "
                f"{MAX_ARG >> 20} MiB: not scanned"
            )
        if n < 0:
            n = self._left + 1
        head, self._pushed = self._pushed[:n], self._pushed[n:]
        return head + self._take(self._raw.read(n - len(head)) if n > len(head) else b"")

    def readline(self) -> bytes:
        if self._pushed:
            head, self._pushed = self._pushed, b""
            if head.endswith(b"\n"):
                return head
            return head + self.readline()
        return self._take(self._raw.readline(min(self._left + 1, 1 << 20)))

    def at_eof(self) -> bool:
        byte = self.read(1)
        self._pushed = byte + self._pushed
        return not byte


def _walk(stream: _Reader, out: PickleGlobals, pickles: int) -> None:
    walked = 0
    for _ in range(pickles):
        memo: dict[int, object] = {}
        recent: list[object] = []
        try:
            # genops reads with read/readline (and tell when there is one); typeshed asks for a
            # whole IO[bytes], which _Reader must not be (no tell, so nothing seeks)
            for op, arg, _pos in pickletools.genops(stream):  # type: ignore[arg-type]
                walked += 1
                if walked > MAX_OPCODES:
                    raise PickleScanError(
                        f"more than the limit of {MAX_OPCODES:,} pickle opcodes: not scanned"
                    )
                if _opcode(op.name, arg, out, memo, recent):
                    break
                del recent[:-4]
        except PickleScanError:
            raise
        except Exception as exc:  # pickletools raises ValueError, struct.error, ...
            if out.globals:
                return
            raise PickleScanError(f"not a pickle: {exc}".splitlines()[0]) from None
        if stream.at_eof():
            return


def _opcode(
    name: str, arg: Any, out: PickleGlobals, memo: dict[int, object], recent: list[object]
) -> bool:
    """One opcode: a global is added to ``out``; the last values pushed (``recent``) and the memo
    are kept so that ``STACK_GLOBAL`` sees its module and name. True at ``STOP``."""
    if name in _STRING_OPS:
        recent.append(arg)
    elif name == "GLOBAL":
        _add(out, str(arg).replace(" ", "."))
        recent.append(None)
    elif name == "STACK_GLOBAL":
        if len(recent) >= 2 and all(isinstance(x, str) for x in recent[-2:]):
            _add(out, f"{recent[-2]}.{recent[-1]}")
        recent.append(None)
    elif name == "MEMOIZE":
        memo[len(memo)] = recent[-1] if recent else None
    elif name in ("BINPUT", "LONG_BINPUT", "PUT"):
        memo[int(arg)] = recent[-1] if recent else None
    elif name in ("BINGET", "LONG_BINGET", "GET"):
        recent.append(memo.get(int(arg)))
    elif name == "STOP":
        return True
    else:
        recent.append(None)
    return False


def _add(out: PickleGlobals, dotted: str) -> None:
    out.globals[dotted] += 1
    if dotted.startswith("torch._utils._rebuild_tensor"):
        out.rebuilds += 1


def read_globals(path: str | os.PathLike[str], cap: int = MAX_PICKLE) -> PickleGlobals:
    """Globals referenced by the checkpoint at ``path`` (zip or legacy format)."""
    from dtkguard.util.safe_read import CountingReader, open_regular

    out = PickleGlobals(path=str(path))
    with open_regular(path, buffering=-1) as raw:  # a FIFO or device is refused, never read
        fh = CountingReader(raw)
        _read_globals(fh, out, cap)
        out.bytes_read = fh.count
    return out


def _read_globals(fh: CountingReader, out: PickleGlobals, cap: int) -> None:
    # the zip format starts with a local file header; ``zipfile.is_zipfile`` would instead
    # search the last 64 KiB for a zip directory: tensor data of a legacy checkpoint
    if fh.read(4) != b"PK\x03\x04":
        fh.seek(0)
        _walk(_Reader(fh, cap), out, LEGACY_PICKLES)
        return
    fh.seek(0)
    try:
        with zipfile.ZipFile(fh) as zf:
            members = [i for i in zf.infolist() if i.filename.endswith("data.pkl")]
            if not members:
                raise PickleScanError("zip without a data.pkl")
            for info in members[:16]:
                if info.file_size > cap:
                    raise PickleScanError(f"{info.filename}: {info.file_size} bytes, over cap")
                out.members.append(info.filename)
                with zf.open(info) as raw:
                    _walk(_Reader(raw, cap), out, 1)
    except zipfile.BadZipFile as exc:
        raise PickleScanError(f"bad zip: {exc}") from None
