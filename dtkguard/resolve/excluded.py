"""Files a source lists that cannot be candidates for the target, and why, kept per project so
that an explanation names the real cause ("x 2.0 requires Python >=3.12; the target is 3.10.0",
"x 1.0 is yanked: broken build", "x has wheels only for cp312 macosx; the target is cp310
manylinux_2_35_x86_64") instead of "no source has a wheel".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

#: why a file is not a candidate
REQUIRES_PYTHON = "requires-python"
TAGS = "tags"
YANKED = "yanked"
BINARY = "binary"


@dataclass(frozen=True)
class Excluded:
    """One file of ``version`` left out: ``why`` is one of the constants above, ``detail`` the
    Requires-Python, the wheel's tags, the yank reason or the --only-binary/--no-binary rule."""

    version: Version
    filename: str
    why: str
    detail: str = ""


def _versions(versions: Sequence[Version]) -> tuple[str, bool]:
    """``2.0`` or ``1.0 through 2.0 (3 versions)``, and whether that is plural."""
    ordered = sorted(set(versions))
    if len(ordered) == 1:
        return str(ordered[0]), False
    return f"{ordered[0]} through {ordered[-1]} ({len(ordered)} versions)", True


def _platform_family(platform: str) -> str:
    for family in ("macosx", "win", "musllinux", "ios", "android"):
        if platform.startswith(family):
            return family
    return platform


def _tag_summary(filenames: Iterable[str]) -> str:
    """``cp312 macosx/win`` for the tags of the wheels given (interpreters, then platforms)."""
    from packaging.utils import parse_wheel_filename

    interpreters: set[str] = set()
    platforms: set[str] = set()
    for filename in filenames:
        try:
            tags = parse_wheel_filename(filename)[3]
        except ValueError:
            continue
        for tag in tags:
            interpreters.add(tag.interpreter)
            if tag.platform != "any":
                platforms.add(_platform_family(tag.platform))
    text = "/".join(sorted(interpreters))
    return f"{text} {'/'.join(sorted(platforms))}" if platforms else text


def describe(name: str, excluded: Sequence[Excluded], target: object) -> list[str]:
    """One sentence per reason, versions grouped: what the target is is named each time."""
    out: list[str] = []
    by_python: dict[str, list[Version]] = {}
    yanked: dict[str, list[Version]] = {}
    binary: dict[str, list[Version]] = {}
    tags = [e.filename for e in excluded if e.why == TAGS]
    for e in excluded:
        if e.why == REQUIRES_PYTHON:
            by_python.setdefault(e.detail, []).append(e.version)
        elif e.why == YANKED:
            yanked.setdefault(e.detail, []).append(e.version)
        elif e.why == BINARY:
            binary.setdefault(e.detail, []).append(e.version)
    full = getattr(target, "shown_version", "")
    for spec, versions in by_python.items():
        which, plural = _versions(versions)
        verb = "require" if plural else "requires"
        out.append(f"{name} {which} {verb} Python {spec}; the target is {full}")
    for reason, versions in yanked.items():
        which, plural = _versions(versions)
        verb = "are" if plural else "is"
        out.append(f"{name} {which} {verb} yanked" + (f": {reason}" if reason else ""))
    for rule, versions in binary.items():
        which, _ = _versions(versions)
        out.append(f"{name} {which}: {rule}")
    if tags:
        impl = getattr(target, "implementation", "cp")
        python = getattr(target, "python", "")
        plat = getattr(target, "platforms", ("",))[0]
        out.append(
            f"{name} has wheels only for {_tag_summary(tags)}; the target is "
            f"{impl}{python.replace('.', '')} {plat}"
        )
    return out


def matching(excluded: Sequence[Excluded], specifier: SpecifierSet) -> list[Excluded]:
    """The exclusions of versions ``specifier`` admits (pre-releases too)."""
    return [e for e in excluded if specifier.contains(e.version, prereleases=True)]
