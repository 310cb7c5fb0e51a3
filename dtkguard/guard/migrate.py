"""Moving a guard from before the store into it, on the next `guard install`.

Such a guard kept everything in ``<prefix>/dtkguard/``: its manifest, the baseline, the
journal, the vault and the override log. They move into the env's folder of the store
(`dtkguard.env.store`); the caches the hook reads (policy, constraints, tripwire snapshot) stay.
A baseline that no longer matches the manifest's digest is not carried over (it would bless
whatever changed it): install refuses, as it does for a changed baseline, unless
``--rebaseline``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from pathlib import Path

from dtkguard.env import store, store_path
from dtkguard.env.baseline import legacy_baseline_path
from dtkguard.errors import InputError
from dtkguard.util.atomic import atomic_write_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.env.interpreter import Interpreter


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def migrate(interp: Interpreter, *, rebaseline: bool = False) -> list[str]:
    """Move what a guard before the store left in the env into the store; returns what moved
    (names). Nothing to do for an env the store already holds, or that was never guarded."""
    es = store.env_store(interp.prefix)
    legacy = interp.state_dir
    moved: list[str] = []
    old_manifest = legacy / "manifest.json"
    if old_manifest.is_file() and not es.manifest.exists():
        es.create()
        moved += _manifest_and_baseline(interp, es, old_manifest, rebaseline)
    for name, dest in (("journal", es.journal), ("vault", es.vault)):
        src = legacy / name
        if src.is_dir() and not dest.exists():
            es.create()
            shutil.move(str(src), str(dest))
            moved.append(name)
            if name == "journal":
                _chain_journal(dest)
    if _overrides(interp.legacy_overrides_file, es):
        moved.append(store_path.OVERRIDES_FILE)
    return moved


def _manifest_and_baseline(
    interp: Interpreter, es: store.EnvStore, old_manifest: Path, rebaseline: bool
) -> list[str]:
    try:
        data = json.loads(old_manifest.read_text(encoding="utf-8"))
        files = dict(data.get("files", {}))
    except (OSError, ValueError, AttributeError):
        data, files = {}, {}
    old_base = legacy_baseline_path(interp.prefix)
    entry = files.pop(str(old_base), None)
    moved = [store_path.MANIFEST_FILE]
    if old_base.is_file():
        intact = entry is not None and _sha(old_base) == entry.get("sha256")
        if not intact and not rebaseline:
            raise InputError(
                f"{old_base} changed since `guard install`; check the environment "
                "(`dtkguard check`), then record a new baseline with `guard install --rebaseline`",
                field="baseline",
            )
        if intact:
            shutil.copyfile(old_base, es.baseline)
            os.chmod(es.baseline, 0o600)
            files[str(es.baseline)] = {**entry, "layer": "baseline"}
            moved.append(store_path.BASELINE_FILE)
    text = json.dumps({"files": files, "options": data.get("options", {})}, indent=1)
    atomic_write_text(es.manifest, text + "\n", 0o600)
    old_manifest.unlink()
    old_base.unlink(missing_ok=True)
    return moved


def _chain_journal(journal: Path) -> None:
    """Enter the moved transactions into the journal's digest chain as they are (the journal
    still refuses one that names other folders than the env's)."""
    from dtkguard.env import chain
    from dtkguard.journal.chain import CHAIN, txn_digest
    from dtkguard.journal.txn import transactions

    for txn in transactions(journal):
        digest = txn_digest(txn.file.read_text(encoding="utf-8"))
        entry = {"id": txn.id, "state": txn.state, "sha256": digest, "migrated": True}
        chain.append(journal / CHAIN, entry)


def _overrides(old: Path, es: store.EnvStore) -> bool:
    """Append the records of an in-env override log to the store's chained one."""
    from dtkguard.env import chain
    from dtkguard.env.override_log import read

    if not old.is_file():
        return False
    es.create()
    for _, entry in read(old):
        if isinstance(entry, str):  # the rest of the log could not be read: keep the file
            chain.append(es.overrides, {"unreadable": entry, "migrated": str(old)})
            return True
        record = entry if entry is not None else {"unreadable": True}
        record = {k: v for k, v in record.items() if k != "prev"}
        chain.append(es.overrides, {**record, "migrated": str(old)})
    old.unlink()
    for token in old.parent.glob("override-*.token"):
        with contextlib.suppress(OSError):
            token.unlink()
    return True
