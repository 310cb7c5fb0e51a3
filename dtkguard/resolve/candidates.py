"""What the resolver handles: requirements (:class:`Req`) and candidates (:class:`Candidate`)."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from dtkguard.resolve.sources import FileLink

PYTHON = "<python>"


class Req:
    """A requirement as the resolver sees it (identity-hashed, interned per parent)."""

    __slots__ = ("exact", "extras", "key", "marker", "name", "parent", "pinned", "specifier",
                 "text", "unfree", "upper_bounded")  # fmt: skip

    def __init__(
        self,
        name: str,
        specifier: SpecifierSet,
        extras: frozenset[str] = frozenset(),
        parent: Candidate | None = None,
        text: str = "",
        exact: Version | None = None,
    ) -> None:
        self.name = name
        self.extras = extras
        self.key = f"{name}[{','.join(sorted(extras))}]" if extras else name
        self.specifier = specifier
        self.parent = parent
        self.text = text or f"{self.key}{specifier}"
        self.exact = exact
        self.marker: str | None = None
        # what the resolver's preference asks of every requirement, every round: worked out
        # once (a Req never changes)
        specs = [(s.operator, "*" in s.version) for s in specifier]
        #: ``==V`` (no wildcard), ``===V`` or an exact version
        self.pinned = exact is not None or any(
            op in ("==", "===") and not star for op, star in specs
        )
        #: ``<``, ``<=``, ``~=`` or ``==V.*``
        self.upper_bounded = any(
            op in ("<", "<=", "~=") or (op == "==" and star) for op, star in specs
        )
        #: any constraint at all
        self.unfree = bool(specs) or exact is not None

    def __repr__(self) -> str:
        return f"Req({self.text!r})"


class Candidate:
    """One version of one project (``extras`` set: the extras view of that version)."""

    __slots__ = ("extras", "key", "link", "name", "version")

    def __init__(
        self, name: str, version: Version, link: FileLink | None, extras: frozenset[str]
    ) -> None:
        self.name = name
        self.version = version
        self.link = link
        self.extras = extras
        self.key = f"{name}[{','.join(sorted(extras))}]" if extras else name

    def __repr__(self) -> str:
        return f"{self.key} {self.version}"
