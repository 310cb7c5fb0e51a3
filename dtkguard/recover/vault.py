"""The vault: the environment's vendor builds as wheels, so `restore` needs no wheelhouse.

``<prefix>/dtkguard/vault/`` holds one wheel per vendor build, repacked from the installed
files after verifying them against RECORD (a build whose files are already modified is refused:
the vault must never keep damage), and ``vault.json``: per wheel its name, version, sha256 and
size. When a baseline exists each repacked wheel is also checked against it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dtkguard.util.atomic import atomic_write_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.env.dist import Dist
    from dtkguard.journal.layout import Layout

VAULT_DIR = "vault"
INDEX = "vault.json"
#: issue kinds of `audit.verify` that mean "these are not the files RECORD describes"
DAMAGE = ("modified", "missing", "unreadable", "outside", "no-record", "hashless")


@dataclass
class Vault:
    dir: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(int(e.get("size") or 0) for e in self.entries.values())

    def wheel_for(self, key: str, version: str) -> Path | None:
        from dtkguard.rules.vendor import same_version

        for fname, entry in sorted(self.entries.items()):
            if entry.get("key") == key and same_version(str(entry.get("version")), version):
                path = self.dir / fname
                return path if path.is_file() else None
        return None


def vault_dir(prefix: Path) -> Path:
    """The vault of the env at ``prefix``: in the guard's store."""
    from dtkguard.env.store import env_store

    return env_store(prefix).vault


def open_vault(prefix: Path) -> Vault:
    """The vault of an environment (empty when there is none)."""
    path = vault_dir(prefix)
    try:
        from dtkguard.util.safe_read import read_json

        data = read_json(path / INDEX, what="vault index")
    except (OSError, ValueError):
        data = {}
    entries = data.get("wheels") if isinstance(data, dict) else None
    return Vault(path, dict(entries) if isinstance(entries, dict) else {})


def damage(dist: Any) -> list[str]:
    """What is wrong with ``dist``'s files against its RECORD (empty: intact)."""
    from dtkguard.audit.verify import verify
    from dtkguard.env.root import Root

    issues = verify([dist], Root(), workers=1).issues
    return [f"{i.path} ({i.kind})" for i in issues if i.kind in DAMAGE]


def create(
    python: str, vendor: dict[str, str], baseline: dict[str, Any] | None
) -> tuple[Vault, list[str], float]:
    """Repack every installed vendor build (``{canonical name: pinned version}``) into the vault.

    Returns the vault, the builds refused (with why) and the seconds it took. A wheel already in
    the vault for the same build is kept as it is.
    """
    from dtkguard.env.environment import from_python
    from dtkguard.journal.layout import layout

    start = time.perf_counter()
    env = from_python(python)
    lay = layout(python)
    vault = open_vault(lay.prefix)
    vault.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    refused: list[str] = []
    for dist in _unvaulted_vendor_builds(env, lay, vendor, vault):
        try:
            why = _vault_one(vault, dist, lay, python, baseline)
        finally:  # a full disk mid-wheel: no half-written wheel is left for the next run
            shutil.rmtree(vault.dir / ".stage", ignore_errors=True)
        if why:
            refused.append(f"{dist.name} {dist.version}: {why}")
        else:
            save(vault)
    save(vault)
    return vault, refused, time.perf_counter() - start


def _unvaulted_vendor_builds(
    env: Iterable[Dist], lay: Layout, vendor: dict[str, str], vault: Vault
) -> Iterator[Dist]:
    """The dists of this environment at their pinned vendor version, not yet in the vault."""
    from dtkguard.rules.vendor import same_version

    for dist in env:
        if Path(os.path.realpath(dist.site)) not in lay.roots:
            continue
        pin = vendor.get(dist.key)
        if pin is None or not same_version(dist.version, pin):
            continue
        if vault.wheel_for(dist.key, dist.version) is not None:
            continue
        yield dist


def _vault_one(
    vault: Vault, dist: Dist, lay: Layout, python: str, baseline: dict[str, Any] | None
) -> str | None:
    """Verify, repack and check one build, then move its wheel in; why not, when refused."""
    from dtkguard.recover.repack import Installed, RepackError, repack
    from dtkguard.recover.wheels import matches_baseline, sha256_of

    bad = damage(dist)
    if bad:
        return (
            f"files differ from its RECORD ({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''})"
        )
    stage = vault.dir / ".stage"
    shutil.rmtree(stage, ignore_errors=True)
    try:
        wheel = repack(
            Installed(dist.path, dist.site, lay.prefix, lay.scripts), stage, python=python
        )
    except RepackError as exc:
        return str(exc)
    if baseline is not None and not matches_baseline(baseline, dist.name, dist.version, wheel):
        shutil.rmtree(stage, ignore_errors=True)
        return "not the build the baseline recorded"
    final = vault.dir / wheel.name
    os.chmod(wheel, 0o600)
    os.replace(wheel, final)
    shutil.rmtree(stage, ignore_errors=True)
    vault.entries[final.name] = {
        "key": dist.key,
        "name": dist.name,
        "version": dist.version,
        "sha256": sha256_of(final),
        "size": final.stat().st_size,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return None


def save(vault: Vault) -> None:
    atomic_write_text(
        vault.dir / INDEX, json.dumps({"wheels": vault.entries}, indent=1, sort_keys=True) + "\n"
    )


def describe(vault: Vault) -> str:
    """``N wheels, X MiB`` (or ``empty``)."""
    if not vault.entries:
        return "empty"
    return f"{len(vault.entries)} wheel(s), {human_size(vault.size)}"


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def fill(interp: Any, policy: Any) -> int:
    """`guard install --vault`: vault the vendor builds, say what it cost; 1 when one was
    refused (its files are modified: the vault never keeps damage)."""
    from dtkguard.env.baseline import baseline_path, load

    baseline = load(baseline_path(interp.prefix))
    vendor = dict(policy.vendor)
    try:
        vault, refused, seconds = create(interp.python, vendor, baseline)
    except OSError as exc:  # a full disk: the guard stands, the vault keeps what it had
        from dtkguard.errors import TargetError

        kept = describe(open_vault(interp.prefix))
        raise TargetError(
            f"cannot fill the vault {vault_dir(interp.prefix)}: {exc.strerror or exc}; "
            f"the guard is installed, the vault holds {kept}"
        ) from None
    print(
        f"    vault  {vault.dir}: {describe(vault)} on disk "
        f"({seconds:.1f} s); `dtkguard restore` needs no wheelhouse for these"
    )
    for line in refused:
        print(f"  refused  {line}")
    return 1 if refused else 0


def status_line(prefix: Path) -> str:
    """`guard status`'s line for the vault."""
    vault = open_vault(prefix)
    if not vault.entries:
        return f"{'absent':>7}  {'vault':<18} {vault.dir} (optional: guard install --vault)"
    missing = [f for f in vault.entries if not (vault.dir / f).is_file()]
    state = "damaged" if missing else "present"
    return f"{state:>7}  {'vault':<18} {vault.dir} ({describe(vault)})"
