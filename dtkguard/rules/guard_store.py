"""guard-missing, env-replaced, protected-changed, guard-state-tampered: the target against
what the guard's store (`dtkguard.env.store`) recorded when it was guarded.

The store lives outside the env, so what it holds is the reference: the identity of the env
(interpreter, site-packages, pyvenv.cfg), the guard's manifest (every layer it wrote, with its
sha256), the protected files' digests, the override log and the journal with their digest
chains. Only envs of this host are compared (an image's store is not here).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from dtkguard.env import store, store_path
from dtkguard.findings import Finding, Severity
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo
from dtkguard.util.purepath import is_dir, is_file

GUARD_MISSING = RuleInfo(
    "guard-missing",
    Severity.CRITICAL,
    "The guard of a guarded environment is gone or altered",
    "The store knows this environment as guarded, but a layer guard install wrote (the pip "
    "hook, its finder, tripwire, decision copy, .pth line, compiled policy, pip.conf, the "
    "pointer to the store) is missing or differs from the digest the store holds, or the "
    "store's own manifest or baseline is gone. Repair it with dtkguard restore --python "
    "<interpreter>.",
    family="store",
)

ENV_REPLACED = RuleInfo(
    "env-replaced",
    Severity.CRITICAL,
    "The environment was created again or its interpreter changed",
    "The store recorded this environment with another interpreter, site-packages folder or "
    "pyvenv.cfg (python -m venv --clear, virtualenv --clear, uv venv --clear, uv venv "
    "--allow-existing --python X): whatever it held is gone. Rebuild it from the store with "
    "dtkguard restore --python <interpreter>.",
    family="store",
)

PROTECTED_CHANGED = RuleInfo(
    "protected-changed",
    Severity.CRITICAL,
    "A file the guard protects changed",
    "pip's own files, bin/python*, bin/pip*, the uv shim, bin/dtkpip or bin/activate* differ "
    "from the copy the store keeps (a patched pip can install past the guard). Put them back "
    "with dtkguard restore --python <interpreter>.",
    family="store",
)

STATE_TAMPERED = RuleInfo(
    "guard-state-tampered",
    Severity.CRITICAL,
    "The guard's records were edited or truncated",
    "A digest chain of the store does not hold: an override record or a journal transaction "
    "was removed or edited, a log was truncated, or a transaction names folders outside the "
    "environment (the journal refuses it). Inspect the store folder named.",
    family="store",
)

#: the rules this family reports (collected by `dtkguard.rules.catalog`)
RULES = (GUARD_MISSING, ENV_REPLACED, PROTECTED_CHANGED, STATE_TAMPERED)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from dtkguard.env.store import EnvStore, Record


def check(ctx: CheckContext) -> Iterator[Finding]:
    from dtkguard.errors import InputError
    from dtkguard.rules.baseline import target_prefixes

    if not ctx.env.root.is_host:
        return
    seen: set[str] = set()
    for prefix in target_prefixes(ctx.env):
        es = store.env_store(prefix)
        if es.top in seen:
            continue
        seen.add(es.top)
        try:
            rec = es.record()
        except InputError as exc:
            where = es.text(store_path.RECORD_FILE)
            yield STATE_TAMPERED.finding("guard", exc.message, "inspect it", where)
            continue
        if rec is not None:
            yield from check_env(ctx, es, rec)


def check_env(ctx: CheckContext, es: EnvStore, rec: Record) -> Iterator[Finding]:
    """Every finding of this family for the env ``es`` records as ``rec``."""
    from dtkguard.env.baseline import restore_command

    fix = f"rebuild it from the store: {restore_command(rec.identity.python)}"
    layers = list(_guard_layers(es, rec, fix)) if rec.guarded else []
    yield from _replaced(ctx, rec, fix, layers_intact=rec.guarded and not layers)
    yield from layers
    if rec.guarded:
        yield from _protected(es, fix)
    yield from _chains(es, rec)


def _replaced(ctx: CheckContext, rec: Record, fix: str, layers_intact: bool) -> Iterator[Finding]:
    """``env-replaced`` when the env is not the one recorded. New inodes and ctimes alone (a
    copy of the env: every Docker build step, overlayfs) are not, while the guard's layers in
    the env are byte for byte what install wrote; with a layer gone or changed they are."""
    from dtkguard.env.store import identity_now

    ident = rec.identity
    now = identity_now(ident, ctx.env.target.python_version)
    why = ident.differences(now)
    if why and layers_intact and ident.stat_only(now):
        why = []
    sites = {os.path.realpath(s) for s in ctx.env.sites}
    if ctx.env.sites and ident.purelib not in sites:
        why.append(f"{ident.purelib} is no longer on the interpreter's path")
    if why:
        yield ENV_REPLACED.finding(
            "guard",
            f"the environment {ident.prefix} is not the one guarded on {rec.created}: "
            + "; ".join(why),
            fix,
            ident.prefix,
            {"recorded": rec.created, "changes": why},
        )


#: the guard's manifest lists a few dozen files
MAX_MANIFEST = 4 << 20


def _guard_layers(es: EnvStore, rec: Record, fix: str) -> Iterator[Finding]:
    """Each guard layer inside the env (from the store's manifest) that is gone or differs."""
    from dtkguard.util.safe_read import read_capped
    from dtkguard.util.text import json_loads

    manifest, baseline = es.text(store_path.MANIFEST_FILE), es.text(store_path.BASELINE_FILE)
    try:  # capped, regular files only (a FIFO there must not hang check), no RecursionError
        files = json_loads(read_capped(manifest, MAX_MANIFEST, what="manifest"))["files"]
        if not isinstance(files, dict) or not all(isinstance(e, dict) for e in files.values()):
            raise TypeError("files is not a table of tables")
    except (OSError, ValueError, KeyError, TypeError):
        yield GUARD_MISSING.finding(
            "guard", f"the store has no readable manifest of the guard ({manifest})", fix
        )
        return
    if baseline in files and not is_file(baseline):
        yield GUARD_MISSING.finding("guard", f"the store's baseline {baseline} is gone", fix)
    bad = _changed_layers(es, files)
    inside = [(p, w) for p, w in bad if p.startswith(rec.identity.prefix.rstrip("/") + "/")]
    if inside:
        shown = ", ".join(f"{p} ({w})" for p, w in inside[:6])
        more = f" and {len(inside) - 6} more" if len(inside) > 6 else ""
        yield GUARD_MISSING.finding(
            "guard",
            f"{len(inside)} file(s) of the guard changed since `guard install`: {shown}{more}",
            fix,
            inside[0][0],
            {"files": [{"path": p, "change": w} for p, w in inside]},
        )


def _changed_layers(es: EnvStore, files: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """(path, "missing" | "modified") of each layer of the manifest ``files`` that is not what
    install wrote. A hashed layer is not hashed again while its inode, ctime and size stay
    what the store's layer stat cache holds beside the digest the hash found (a write, a
    rename or a copy in its place changes its ctime; as the baseline's stat cache): equal to
    the manifest's, it is intact; another, modified. A digest found of a layer whose ctime is
    under two seconds old is not kept (`stat_cache.settled`), an equal one always was; the
    cache is written when it moved."""
    from dtkguard.env.store import load_stat_cache, save_stat_cache

    cache = es.text(store_path.LAYER_STAT_CACHE_FILE)
    seen = load_stat_cache(cache)
    verified: dict[str, list[Any]] = {}
    bad = []
    for path, entry in sorted(files.items()):
        what = _layer(path, entry, seen.get(path), verified)
        if what:
            bad.append((path, what))
    if any(seen.get(p) != key for p, key in verified.items()) and is_dir(es.top):
        save_stat_cache(cache, verified)
    return bad


def _layer(
    path: str, entry: dict[str, Any], seen: list[Any] | None, verified: dict[str, list[Any]]
) -> str | None:
    """ "missing" or "modified" when a guard layer is not what install wrote; None when it is
    (a missing ``.pyc`` is none: Python compiles the source again). Read as a regular file
    only: a FIFO or a device put in a layer's place is "modified", never a hang. ``seen``: the
    layer stat cache's ``[ino, ctime_ns, size, digest found]`` of ``path``; a hash adds the
    file's to ``verified`` (one that differs only once it is settled)."""
    from dtkguard.env.baseline import pyc_body_sha256, sha256_file
    from dtkguard.util.stat_cache import settled

    pyc = bool(entry.get("code_sha256"))
    want = entry.get("code_sha256") if pyc else entry.get("sha256")
    try:
        st = os.lstat(path)
    except OSError:
        return None if pyc else "missing"
    if pyc and stat.S_ISLNK(st.st_mode) and not os.path.exists(path):
        return None  # as a missing .pyc
    if not want:
        return None
    key = [st.st_ino, st.st_ctime_ns, st.st_size]
    if stat.S_ISREG(st.st_mode) and isinstance(seen, list) and seen[:3] == key and len(seen) == 4:
        verified[path] = seen
        return None if seen[3] == want else "modified"
    got = pyc_body_sha256(path) if pyc else sha256_file(path)
    if got == want:
        verified[path] = [*key, want]
        return None
    if got is not None and stat.S_ISREG(st.st_mode) and settled(st):
        verified[path] = [*key, got]  # not hashed again while it stays this file
    return "modified"


def _protected(es: EnvStore, fix: str) -> Iterator[Finding]:
    from dtkguard.env.protected_copy import changed

    # the guard's own files and pip.conf are layers: `guard-missing` names them
    bad = [(p, w) for p, w in changed(es) if not os.path.basename(p).startswith("_dtkguard")]
    bad = [(p, w) for p, w in bad if "dtkguard-pip-hook" not in p and not p.endswith("/pip.conf")]
    if bad:
        shown = ", ".join(f"{p} ({w})" for p, w in bad[:6])
        more = f" and {len(bad) - 6} more" if len(bad) > 6 else ""
        yield PROTECTED_CHANGED.finding(
            "guard",
            f"{len(bad)} protected file(s) differ from the store's copy: {shown}{more}",
            fix,
            bad[0][0],
            {"files": [{"path": p, "change": w} for p, w in bad]},
        )


def _chains(es: EnvStore, rec: Record) -> Iterator[Finding]:
    from dtkguard.env import chain
    from dtkguard.journal import chain as journal_chain

    roots = [r for r in rec.identity.roots if os.path.isdir(r)]
    overrides, journal = es.text(store_path.OVERRIDES_FILE), es.text(store_path.JOURNAL_DIR)
    for where, problems in (
        (overrides, chain.problems(overrides)),
        (journal, journal_chain.problems(journal, roots)),
    ):
        for problem in problems:
            yield STATE_TAMPERED.finding(
                "guard",
                f"{problem} ({where})",
                "inspect the store folder: the guard's records must only be appended to by "
                "dtkguard; `dtkguard history` lists the journal",
                where,
            )
