"""Where a wheel for a build comes from, in order, and the hash check before it may be used.

Vendor builds: the vault, then the policy's vendor sources and ``--vendor-find-links`` /
``--vendor-index-url``, then the lock's URLs and paths. Every candidate is copied into a
private stage and hash-checked there: against the baseline's per-file hashes of that build, or
against the lock's wheel hashes. A candidate that fails is skipped and said so.

Other packages (the baseline records only their versions): the journal's kept files of the
transaction that removed them (repacked and checked against their own RECORD), else the
target's pip configuration (its index), which nothing can hash-check: the plan says so.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dtkguard.recover.wanted import Want, Wanted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TypeAlias

    from dtkguard.journal.layout import Layout
    from dtkguard.recover.keep import KeptDists
    from dtkguard.recover.vault import Vault

    #: (where, wheel): a wheel to stage and check
    Candidate: TypeAlias = tuple[str, Path]
    #: (where, (wheel, requested)): a wheel the journal's kept files were repacked into, checked
    #: against its RECORD already; requested as `Found.requested`
    Repacked: TypeAlias = tuple[str, tuple[Path, bool | None]]


@dataclass
class Found:
    """A staged wheel and what vouches for it."""

    wheel: Path
    where: str
    checked: str
    #: install by this path (pip then writes the baseline's direct_url.json again)
    by_path: bool = False
    #: whether the copy it came from carried pip's REQUESTED marker (None: not known)
    requested: bool | None = None
    #: hex sha256 of ``wheel``, taken as it was copied into the stage (None: not yet)
    sha256: str | None = None


@dataclass
class Sources:
    python: str
    stage: Path
    vault: Vault | None = None
    find_links: list[str] = field(default_factory=list)
    indexes: list[str] = field(default_factory=list)
    lay: Layout | None = None
    #: the journal's kept dist-infos, read once for every package (`_from_journal`)
    kept: KeptDists | None = None

    def find(self, want: Want, wanted: Wanted) -> tuple[Found | None, list[str]]:
        """The first wheel that passes its check; else None and what was tried."""
        tried: list[str] = []
        origin = want.installed_from
        if origin is not None and origin.is_file():
            ok, checked = verify(origin, want, wanted)
            if ok:  # install from where the baseline's build came from: byte for byte
                return Found(origin, "the wheel it was installed from", checked, True), tried
            tried.append(f"{origin}: {checked}")
        for where, path in self._candidates(want, tried):
            if isinstance(path, tuple):  # the journal's: repacked after checking its RECORD
                wheel, requested = path
                checked = "its RECORD, file by file, as the journal kept it"
                return Found(wheel, where, checked, requested=requested), tried
            staged, digest = self._stage(path, want)
            ok, checked = verify(staged, want, wanted)
            if ok:
                return Found(staged, where, checked, sha256=digest), tried
            tried.append(f"{where}: {path.name} {checked}")
            os.unlink(staged)
        return None, tried

    def _stage(self, path: Path, want: Want) -> tuple[Path, str]:
        """A private copy of ``path`` and the sha256 of the bytes written (one read)."""
        import hashlib

        dest = self.stage / want.key
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / path.name
        if target.exists():
            target.unlink()
        h = hashlib.sha256()
        with path.open("rb") as src, target.open("xb") as out:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                h.update(chunk)
                out.write(chunk)
        return target, h.hexdigest()

    def _candidates(self, want: Want, tried: list[str]) -> Iterator[Candidate | Repacked]:
        if want.vendor and self.vault is not None:
            wheel = self.vault.wheel_for(want.key, want.version)
            if wheel is not None:
                yield "the vault", wheel
            else:
                tried.append("the vault: no wheel of this build")
        if want.vendor:
            for link in self.find_links:
                if "://" not in link:
                    found = list(_local_wheels(Path(link), want))
                    if not found:
                        tried.append(f"{link}: no such wheel")
                    yield from ((link, w) for w in found)
                else:
                    yield from self._download(
                        want, ["--find-links", link, "--no-index"], link, tried
                    )
            for url in self.indexes:
                yield from self._download(want, ["--index-url", url], url, tried, index=url)
        for lw in want.lock_wheels:
            if "://" in lw.location:
                yield from self._download_url(lw.location, f"the lock ({lw.location})", tried)
            elif Path(lw.location).is_file():
                yield f"the lock ({lw.location})", Path(lw.location)
            else:
                tried.append(f"the lock: {lw.location} does not exist")
        if not want.vendor:
            kept = self._from_journal(want, tried)
            if kept is not None:
                yield kept

    def _from_journal(self, want: Want, tried: list[str]) -> Repacked | None:
        """(where, (wheel, requested)) repacked from the newest transaction that kept it."""
        from dtkguard.recover.keep import KeptDists, repack_kept, was_requested

        if self.lay is None:
            return None
        if self.kept is None:
            self.kept = KeptDists()
        out = repack_kept(self.lay, want, self.stage / "journal", self.kept)
        if out is None:
            tried.append("the journal: no kept files of this version")
            return None
        txn, wheel = out
        where = f"the journal (transaction {txn.id})"
        return where, (wheel, was_requested(txn, want.key, want.version, self.kept))

    def _download(
        self, want: Want, args: list[str], where: str, tried: list[str], index: str | None = None
    ) -> Iterator[Candidate]:
        spec = f"{want.name}=={want.version}"
        yield from self._pip_download([*args, spec], where, tried, index)

    def _download_url(self, url: str, where: str, tried: list[str]) -> Iterator[Candidate]:
        yield from self._pip_download([url, "--no-index"], where, tried)

    def _pip_download(
        self, args: list[str], where: str, tried: list[str], index: str | None = None
    ) -> Iterator[Candidate]:
        """``pip download`` from the one source ``args`` name: none of pip.conf's find-links,
        extra indexes or constraints mixed in (`one_source_env`)."""
        from dtkguard.guard.plan import one_source_env, run_pip

        dest = Path(tempfile.mkdtemp(prefix="dl-", dir=self.stage))
        nothing = Path(tempfile.mkdtemp(prefix="no-links-", dir=self.stage))
        env = one_source_env(os.environ, nothing, index)
        proc = run_pip(
            self.python,
            ["download", "--no-deps", "--only-binary", ":all:", "-q", "-d", str(dest), *args],
            env,
        )
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["pip download failed"])[-1]
            tried.append(f"{where}: {last}")
            return
        yield from ((where, w) for w in sorted(dest.glob("*.whl")))


def _local_wheels(folder: Path, want: Want) -> Iterator[Path]:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename
    from packaging.version import InvalidVersion, Version

    try:
        wanted_version = Version(want.version)
        names = sorted(os.listdir(folder))
    except (OSError, InvalidVersion):
        return
    for name in names:
        if not name.endswith(".whl"):
            continue
        try:
            dist, version, _, _ = parse_wheel_filename(name)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if dist == want.key and version == wanted_version:
            yield folder / name


def verify(wheel: Path, want: Want, wanted: Wanted) -> tuple[bool, str]:
    """(passes, how it was checked). A vendor build must pass the baseline's file hashes or a
    lock hash; another package a lock hash when there is one, else its own RECORD (journal)."""
    from dtkguard.recover.wheels import matches_baseline, matches_lock

    for lw in want.lock_wheels:
        if matches_lock(lw.hashes, wheel):
            return True, "sha256 of the lock"
    if want.vendor and wanted.baseline is not None and want.key in wanted.baseline["vendor"]:
        if matches_baseline(wanted.baseline, want.name, want.version, wheel):
            return True, "every file's sha256 of the baseline"
        return False, "differs from the baseline's files"
    if want.lock_wheels:
        return False, "matches no hash of the lock"
    return False, "nothing to check it against (no baseline files, no lock hash)"


#: how the plan names pip's own configuration, the last source of packages that are not
#: vendor builds
INDEX_FALLBACK = (
    "the index of pip's configuration (not hash-checked: the baseline records only the "
    "versions of packages that are not vendor builds)"
)
