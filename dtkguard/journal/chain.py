"""What the journal's own records must be, so a forged or edited transaction is refused.

The journal (`dtkguard.journal.transaction`) lives in the env's store folder; every time it writes a
transaction's ``txn.json`` it first appends that file's digest to ``chain.jsonl`` beside the
transactions (a `dtkguard.env.chain` log, whose head it brings up to date when a transaction
reaches a final state). A transaction the journal may act on names exactly
the install roots the store recorded for the env, and its ``txn.json`` is one the chain holds.
`check` reports the others (`dtkguard.rules.guard_store`).
"""

from __future__ import annotations

import os

from dtkguard.util.purepath import join, parent, pure_path
from dtkguard.util.sha import sha256_hex

CHAIN = "chain.jsonl"
#: in a transaction's folder while its snapshot is taken (before its first ``txn.json``)
PREPARING = "preparing"


def txn_digest(text: str) -> str:
    return sha256_hex(text.encode())


def untrusted(txn_dir: str | os.PathLike[str], roots: list[str]) -> str | None:
    """Why the journal may not act on the transaction in ``txn_dir`` (None: it may)."""
    from dtkguard.env.chain import records
    from dtkguard.util.safe_read import MAX_STATE_JSON, read_capped
    from dtkguard.util.text import json_loads

    folder = pure_path(os.fspath(txn_dir))
    try:  # non-blocking, regular files only, capped: a FIFO there must not hang check
        text = read_capped(join(folder, "txn.json"), MAX_STATE_JSON, what="txn.json").decode()
        data = json_loads(text)
        named, tid = list(data.get("roots") or []), int(data["id"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "its txn.json cannot be read"
    if named != roots:
        return f"it names {', '.join(map(str, named)) or 'no folder'}, not the env's folders"
    digest = txn_digest(text)
    chain = join(parent(folder), CHAIN)
    if not any(r and r.get("id") == tid and r.get("sha256") == digest for _, r in records(chain)):
        return "its txn.json is not one the journal wrote (not in the journal's digest chain)"
    return None


def problems(journal: str | os.PathLike[str], roots: list[str]) -> list[str]:
    """What is wrong with the journal at ``journal`` for an env whose install roots are
    ``roots``: its chain, and each transaction it may not act on."""
    from dtkguard.env.chain import problems as chain_problems
    from dtkguard.util.purepath import exists, is_dir

    journal = pure_path(os.fspath(journal))
    if not is_dir(journal):
        return []
    out = chain_problems(join(journal, CHAIN))
    for name in sorted(os.listdir(journal)):
        folder = join(journal, name)
        if exists(join(folder, PREPARING)) and not exists(join(folder, "txn.json")):
            continue  # its snapshot is being taken, or was killed: nothing changed
        if name.isdigit():
            why = untrusted(folder, roots)
            if why:
                out.append(f"transaction {name}: {why}")
    return out
