"""The DTK/DAS local-label grammar.

``+das[.optN][.<tag>...][.<sha>].dtkYYMM[P][.torchXYZ][.<stamp>][.g<sha>]``, ``+dtkYYMM[P]...`` or a
bare ``+das``. Releases compare as numbers: ``dtk2504 < dtk25041 < dtk2604``; ``opt10 > opt9``.
"""

from __future__ import annotations

import re
from functools import total_ordering

from dtkguard.record import field, record

_DTK = re.compile(r"dtk(\d{2})(\d{2})(\d?)")
_OPT = re.compile(r"opt(\d+)")
#: compiled on first use (by `re`'s cache): most labels carry no torch, stamp or git part
_TORCH = r"torch(\d)(\d+)(\d)"
_STAMP = r"\d{8}|\d{10}|\d{12}"
_GIT = r"g[0-9a-f]{6,40}"
_SHA = r"[0-9a-f]{6,40}"


@total_ordering
@record(frozen=True)
class DtkRelease:
    """A DTK release such as 25.04.1 (``dtk25041``) or 26.04 (``dtk2604``)."""

    year: int
    month: int
    patch: int | None = None

    @classmethod
    def parse(cls, text: str) -> DtkRelease:
        """Parse ``25.04.1``, ``25.04``, ``dtk25041`` or ``dtk-25.04.1``."""
        text = text.strip().lower().removeprefix("dtk").lstrip("-")
        m = re.fullmatch(r"(\d{2})\.(\d{1,2})(?:\.(\d+))?", text) or re.fullmatch(
            r"(\d{2})(\d{2})(\d?)", text
        )
        if not m:
            raise ValueError(f"not a DTK release: {text!r} (expected e.g. 25.04.1 or dtk25041)")
        patch = m.group(3)
        return cls(int(m.group(1)), int(m.group(2)), int(patch) if patch else None)

    @property
    def series(self) -> tuple[int, int]:
        """The release series (year, month): 25.04.1 and 25.04 share series (25, 4)."""
        return (self.year, self.month)

    def sort_key(self) -> tuple[int, int, int]:
        """(year, month, patch), a missing patch as 0: the order of releases."""
        return (self.year, self.month, self.patch or 0)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, DtkRelease):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    def __str__(self) -> str:
        base = f"{self.year:02d}.{self.month:02d}"
        return base if self.patch is None else f"{base}.{self.patch}"


@record(frozen=True)
class TorchAbi:
    """The torch an extension was built against: ``torch271`` is 2.7.1, ``torch2100`` 2.10.0."""

    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    def matches(self, release: tuple[int, ...]) -> bool:
        """True when a torch release tuple (2, 4, 1) is this ABI."""
        padded = (*release, 0, 0, 0)[:3]
        return padded == (self.major, self.minor, self.patch)


@record(frozen=True)
class DtkLabel:
    """What a PEP 440 local label says about a vendor build."""

    raw: str
    das: bool = False
    opt: int | None = None
    dtk: DtkRelease | None = None
    torch: TorchAbi | None = None
    stamp: str | None = None
    git: str | None = None
    tags: tuple[str, ...] = field(default=())

    @property
    def is_vendor(self) -> bool:
        """A DAS or DTK build (as opposed to ``+cu121``, ``+rocm6.1`` or no label)."""
        return self.das or self.dtk is not None


def parse_label(local: str | None) -> DtkLabel | None:
    """Parse a local label (without the ``+``); None when it is not a DAS/DTK label."""
    if not local:
        return None
    raw = local.lower().replace("-", ".").replace("_", ".")
    das = opt = dtk = torch = stamp = git = None
    tags: list[str] = []
    for part in raw.split("."):
        if part == "das":
            das = True
        elif (m := _DTK.fullmatch(part)) and dtk is None:
            dtk = DtkRelease(
                int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None
            )
        elif (m := _OPT.fullmatch(part)) and opt is None:
            opt = int(m.group(1))
        elif (m := re.fullmatch(_TORCH, part)) and torch is None:
            torch = TorchAbi(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        elif re.fullmatch(_STAMP, part) and stamp is None:
            stamp = part
        elif re.fullmatch(_GIT, part) and git is None:
            git = part[1:]
        elif re.fullmatch(_SHA, part) and git is None and not part.isdigit():
            git = part
        else:
            tags.append(part)
    if not das and dtk is None:
        return None
    return DtkLabel(raw, bool(das), opt, dtk, torch, stamp, git, tuple(tags))


_RELEASE = re.compile(r"\s*v?(?:\d+!)?(\d+(?:\.\d+)*)")


def release_of(version: str) -> tuple[int, ...] | None:
    """The release numbers of a PEP 440 version (``2.4.1.post1+das`` -> (2, 4, 1)), or None."""
    m = _RELEASE.match(version.lower())
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def label_of(version: str) -> DtkLabel | None:
    """The DTK label of a full version string such as ``2.4.1+das.opt1.dtk25041``."""
    _, plus, local = version.partition("+")
    return parse_label(local) if plus else None
