"""``--only-binary`` / ``--no-binary`` with pip's meaning (``pip._internal.models.format_control``):
comma-separated project names, ``:all:`` or ``:none:``; a name given to one option is taken out
of the other, ``:all:`` clears both, later values win. A project named in ``--only-binary`` may
not use an sdist; one named in ``--no-binary`` may not use a wheel; ``:all:`` applies to the
projects named in neither."""

from __future__ import annotations

from collections.abc import Iterable

from dtkguard.decision import canonical
from dtkguard.lightclass import field, record

ALL = ":all:"
NONE = ":none:"


@record
class FormatControl:
    no_binary: set[str] = field(default_factory=set)
    only_binary: set[str] = field(default_factory=set)

    @classmethod
    def from_options(cls, given: Iterable[tuple[str, str]]) -> FormatControl:
        """From ``[("only", "a,b"), ("no", ":all:")]`` in command-line order."""
        fc = cls()
        for kind, value in given:
            target, other = (
                (fc.only_binary, fc.no_binary) if kind == "only" else (fc.no_binary, fc.only_binary)
            )
            for name in value.split(","):
                name = name.strip()
                if not name:
                    continue
                if name == ALL:
                    other.clear()
                    target.clear()
                    target.add(ALL)
                elif name == NONE:
                    target.clear()
                else:
                    name = canonical(name)
                    other.discard(name)
                    target.add(name)
        return fc

    def allows(self, name: str, sdist: bool) -> bool:
        if name in self.only_binary:
            return not sdist
        if name in self.no_binary:
            return sdist
        if ALL in self.only_binary:
            return not sdist
        if ALL in self.no_binary:
            return sdist
        return True

    def rule(self, sdist: bool) -> str:
        """Why a file of that kind was left out, for the explanation."""
        if sdist:
            return "only an sdist, which --only-binary excludes"
        return "only wheels, which --no-binary excludes"

    def to_inputs(self) -> dict[str, list[str]]:
        out = {}
        if self.only_binary:
            out["only-binary"] = sorted(self.only_binary)
        if self.no_binary:
            out["no-binary"] = sorted(self.no_binary)
        return out
