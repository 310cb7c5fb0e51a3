"""What an environment should hold: from its baseline, or from a PEP 751 lock.

A `Wanted` set is {canonical name: `Want`}: the version, whether it is a vendor build (then its
wheel must be hash-checked before it is installed), and what the hash check compares with: the
baseline's per-file hashes of that build, or the lock's wheel hashes and where the lock says
the wheel is (URL or path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dtkguard.decision import canonical
from dtkguard.errors import InputError
from dtkguard.policy.compiled import CompiledPolicy

#: ``restore --to guard-install``: the baseline as `guard install` recorded it
GUARD_INSTALL = "guard-install"
#: never removed, listed or not: the installer that does the restore, and dtkguard itself
KEEP = ("pip", "dtkguard")


@dataclass(frozen=True)
class LockWheel:
    """One wheel a lock names, with its hashes; ``location`` is a URL or an absolute path."""

    location: str
    hashes: dict[str, str]
    name: str


@dataclass
class Want:
    key: str
    name: str
    version: str
    vendor: bool
    lock_wheels: list[LockWheel] = field(default_factory=list)
    #: False: installed as a dependency (no REQUESTED marker) at baseline; None: not known
    requested: bool | None = None
    #: the local wheel pip installed the baseline's build from (its direct_url.json), if any
    installed_from: Path | None = None


@dataclass
class Wanted:
    """The target state; ``kind`` is ``baseline`` or ``lock``, ``source`` its file."""

    kind: str
    source: str
    dists: dict[str, Want]
    baseline: dict[str, Any] | None = None
    #: remove installed dists the target does not list (a lock lists its closure only)
    remove_unlisted: bool = True

    @property
    def words(self) -> str:
        """The target state as the plan and the final check say it."""
        if self.source == GUARD_INSTALL:
            return "its state at `guard install`"
        return "its baseline" if self.kind == "baseline" else f"the lock {self.source}"

    @property
    def keep(self) -> tuple[str, ...]:
        """Installed names left alone even when the target does not list them."""
        return KEEP


def _lock_wheels(lock: Any, pkg: Any) -> list[LockWheel]:
    from dtkguard.lock.read import file_name, files

    out = []
    base = Path(lock.path).parent
    for f in files(pkg):
        where = f.url or (str((base / f.path).resolve()) if f.path else None)
        name = file_name(f)
        if where and name.endswith(".whl"):
            out.append(LockWheel(where, dict(f.hashes), name))
    return out


def _local_archive(direct_url: Any) -> Path | None:
    """The local wheel a PEP 610 ``direct_url.json`` names (``file://`` archive), if any."""
    if not isinstance(direct_url, dict) or "archive_info" not in direct_url:
        return None
    url = str(direct_url.get("url") or "")
    if not url.startswith("file://"):
        return None
    from urllib.parse import unquote, urlsplit

    path = Path(unquote(urlsplit(url).path))
    return path if path.name.endswith(".whl") else None


def from_baseline(baseline: dict[str, Any], lock: Any = None, at_install: bool = False) -> Wanted:
    """Every dist of the baseline (as approved changes moved it; ``at_install``: as `guard
    install` recorded it); its vendor builds are checked file by file; the lock the baseline
    was recorded with (when it is still there, unchanged) adds wheel locations."""
    dists: dict[str, Want] = {}
    vendor = baseline.get("vendor") or {}
    locked = lock.by_name() if lock is not None else {}
    listed = baseline.get("dists") or {}
    if at_install:
        listed = (baseline.get("guard_install") or {}).get("dists") or listed
    for key, entry in sorted(listed.items()):
        try:
            name, version = str(entry["name"]), str(entry["version"])
        except (KeyError, TypeError):
            raise InputError(f"baseline entry {key!r} has no name or version") from None
        want = Want(canonical(key), name, version, key in vendor)
        if key in vendor:
            files = vendor[key].get("files") or {}
            want.requested = any(rel.endswith(".dist-info/REQUESTED") for rel in files)
            want.installed_from = _local_archive(vendor[key].get("direct_url"))
        if key in locked:
            want.lock_wheels = _lock_wheels(lock, locked[key])
        dists[want.key] = want
    return Wanted("baseline", GUARD_INSTALL if at_install else "baseline", dists, baseline)


def from_lock(lock: Any, policy: CompiledPolicy, environment: dict[str, str]) -> Wanted:
    """The lock's packages whose marker applies here; a package is a vendor build when the
    policy pins it or its version carries a DAS/DTK label."""
    from dtkguard.lock.read import version_of
    from dtkguard.policy.labels import label_of

    def want(name: str, version: str | None, wheels: list[LockWheel]) -> Want:
        if not version:
            raise InputError("package without a version", str(lock.path), field=name)
        label = label_of(version)
        vendor = bool(policy.vendor_build(name)) or (label is not None and label.is_vendor)
        return Want(canonical(name), name, version, vendor, wheels)

    dists: dict[str, Want] = {}
    for pkg in lock.pylock.packages:
        if pkg.marker is not None:
            try:
                if not pkg.marker.evaluate(environment):
                    continue
            except (KeyError, ValueError):
                raise InputError(
                    f"unreadable marker {str(pkg.marker)!r}", str(lock.path), field=pkg.name
                ) from None
        dists[pkg.name] = want(pkg.name, version_of(pkg), _lock_wheels(lock, pkg))
    for item in lock.dtkguard.installed:  # `lock --from-env`: installed, no wheel known
        dists[item.key] = want(item.name, item.version, [])
    return Wanted("lock", str(lock.path), dists, None)


def baseline_wanted(prefix: Path, at_install: bool = False) -> Wanted:
    """The target state of ``restore --to baseline`` (``--to guard-install``: ``at_install``);
    `InputError` (exit 2) without one."""
    from dtkguard.env.baseline import baseline_path, load, tampered

    path = baseline_path(prefix)
    data = load(path)  # InputError when it is not a baseline
    if data is None:
        raise InputError(
            f"no baseline in {path}: run `dtkguard guard install` while the environment is "
            "right, or restore to a lock with --to pylock.toml",
            field="--to",
        )
    if tampered(str(path), path):  # the same judgement as check's baseline-tampered
        raise InputError(
            "its digest differs from the guard's manifest: refusing to restore to a baseline "
            "that cannot be trusted",
            str(path),
        )
    return from_baseline(data, _baseline_lock(data), at_install)


def _baseline_lock(data: dict[str, Any]) -> Any:
    """The lock the baseline was recorded with, when it is still there and unchanged."""
    from dtkguard.errors import DtkguardError
    from dtkguard.lock.read import read_lock
    from dtkguard.recover.wheels import sha256_of

    info = data.get("lock") or {}
    path = info.get("path")
    if not path:
        return None
    try:
        if sha256_of(Path(path)) != info.get("sha256"):
            return None
        return read_lock(path)
    except (OSError, DtkguardError):
        return None


def lock_wanted(path: str, policy: CompiledPolicy, python: str) -> Wanted:
    """The target state of ``restore --to LOCK``, markers evaluated for ``python``."""
    from dtkguard.env.environment import ask_interpreter
    from dtkguard.lock.read import read_lock

    lock = read_lock(path)
    return from_lock(lock, policy, ask_interpreter(python, _MARKERS, "its marker environment"))


_MARKERS = (
    "import json,platform,sys,os;v=sys.version_info;print(json.dumps({"
    "'python_version':'%d.%d'%v[:2],'python_full_version':platform.python_version(),"
    "'implementation_name':sys.implementation.name,'platform_python_implementation':"
    "platform.python_implementation(),'sys_platform':sys.platform,'platform_system':"
    "platform.system(),'platform_machine':platform.machine(),'platform_release':"
    "platform.release(),'platform_version':platform.version(),'os_name':os.name,"
    "'implementation_version':'%d.%d.%d'%sys.implementation.version[:3],'extra':''}))"
)
