"""The environment a lock is built for: Python version, platform tags, marker values.

Nothing here looks at the machine running dtkguard: tags and markers come from the target's
Python version and platform tags (``--python-version``, ``--platform`` or the policy's target).
"""

from __future__ import annotations

import re
from functools import cached_property

from dtkguard.errors import InputError
from dtkguard.lightclass import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.policy.compiled import CompiledPolicy

_MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)_(\w+)")
_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_MUSL = re.compile(r"musllinux_(\d+)_(\d+)_(\w+)")


def expand_platform(tag: str) -> list[str]:
    """Every platform tag a wheel may carry to install on ``tag``, most specific first.

    ``manylinux_2_35_x86_64`` -> ``manylinux_2_35_x86_64 ... manylinux_2_17_x86_64,
    manylinux2014_x86_64, ..., manylinux1_x86_64, linux_x86_64``.
    """
    tag = tag.strip().lower().replace("-", "_").replace(".", "_")
    for legacy, (major, minor) in _LEGACY.items():
        if tag.startswith(legacy + "_"):
            tag = f"manylinux_{major}_{minor}_{tag[len(legacy) + 1 :]}"
    m = _MANYLINUX.fullmatch(tag)
    if m:
        major, minor, arch = int(m.group(1)), int(m.group(2)), m.group(3)
        out = []
        for glibc in range(minor, -1, -1):
            out.append(f"manylinux_{major}_{glibc}_{arch}")
            for legacy, (lmaj, lmin) in _LEGACY.items():
                if (lmaj, lmin) == (major, glibc):
                    out.append(f"{legacy}_{arch}")
        out.append(f"linux_{arch}")
        return out
    m = _MUSL.fullmatch(tag)
    if m:
        major, minor, arch = int(m.group(1)), int(m.group(2)), m.group(3)
        return [f"musllinux_{major}_{v}_{arch}" for v in range(minor, -1, -1)] + [f"linux_{arch}"]
    return [tag]


def _arch(platform: str) -> str:
    for prefix in ("manylinux_", "musllinux_"):
        if platform.startswith(prefix):
            return platform.split("_", 3)[3]
    if platform.startswith(("linux_", "manylinux1_", "manylinux2010_", "manylinux2014_")):
        return platform.split("_", 1)[1]
    if platform.startswith("macosx_"):
        return platform.rsplit("_", 1)[1] if not platform.endswith("universal2") else "arm64"
    if platform.startswith("win"):
        return {"win_amd64": "AMD64", "win32": "x86", "win_arm64": "ARM64"}.get(platform, "AMD64")
    return platform


def _system(platform: str) -> tuple[str, str, str]:
    """(sys_platform, platform_system, os_name)."""
    if platform.startswith("macosx"):
        return "darwin", "Darwin", "posix"
    if platform.startswith("win"):
        return "win32", "Windows", "nt"
    return "linux", "Linux", "posix"


@record(frozen=True)
class TargetEnv:
    """Python ``X.Y`` plus platform tags (first one names the machine) of the lock's target."""

    python: str = "3.10"
    platforms: tuple[str, ...] = ("manylinux_2_28_x86_64",)
    implementation: str = "cp"
    extra_markers: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    #: the patch level when one was given (``3.10.12``): Requires-Python and markers use it
    patch: int | None = None

    def __post_init__(self) -> None:
        m = re.fullmatch(r"(3\.\d{1,2})(?:\.(\d{1,3}))?", self.python.strip())
        if m is None:
            raise InputError(
                f"expected a Python version like 3.10 or 3.10.12, got {self.python!r}",
                field="--python-version",
            )
        object.__setattr__(self, "python", m.group(1))
        if m.group(2) is not None:
            object.__setattr__(self, "patch", int(m.group(2)))
        if not self.platforms:
            raise InputError("no platform tag given", field="--platform")

    @property
    def version_tuple(self) -> tuple[int, int]:
        major, minor = self.python.split(".")
        return int(major), int(minor)

    @property
    def full_version(self) -> str:
        """``python_full_version`` for markers and Requires-Python: the patch level given, else
        ``3.10.0``, the lowest of the series, so a lock never relies on a later patch release."""
        return f"{self.python}.{self.patch or 0}"

    @property
    def shown_version(self) -> str:
        """The version as the user gave it (``3.10``, ``3.10.12``), for messages."""
        return self.python if self.patch is None else self.full_version

    @cached_property
    def platform_tags(self) -> tuple[str, ...]:
        out: list[str] = []
        for tag in self.platforms:
            for expanded in expand_platform(tag):
                if expanded not in out:
                    out.append(expanded)
        return tuple(out)

    @cached_property
    def tag_priority(self) -> dict[str, int]:
        """``{interpreter-abi-platform: rank}`` for every tag a wheel may have; lower is better."""
        from packaging.tags import compatible_tags, cpython_tags

        major, minor = self.version_tuple
        plats = list(self.platform_tags)
        tags = []
        if self.implementation == "cp":
            tags += list(cpython_tags((major, minor), abis=[f"cp{major}{minor}"], platforms=plats))
        interpreter = f"{self.implementation}{major}{minor}"
        tags += list(compatible_tags((major, minor), interpreter=interpreter, platforms=plats))
        out: dict[str, int] = {}
        for rank, tag in enumerate(tags):
            out.setdefault(str(tag), rank)
        return out

    def wheel_rank(self, tags: frozenset[str]) -> int | None:
        """The best rank of a wheel's tags for this target; None when it cannot install."""
        prio = self.tag_priority
        ranks = [prio[t] for t in tags if t in prio]
        return min(ranks) if ranks else None

    @cached_property
    def markers(self) -> dict[str, str]:
        """The PEP 508 marker environment of the target."""
        plat = self.platforms[0].lower()
        sys_platform, system, os_name = _system(plat)
        impl_name = {"cp": "cpython", "pp": "pypy"}.get(self.implementation, self.implementation)
        env = {
            "implementation_name": impl_name,
            "implementation_version": self.full_version,
            "os_name": os_name,
            "platform_machine": _arch(plat),
            "platform_python_implementation": {"cpython": "CPython", "pypy": "PyPy"}.get(
                impl_name, impl_name
            ),
            "platform_release": "",
            "platform_system": system,
            "platform_version": "",
            "python_full_version": self.full_version,
            "python_version": self.python,
            "sys_platform": sys_platform,
            "extra": "",
        }
        env.update(self.extra_markers)
        return env

    def environment_marker(self) -> str:
        """The lock's ``environments`` entry."""
        m = self.markers
        return (
            f"sys_platform == '{m['sys_platform']}' and "
            f"platform_machine == '{m['platform_machine']}'"
        )

    def lock_requires_python(self) -> str:
        """The lock's ``requires-python``: the series, from the patch level when one was given."""
        series = f"=={self.python}.*"
        return series if self.patch is None else f">={self.full_version},{series}"

    def to_dict(self) -> dict[str, object]:
        return {
            "python": self.python if self.patch is None else self.full_version,
            "platforms": list(self.platforms),
            "implementation": self.implementation,
        }


def target_from(
    policy: CompiledPolicy | None, python_version: str | None, platforms: list[str] | None
) -> TargetEnv:
    """The target from command-line overrides, else the policy's ``[target]``."""
    base = policy.target if policy is not None else None
    python = python_version or (base.python if base else "3.10")
    plats = tuple(platforms or (base.platforms if base else ("manylinux_2_28_x86_64",)))
    impl = base.implementation if base else "cp"
    return TargetEnv(python=python, platforms=plats, implementation=impl)
