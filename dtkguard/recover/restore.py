"""Carry out a restore plan with the target's own pip, inside one journalled transaction.

Order: uninstall what goes (one pip run), packages only an index has, then the staged,
hash-checked wheels in one run (``--no-index --find-links STAGE --no-deps --force-reinstall
--require-hashes``: pip checks the hashes again). A failing pip run rolls the environment
back to where the restore started. The guard's pip hook is passed legitimately: reinstalling
a vendor build is what it allows; removing a pinned name or installing something the policy
forbids carries an override: each such pip run is recorded in the overrides log with its own
one-time token, its reason naming the restore and its journal transaction, and the log moves
into that transaction when the environment matches again.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from dtkguard.env.store import overrides_log
from dtkguard.guard.plan import NO_CONSTRAINTS, one_source_env, run_pip
from dtkguard.journal.layout import Layout, layout
from dtkguard.journal.transaction import TransactionFailed, recover, transaction
from dtkguard.journal.txn import Transaction
from dtkguard.policy.compiled import CompiledPolicy
from dtkguard.recover.plan import Install, RestorePlan
from dtkguard.recover.wanted import Wanted
from dtkguard.util.console import info

ARCHIVED_OVERRIDES = "overrides.jsonl"
#: the note of a `restore --to guard-install` that took the baseline back there
BASELINE_BACK = "the baseline moved back to `guard install`"


def _needs_override(plan: RestorePlan, policy: CompiledPolicy) -> bool:
    from dtkguard.rules.vendor import same_version

    for r in plan.removals:
        if policy.vendor_build(r.dist.name) or r.touches_vendor:
            return True
    for i in plan.installs:
        pin = policy.vendor_build(i.want.name)
        if pin is not None and not same_version(pin, i.want.version):
            return True
        rule = policy.deny_rule(i.want.name)
        if rule is not None and not (rule.vendor_builds_ok and i.want.vendor):
            return True
    return False


@dataclass(frozen=True)
class Override:
    """Let the pip hook through for one tool's pip runs: each run is recorded in the overrides
    log with its own one-time token (as dtkpip does), naming the tool and the reason."""

    log: Path
    reason: str
    tool: str


def _pip(
    python: str, args: list[str], env: dict[str, str], what: str, ovr: Override | None = None
) -> None:
    from dtkguard.env import override_log as overrides

    env = dict(env)
    token = None
    if ovr is not None:
        token = overrides.record_with_token(ovr.log, ovr.reason, ["pip", *args], [what], ovr.tool)
        env.update({overrides.ENV_VAR: ovr.reason, overrides.TOKEN_VAR: token})
    info(f"{what}: pip {' '.join(args)}")
    try:
        proc = run_pip(python, args, env)
    finally:
        if token:  # withdrawn when the hook did not need it
            overrides.token_file(ovr.log, token).unlink(missing_ok=True)  # type: ignore[union-attr]
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        tail = lines[-1].strip() if lines else f"pip exited {proc.returncode}"
        raise TransactionFailed(f"{what} failed: {tail}")


@dataclass(frozen=True)
class Build:
    """One distribution to put back from a checked wheel."""

    name: str
    version: str
    wheel: Path
    #: installed as requested (REQUESTED marker), as a dependency (False) or not known (None)
    requested: bool | None
    #: install by the wheel's own path (pip writes the same direct_url.json again)
    by_path: bool = False
    #: hex sha256 of ``wheel`` when already known (taken as it was staged)
    sha256: str | None = None


def _requested(item: Install) -> bool | None:
    """The baseline knows it for vendor builds; the journal's kept copy for the others."""
    if item.want.requested is not None:
        return item.want.requested
    return item.found.requested if item.found is not None else None


def execute(
    python: str,
    plan: RestorePlan,
    policy: CompiledPolicy,
    txn: Transaction,
    stage: Path,
    overrides_file: Path,
) -> None:
    """Run the plan's pip steps; `TransactionFailed` (after which the caller rolls back)."""
    builds = [
        Build(
            i.want.name,
            i.want.version,
            i.found.wheel,
            _requested(i),
            i.found.by_path,
            i.found.sha256,
        )
        for i in plan.installs
        if i.found is not None
    ]
    ovr = None
    if _needs_override(plan, policy):
        reason = f"dtkguard restore (journal transaction {txn.id})"
        ovr = Override(overrides_file, reason, "dtkguard restore")
        txn.reason = reason
        txn.save()
    indexed = [f"{i.want.name}=={i.want.version}" for i in plan.installs if i.from_index]
    removals = [r.dist.name for r in plan.removals]
    put_back(python, removals, builds, indexed, dict(os.environ), stage, ovr)


def put_back(
    python: str,
    remove: list[str],
    builds: list[Build],
    indexed: list[str],
    env: dict[str, str],
    stage: Path,
    ovr: Override | None = None,
) -> None:
    """The pip runs of a restore or an undo (``ovr``: past the guard, recorded): uninstall
    ``remove``, install ``indexed`` from pip's own configuration, then every checked wheel in
    one run: ``--no-index --find-links STAGE --no-deps --force-reinstall --require-hashes``.
    pip marks each named build ``REQUESTED``; for the builds that were installed as a
    dependency at baseline that marker and its RECORD row are taken out again (`unrequest`),
    which leaves the RECORD pip writes for a dependency (it sorts its rows)."""
    from dtkguard.recover.wheels import sha256_of

    if remove:
        _uninstall(python, sorted(set(remove)), env, ovr)
    if indexed:
        args = ["install", "--no-deps", "--force-reinstall", *indexed]
        _pip(python, args, {**env, **NO_CONSTRAINTS}, "pip install from the index", ovr)
    if not builds:
        return
    flat = Path(tempfile.mkdtemp(prefix="install-", dir=stage))
    lines = []
    for b in builds:
        if b.by_path:  # pip reads it where it is: that path goes into direct_url.json
            lines.append(f"{b.wheel} --hash=sha256:{b.sha256 or sha256_of(b.wheel)}")
            continue
        _link_or_copy(b.wheel, flat / b.wheel.name)  # staged privately: no second copy
        digest = b.sha256 or sha256_of(flat / b.wheel.name)
        lines.append(f"{b.name}=={b.version} --hash=sha256:{digest}")
    req = flat / "restore-requirements.txt"
    req.write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["install", "--no-index", "--find-links", str(flat), "--no-deps"]
    args += ["--force-reinstall", "--require-hashes", "-r", str(req)]
    lone = one_source_env(env, Path(tempfile.mkdtemp(prefix="no-links-", dir=stage)))
    _pip(python, args, lone, "pip install of the checked wheels", ovr)
    as_dep = [b for b in builds if b.requested is False]
    if as_dep:
        from dtkguard.env.interpreter import interpreter

        interp = interpreter(python)
        roots = [interp.purelib, *([interp.platlib] if interp.platlib else [])]
        for b in as_dep:
            unrequest(roots, b.wheel)


def _uninstall(python: str, names: list[str], env: dict[str, str], ovr: Override | None) -> None:
    """Remove ``names`` as ``pip uninstall -y`` does: directly when `remove.plan` can (the
    journal has kept their files), else with pip."""
    from dtkguard.decision import canonical
    from dtkguard.env.interpreter import interpreter
    from dtkguard.recover import remove as rm
    from dtkguard.recover.plan import current_dists

    interp = interpreter(python)
    sites = list(dict.fromkeys([interp.purelib, *([interp.platlib] if interp.platlib else [])]))
    found = current_dists(sites)
    keys = {canonical(n) for n in names}
    dists = [d for k in sorted(keys) for d in found.get(k, [])]
    paths = None
    if all(len(found.get(k, [])) <= 1 for k in keys):  # a name twice: pip picks which goes
        paths = rm.plan(dists, interp.prefix, sites, interp.scripts)
    if paths is None:
        _pip(python, ["uninstall", "-y", *names], env, "pip uninstall", ovr)
        return
    info(f"removed without a pip run: {' '.join(d.name for d in dists)} ({len(paths)} files)")
    try:
        rm.remove(paths, [interp.prefix, *sites, *([interp.scripts] if interp.scripts else [])])
    except OSError as exc:
        raise TransactionFailed(f"removing {exc.filename}: {exc.strerror or exc}") from exc


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)


def unrequest(roots: list[Path], wheel: Path) -> None:
    """Take pip's ``REQUESTED`` marker, and its RECORD row, out of the dist-info that ``wheel``
    installed: what pip writes for a build it installs as a dependency."""
    from dtkguard.recover.wheels import dist_info_name

    try:
        info = dist_info_name(wheel)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise TransactionFailed(f"{wheel.name}: {exc}") from exc
    for root in roots:
        folder = root / info
        marker = folder / "REQUESTED"
        if marker.is_symlink() or not marker.is_file():
            continue
        record = folder / "RECORD"
        row = f"{info}/REQUESTED,"
        try:
            data = record.read_bytes()
            kept = [ln for ln in data.splitlines(keepends=True) if not ln.startswith(row.encode())]
            tmp = record.with_name("RECORD.dtkguard-tmp")
            tmp.write_bytes(b"".join(kept))
            shutil.copymode(record, tmp)
            os.replace(tmp, record)
            marker.unlink()
        except OSError as exc:
            raise TransactionFailed(f"{record}: {exc.strerror or exc}") from exc
        return


def archive_overrides(overrides_file: Path, txn: Transaction) -> int:
    """Move the environment's override records into the restore's transaction: the state they
    let in is gone. Returns how many records moved."""
    try:
        text = overrides_file.read_text(encoding="utf-8")
    except OSError:
        return 0
    count = sum(1 for line in text.splitlines() if line.strip())
    if count:
        dest = txn.dir / ARCHIVED_OVERRIDES
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(text)
        txn.note = (txn.note + f"; {count} override record(s) archived").lstrip("; ")
        txn.save()
    os.unlink(overrides_file)
    from dtkguard.env.chain import head_path

    head = head_path(overrides_file)
    if head.is_file():  # the chain's head goes with the records it counts
        os.replace(head, txn.dir / head.name)
    return count


def unarchive_overrides(txn: Transaction, overrides_file: Path) -> None:
    """Put the records a restore archived back into the override log (its undo: they
    describe the state that comes back), each appended to the log's chain again."""
    import json

    from dtkguard.env.chain import append, head_path

    archived = txn.dir / ARCHIVED_OVERRIDES
    if not archived.is_file():
        return
    for line in archived.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entry.pop("prev", None)
            append(overrides_file, entry)
    archived.unlink()
    (txn.dir / head_path(archived).name).unlink(missing_ok=True)  # the archived chain's head


def say(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def restore(
    python: str,
    wanted: Wanted,
    policy: CompiledPolicy,
    *,
    find_links: list[str],
    indexes: list[str],
    dry_run: bool,
    argv: list[str],
    yes: bool = False,
) -> int:
    """Plan, print, ask (`confirm`), do, check (after rolling back a transaction a killed
    process left open); when the env matches its baseline again, the baseline's snapshot of
    the vendor builds follows their new stat (the tripwire is quiet). Exit 0 matched, 1
    something not restored."""
    from dtkguard.env.interpreter import interpreter
    from dtkguard.recover.confirm import confirm
    from dtkguard.recover.guard_repair import baseline_from_lock, repair, seeded_by_recreation
    from dtkguard.recover.plan import losses, make_plan, render
    from dtkguard.recover.sources import Sources
    from dtkguard.recover.vault import open_vault

    interp = interpreter(python)
    seeded = seeded_by_recreation(interp)  # before the record takes the env's identity now
    lay = layout(python, adopt=not dry_run)
    if not dry_run:
        recover(lay)
        for line in repair(interp):  # pip and the guard first, from the store
            say(f"dtkguard restore: repaired {line}\n")
    with tempfile.TemporaryDirectory(prefix="dtkguard-restore-") as tmp:
        sources = Sources(
            python,
            Path(tmp),
            vault=open_vault(lay.prefix),
            find_links=[*find_links, *policy.find_links],
            indexes=[*indexes, *policy.indexes],
            lay=lay,
        )
        plan = make_plan(wanted, policy, lay.roots, sources)
        say(render(plan, policy, python, dry_run))
        if dry_run:
            return 1 if plan.missing else 0
        lost = [x for x in losses(plan, policy) if _canonical_name(x) not in seeded]
        confirm("dtkguard restore", lost, yes)
        txn = _journalled(python, plan, policy, argv, lay, Path(tmp))
        if wanted.kind == "lock" and not plan.missing:
            for line in baseline_from_lock(interpreter(python), wanted.source):
                say(f"dtkguard restore: recorded {line}\n")
    code = final_check(python, wanted, policy, lay)
    if code == 0 and wanted.kind == "baseline":
        _follow(python, wanted, txn)
    return code


def _journalled(
    python: str, plan: RestorePlan, policy: CompiledPolicy, argv: list[str], lay: Layout, tmp: Path
) -> Transaction | None:
    """`execute` the plan in one journal transaction whose snapshot holds the files of the
    distributions it names (None: nothing to do)."""
    from dtkguard.env.interpreter import interpreter

    if not (plan.removals or plan.installs):
        return None
    interp = interpreter(python)
    touches = [r.dist.key for r in plan.removals] + [i.want.key for i in plan.installs]
    with transaction(python, "dtkguard restore", argv, lay=lay, touches=touches) as txn:
        execute(python, plan, policy, txn, tmp, overrides_log(interp))
        if not plan.missing:
            archive_overrides(overrides_log(interp), txn)
    say(f"dtkguard restore: done (journal transaction {txn.id}).\n")
    return txn


def _follow(python: str, wanted: Wanted, txn: Transaction | None) -> None:
    """The baseline's snapshot follows the env that matches it again (back at `guard install`:
    the baseline goes back there too)."""
    from dtkguard.env.interpreter import interpreter
    from dtkguard.guard.baseline import follow
    from dtkguard.recover.wanted import GUARD_INSTALL

    back = wanted.source == GUARD_INSTALL and txn is not None
    moved = follow(interpreter(python), txn.changes() if back and txn else (), approved=back)
    if back and txn is not None and [m for m in moved if m != "refreshed"]:
        txn.note = (txn.note + f"; {BASELINE_BACK}").lstrip("; ")  # its undo moves it again
        txn.save()


def _canonical_name(loss: str) -> str:
    """The canonical name of a `losses` entry (``name version``)."""
    from dtkguard.decision import canonical

    return canonical(loss.partition(" ")[0])


def final_check(python: str, wanted: Wanted, policy: CompiledPolicy, lay: Layout) -> int:
    """Compare again (nothing fetched) and run the rules of `dtkguard check`."""
    from dtkguard.env.environment import from_python
    from dtkguard.findings import Severity
    from dtkguard.recover.plan import make_plan
    from dtkguard.recover.sources import Sources
    from dtkguard.rules.context import CheckContext
    from dtkguard.rules.engine import ENVIRONMENT_CHECKS, run_checks

    env = from_python(python)
    with tempfile.TemporaryDirectory(prefix="dtkguard-check-") as tmp:
        nowhere = Sources(python, Path(tmp))
        left = make_plan(wanted, policy, lay.roots, nowhere)
    findings = [
        f
        for f in run_checks(CheckContext(env, policy, extra={}), ENVIRONMENT_CHECKS)
        if f.severity >= Severity.HIGH
    ]
    lines = [
        f"  - {r.dist.name} {r.dist.version}: still installed ({r.why})" for r in left.removals
    ]
    lines += [f"  - {i.want.name} {i.want.version}: {i.why}" for i in left.installs]
    lines += [f"  - {what}: {why}" for what, why in left.missing]
    lines += [f"  - {f.rule} ({f.severity.value}) {f.subject}: {f.message}" for f in findings]
    lines += guard_status_lines(python, policy)
    if not lines:
        say(f"check: {python} matches {wanted.words} again; `dtkguard check` is clean.\n")
        return 0
    say(f"check: {python} does not match {wanted.words} yet:\n" + "\n".join(lines) + "\n")
    return 1


def guard_status_lines(python: str, policy: CompiledPolicy) -> list[str]:
    """What `guard status` would show as not present, for a guarded env (the store's policy
    copy is the reference; ``policy`` when there is none)."""
    from dtkguard.env.interpreter import interpreter
    from dtkguard.env.store import env_store
    from dtkguard.guard import layers
    from dtkguard.guard.hook_policy import read_policy_json

    interp = interpreter(python)
    es = env_store(interp.prefix)
    rec = es.record()
    if rec is None or not rec.guarded:
        return []
    reference = read_policy_json(es.policy) or policy
    rows = layers.status(interp, reference)
    return [
        f"  - guard status: {layer} {path} {state}"
        for layer, path, state in rows
        if state != "present"
    ]
