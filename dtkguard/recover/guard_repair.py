"""Restore repairs the guard, not only the vendor builds: from the store, before pip runs.

1. A venv that is gone (``rm -rf``) is created again with the interpreter the store recorded
   (`recreate`), its ``pyvenv.cfg`` put back.
2. Every protected file that differs from the store's copy is put back from it (pip's own files
   first: a patched or missing pip cannot be trusted to run the restore; ``bin/python*``,
   ``bin/pip*``, the uv shim, ``bin/activate*``, the hook, finder, tripwire, decision copy);
   a baseline or manifest someone put in the env's state folder is removed.
3. The guard's layers are written again from the store's policy copy (`guard install` with the
   options recorded in the store's manifest; the store's baseline is kept).
4. The store's record takes the env's identity as it is now (a re-created env is the guarded
   one again).

`restore` says "clean" only when afterwards `check` (whose `store` family compares all of
this) and `guard status` are clean.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from dtkguard.env import store, store_path
from dtkguard.errors import DtkguardError, TargetError
from dtkguard.util.safe_read import read_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.env.interpreter import Interpreter
    from dtkguard.lock.read import Lock
    from dtkguard.policy.compiled import CompiledPolicy


def known_python(python: str) -> tuple[store.EnvStore, store.Record] | None:
    """The store's env whose recorded interpreter is ``python`` (by path or realpath)."""
    want = {os.path.abspath(python), os.path.realpath(python)}
    for es, rec in store.known_envs():
        if rec.guarded and {os.path.abspath(rec.identity.python), rec.identity.prefix} & want:
            return es, rec
    return None


def recreate(python: str) -> list[str]:
    """Create the venv of ``python`` again when it is gone and the store knows it as guarded;
    returns what was done ([] when nothing was needed)."""
    found = None if os.path.exists(python) else known_python(python)
    if found is None:
        return []
    es, rec = found
    python = rec.identity.python
    base = _base_interpreter(es, rec)
    if base is None:
        raise TargetError(
            f"{python} is gone and the store cannot tell which interpreter created it; create "
            "the environment again, then run `dtkguard restore`"
        )
    cmd = [base, "-m", "venv", "--without-pip", rec.identity.prefix]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 or not os.path.exists(python):
        raise TargetError(f"cannot create {rec.identity.prefix} again: {proc.stderr.strip()}")
    from dtkguard.env import protected_copy

    cfg = os.path.join(rec.identity.prefix, "pyvenv.cfg")
    protected_copy.repair(es, [cfg])
    return [f"created {rec.identity.prefix} again with {base} (`python -m venv`)"]


def _base_interpreter(es: store.EnvStore, rec: store.Record) -> str | None:
    """The interpreter a venv was made with: ``home`` of its recorded ``pyvenv.cfg``, else the
    realpath of its interpreter."""
    from dtkguard.env import protected_copy

    cfg = protected_copy.load(es).get(os.path.join(rec.identity.prefix, "pyvenv.cfg"))
    if cfg and cfg.get("kind") == "file":
        try:
            text = (es.blobs / cfg["sha256"]).read_text(encoding="utf-8")
        except OSError:
            text = ""
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home":
                exe = Path(value.strip()) / f"python{rec.identity.version}"
                if exe.exists():
                    return str(exe)
    real = rec.identity.python_real
    return real if real and os.path.exists(real) else None


#: what the tools that create an env put in it (``venv``: pip, and setuptools before Python
#: 3.12; ``virtualenv``: pip, setuptools, wheel; ``uv venv --seed``: the same)
SEEDS = ("pip", "setuptools", "wheel")


def seeded_by_recreation(interp: Interpreter) -> set[str]:
    """The `SEEDS` (canonical names) when the store knows ``interp``'s env as guarded and it
    was created again since (``venv --clear``, ``virtualenv --clear``): those came with the
    re-creation, not by anyone's choice, so removing them loses nothing. Empty otherwise.
    Call it before anything takes the env's identity as it is now (`repair`, the journal)."""
    es = store.env_store(interp.prefix)
    try:
        rec = es.record()
    except DtkguardError:
        return set()
    if rec is None or not rec.guarded:
        return set()
    if not rec.identity.differences(store.identity_now(rec.identity, interp.version)):
        return set()
    return set(SEEDS)


def repair(interp: Interpreter) -> list[str]:
    """Steps 2 to 4 of the module docstring for a guarded env; returns one line per repair."""
    from dtkguard.env import protected_copy

    es = store.env_store(interp.prefix)
    rec = es.record()
    if rec is None or not rec.guarded:
        return []
    lines = _drop_foreign_pip(interp, set(protected_copy.load(es)))
    done = protected_copy.repair(es)
    restored = [path for path, what in done if what == "restored"]
    if restored:
        shown = ", ".join(os.path.relpath(p, interp.prefix) for p in restored[:4])
        more = f" and {len(restored) - 4} more" if len(restored) > 4 else ""
        lines.append(f"{len(restored)} protected file(s) from the store's copy: {shown}{more}")
    lines += [f"{path}: {what}" for path, what in done if what != "restored"]
    lines += _drop_foreign_state(interp, es)
    lines += _layers(interp, es)
    store.record_env(interp)
    return lines


def _drop_foreign_state(interp: Interpreter, es: store.EnvStore) -> list[str]:
    """Remove a baseline or manifest from the env's state folder: the guard keeps them in the
    store only, so one there now was written by someone else, and the pip hook would judge
    vendor wheels by it (a forged one refuses the restore's own reinstall)."""

    try:
        listed = set(read_json(es.manifest, what="manifest")["files"])
    except (OSError, ValueError, KeyError, TypeError):
        listed = set()
    out = []
    for name in (store_path.BASELINE_FILE, store_path.MANIFEST_FILE):
        path = interp.state_dir / name
        if os.path.lexists(path) and str(path) not in listed:
            os.unlink(path)
            out.append(f"{path}: removed (the guard keeps it in the store only)")
    return out


def _drop_foreign_pip(interp: Interpreter, protected: set[str]) -> list[str]:
    """Uninstall (by its RECORD) a pip that is not the one the store keeps (the bundled pip of
    a re-created venv): the store's pip comes back whole instead of mixed with it."""
    import shutil

    from dtkguard.records import rows_of

    out = []
    for info in sorted(interp.purelib.glob("pip-*.dist-info")):
        if str(info / "RECORD") in protected or not protected:
            continue
        try:
            text = (info / "RECORD").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for row in rows_of(text):
            path = os.path.normpath(interp.purelib / row[0]) if row else ""
            if path and path not in protected and os.path.isfile(path):
                os.unlink(path)
        shutil.rmtree(info, ignore_errors=True)
        out.append(f"{info.name}: removed (not the pip the store keeps)")
    return out


def _layers(interp: Interpreter, es: store.EnvStore) -> list[str]:
    """Write the guard's layers again from the store's policy copy when one is not present."""
    from dtkguard.guard import layers
    from dtkguard.guard.hook_policy import read_policy_json

    policy = read_policy_json(es.policy)
    if policy is None:
        return [f"the guard's layers: the store has no policy copy ({es.policy})"]
    rows = layers.status(interp, policy)
    if all(state == "present" for name, _, state in rows if name != "baseline"):
        return []
    return _install(interp, es, policy)


def _install(
    interp: Interpreter, es: store.EnvStore, policy: CompiledPolicy, lock: Lock | None = None
) -> list[str]:
    """`guard install` again with the options the store's manifest recorded (``lock``: the
    baseline is recorded, with the lock; else the store's baseline is kept)."""

    from dtkguard.guard import layers

    try:
        options = read_json(es.manifest, what="manifest").get("options", {})
    except (OSError, ValueError, AttributeError):
        options = {}
    uv = options.get("uv_config")
    try:
        done = layers.install(
            interp,
            policy,
            uv_config=Path(uv) if uv else None,
            externally_managed=bool(options.get("externally_managed")),
            uv_shim_too=bool(options.get("uv_shim")),
            lock=lock,
            record_baseline=lock is not None,
        )
    except DtkguardError as exc:
        return [f"the guard's layers: {exc.line()}"]
    return [f"{path}: {what} ({layer})" for layer, path, what in done if what == "written"]


def baseline_from_lock(interp: Interpreter, lock_path: str) -> list[str]:
    """After `restore --to LOCK` matched a guarded env to the lock (every wheel it installed
    checked against the lock's hashes, every vendor build against its RECORD): a guard whose
    store never recorded a baseline (none in the store's manifest) records this state as its
    baseline, with the lock, as `guard install --lock` would. A baseline the manifest lists
    (present, deleted or changed) is never replaced here: that takes `guard install
    --rebaseline`. Returns one line per file written ([] when nothing was to do)."""

    from dtkguard.env.baseline import baseline_path
    from dtkguard.guard.hook_policy import read_policy_json
    from dtkguard.lock.read import read_lock

    es = store.env_store(interp.prefix)
    rec = es.record()
    if rec is None or not rec.guarded:
        return []
    bpath = baseline_path(interp.prefix)
    try:
        listed = str(bpath) in read_json(es.manifest, what="manifest")["files"]
    except (OSError, ValueError, KeyError, TypeError):
        listed = False
    if listed or bpath.exists():
        return []
    policy = read_policy_json(es.policy)
    if policy is None:
        return [f"the baseline: the store has no policy copy ({es.policy})"]
    try:
        lock = read_lock(lock_path)
    except DtkguardError as exc:
        return [f"the baseline: {exc.line()}"]
    return _install(interp, es, policy, lock)
