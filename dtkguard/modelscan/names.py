"""Tensor names counted by their endings, a checkpoint's hundreds of thousands at C speed.

The names are joined once, each followed by a newline; a name that ends with a suffix is then
one occurrence of the suffix and the newline. Names that hold a newline themselves (JSON
escapes allow it) and suffixes of which one ends another are counted name by name instead.
"""

from __future__ import annotations

from functools import lru_cache
from operator import methodcaller


class Names:
    """``names`` (a list of str) and how many end with a suffix or have a given last dotted part."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self._joined = "\n".join(names) + "\n"
        if self._joined.count("\n") != len(names):
            self._joined = ""  # a name holds a newline: count name by name

    def ending(self, suffixes: str | tuple[str, ...]) -> int:
        """How many names end with ``suffixes`` (`str.endswith`: one suffix or a tuple)."""
        if not self.names:
            return 0
        several = (suffixes,) if isinstance(suffixes, str) else suffixes
        if not self._joined or _overlapping(several):
            return sum(map(methodcaller("endswith", suffixes), self.names))
        common = _common_suffix(several)
        if len(several) > 1 and common and f"{common}\n" not in self._joined:
            return 0  # no name ends with what every suffix ends with
        return sum(self._joined.count(f"{s}\n") for s in several)

    def has_leaf(self, leaf: str) -> bool:
        """Some name's last dotted part is ``leaf`` (``leaf`` holds no dot)."""
        joined = self._joined
        if joined and "\n" not in leaf:  # each name ends at a newline: found in C, no count
            line = f"{leaf}\n"
            return f".{line}" in joined or joined.startswith(line) or f"\n{line}" in joined
        return self.ending(f".{leaf}") > 0 or leaf in self.names


@lru_cache(maxsize=64)
def _common_suffix(suffixes: tuple[str, ...]) -> str:
    """The longest string that every suffix ends with."""
    common = min(suffixes, key=len)
    while common and not all(s.endswith(common) for s in suffixes):
        common = common[1:]
    return common


@lru_cache(maxsize=64)
def _overlapping(suffixes: tuple[str, ...]) -> bool:
    """One suffix ends another (or is empty, or holds a newline): counting each would count
    some names twice."""
    return any(
        not a or "\n" in a or (a != b and b.endswith(a)) for a in suffixes for b in suffixes
    ) or len(set(suffixes)) != len(suffixes)
