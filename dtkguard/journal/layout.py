"""Which environment a journal covers: its prefix and install roots as the guard's store
recorded them (`layout`), whether a transaction may be acted on (`untrusted`), and the
distributions the roots hold (`installed_versions`)."""

from __future__ import annotations

import os
from pathlib import Path

from dtkguard.journal.txn import JournalError, Transaction
from dtkguard.lightclass import record


@record
class Layout:
    """Where an interpreter keeps its journal and which folders a transaction covers."""

    prefix: Path
    roots: list[Path]
    scripts: Path
    purelib: Path

    @property
    def journal(self) -> Path:
        """In the guard's store (`dtkguard.env.store`), never inside the env."""
        from dtkguard.env.store import env_store

        return env_store(self.prefix).journal


def layout(python: str, *, adopt: bool = False) -> Layout:
    """``python``'s prefix and the install roots (purelib, platlib, scripts) a transaction
    covers: the ones the guard's store recorded for the env, never what a file inside the env
    says. An env the store does not know yet is recorded now. An interpreter that reports other
    roots than the record is refused (the env is not the one recorded), unless ``adopt``
    (`restore` rebuilding it: the record follows the env)."""
    from dtkguard.env import store
    from dtkguard.env.interpreter import interpreter
    from dtkguard.errors import InputError

    interp = interpreter(python)
    es = store.env_store(interp.prefix)
    try:
        rec = es.record()
    except InputError as exc:
        raise JournalError(f"cannot read the guard's record of {interp.prefix}: {exc}") from None
    now = store.current_identity(interp).roots
    if rec is not None and rec.identity.roots != now and not adopt:
        raise JournalError(
            f"{python} installs into {', '.join(now)}, not into the folders the guard's store "
            f"recorded for {interp.prefix} ({', '.join(rec.identity.roots)}): the environment "
            "was replaced; `dtkguard restore` rebuilds it"
        )
    if rec is None or adopt:
        _, rec = store.record_env(interp)
    roots = [Path(r) for r in rec.identity.roots if Path(r).is_dir()]
    scripts = Path(rec.identity.roots[-1])
    return Layout(interp.prefix, roots, scripts, Path(rec.identity.purelib))


def untrusted(txn: Transaction, lay: Layout) -> str | None:
    """Why the journal may not act on ``txn`` (None: it may): it names other roots than the
    store's record of the env, or its ``txn.json`` is not one the journal wrote (its digest is
    not in the journal's chain, `dtkguard.journal.chain`)."""
    from dtkguard.journal.chain import untrusted as why

    return why(txn.dir, [str(r) for r in lay.roots])


def installed_versions(roots: list[Path]) -> tuple[dict[str, str], dict[str, str]]:
    """({canonical name: version}, {canonical name: name}) of the dists in ``roots``."""
    from dtkguard.env.dist import read_dist
    from dtkguard.env.root import Root

    versions: dict[str, str] = {}
    names: dict[str, str] = {}
    root = Root()
    for site in roots:
        try:
            entries = sorted(os.listdir(site))
        except OSError:
            continue
        for entry in entries:
            if not entry.endswith((".dist-info", ".egg-info")):
                continue
            dist = read_dist(root, site, entry)
            if isinstance(dist, str) or dist.key in versions:
                continue
            versions[dist.key] = dist.version
            names[dist.key] = dist.name
    return versions, names
