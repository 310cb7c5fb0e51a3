"""The journal as text, in the manner of `conda list --revisions`."""

from __future__ import annotations

from pathlib import Path

from dtkguard.journal.txn import Transaction


def render(txns: list[Transaction], journal: Path) -> str:
    from dtkguard.recover.vault import human_size

    if not txns:
        return f"no transactions in {journal}\n"
    out: list[str] = []
    for t in txns:
        state = "" if t.state == "committed" else f"  [{t.state}]"
        out.append(f"{t.time}  (rev {t.id})  {' '.join(t.argv)}{state}")
        for key, before, after in t.changes():
            name = t.names.get(key, key)
            if before is None:
                out.append(f"    +{name}-{after}")
            elif after is None:
                out.append(f"    -{name}-{before}")
            else:
                out.append(f"     {name}  {{{before} -> {after}}}")
        if t.kept_files:
            out.append(f"    kept: {t.kept_files} removed file(s), {human_size(t.kept_bytes)}")
        for text in (t.reason and f"override: {t.reason}", t.note):
            if text:
                out.append(f"    note: {text}")
        out.append("")
    return "\n".join(out)
