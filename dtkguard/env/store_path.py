"""Where the guard's store and an env's folder in it are, as text (`dtkguard.env.store` makes
its `Path` objects from these): dtkuv's and dtkpip's satisfied answer reads the env's policy
from there without importing pathlib."""

from __future__ import annotations

import os

from dtkguard import sitefacts
from dtkguard.util.purepath import home, pure_path
from dtkguard.util.sha import sha256_hex

#: the variable that names another store (tests give every test its own)
STORE_VAR = "DTKGUARD_STORE"
ROOT_STORE_TEXT = "/var/lib/dtkguard"
ENVS_DIR = "envs"
#: the names of an env's files in its store folder (`EnvStore.text`) and, before the store or
#: in an image, in ``<prefix>/dtkguard/``; those the code inside pip reads too are its names
RECORD_FILE = "env.json"
BASELINE_FILE = sitefacts.BASELINE_FILE
MANIFEST_FILE = "manifest.json"
POLICY_FILE = "policy.json"
JOURNAL_DIR = "journal"
OVERRIDES_FILE = "overrides.jsonl"  # the hook's override log (`dtkguard.pipoverride.LOG`)
PROTECTED_FILE = "protected.json"
STAT_CACHE_FILE = "stat-cache.json"
LAYER_STAT_CACHE_FILE = "layer-stat-cache.json"
#: the read-only pointer inside the env's state folder (``<prefix>/dtkguard/``)
POINTER_FILE = sitefacts.POINTER_FILE
#: what an env's folder name keeps of its prefix's last part (anything else is ``_``)
_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def store_root_text() -> str:
    """Where the store is (not created): ``$DTKGUARD_STORE``, ``/var/lib/dtkguard`` for root,
    else ``$XDG_STATE_HOME/dtkguard`` (default ``~/.local/state/dtkguard``)."""
    named = os.environ.get(STORE_VAR, "").strip()
    if named:
        return pure_path(os.path.abspath(os.path.expanduser(named)))
    if os.geteuid() == 0:
        return ROOT_STORE_TEXT
    state = os.environ.get("XDG_STATE_HOME") or pure_path(os.path.join(home(), ".local", "state"))
    return pure_path(os.path.join(pure_path(os.path.abspath(state)), "dtkguard"))


def env_key(prefix: str | os.PathLike[str]) -> str:
    """The folder name of an env: its prefix's last part and a digest of its realpath."""
    real = os.path.realpath(prefix)
    digest = sha256_hex(real.encode("utf-8", "surrogateescape"))[:16]
    base = os.path.basename(real.rstrip("/")) or "root"
    name = ""  # re.sub(r"[^A-Za-z0-9._-]+", "_", base)
    replaced = False
    for char in base:
        if char in _KEPT:
            name += char
        elif not replaced:
            name += "_"
        replaced = char not in _KEPT
    return f"{name[:40]}-{digest}"


def env_dir_text(prefix: str | os.PathLike[str]) -> str:
    """``str(env_store(prefix).dir)``: the env's folder in the store."""
    return os.path.join(store_root_text(), ENVS_DIR, env_key(prefix))
