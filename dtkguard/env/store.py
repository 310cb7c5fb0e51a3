"""The guard's store: the trusted state of every guarded environment, kept outside it.

Whoever can write an environment can also rewrite whatever the guard keeps inside it, so the
reference copies live in a folder the guard owns elsewhere:

* ``$DTKGUARD_STORE`` when set; else ``/var/lib/dtkguard`` when run as root (euid 0); else
  ``$XDG_STATE_HOME/dtkguard`` (default ``~/.local/state/dtkguard``). Created mode 0700.
* One folder per environment, ``envs/<name>-<key>/``, keyed by the realpath of the env's prefix
  (`env_key`), so that an env re-created at the same place (``python -m venv --clear``,
  ``uv venv --clear``) finds its folder again; ``env.json`` in it (`Record`) holds the identity
  the env had when it was recorded: the prefix, the interpreter, its version, the inode of its
  site-packages and the install roots (site-packages, scripts). An identity that differs now is
  an env that was replaced.
* The folder holds the baseline, the compiled policy, the guard's manifest, the vault
  (content-addressed wheels), the journal, the override log, the tripwire snapshot, the digests
  of the protected files (``protected.json``) and their copies (``blobs/<sha256>``).

The environment keeps the hook, its caches (policy, tripwire snapshot: what the hook and the
tripwire read at start-up) and a read-only pointer, ``<prefix>/dtkguard/store.json``, naming its
folder here. Nothing inside the env is trusted: `check` and `restore` read the store.
"""

from __future__ import annotations

import contextlib
import os
import time

from dtkguard.env.store_path import (
    BASELINE_FILE,
    ENVS_DIR,
    JOURNAL_DIR,
    LAYER_STAT_CACHE_FILE,
    MANIFEST_FILE,
    OVERRIDES_FILE,
    POINTER_FILE,
    POLICY_FILE,
    PROTECTED_FILE,
    RECORD_FILE,
    ROOT_STORE_TEXT,
    STAT_CACHE_FILE,
    STORE_VAR,
    env_key,
    store_root_text,
)
from dtkguard.errors import InputError
from dtkguard.lightclass import asdict, field, fields, record
from dtkguard.util.atomic import atomic_write_text
from dtkguard.util.text import dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from dtkguard.env.interpreter import Interpreter
    from dtkguard.env.json_shapes import RecordDict
    from dtkguard.util.json_types import JSON

FORMAT = "dtkguard-store/1"
POINTER_FORMAT = "dtkguard-store-pointer/1"
MODE = 0o700


def __getattr__(name: str) -> object:
    if name == "ROOT_STORE":  # a Path, made when asked for (pathlib is not imported else)
        from pathlib import Path

        return Path(ROOT_STORE_TEXT)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def store_root() -> Path:
    """Where the store is (not created): ``$DTKGUARD_STORE``, ``/var/lib/dtkguard`` for root,
    else ``$XDG_STATE_HOME/dtkguard`` (default ``~/.local/state/dtkguard``)."""
    from pathlib import Path

    return Path(store_root_text())


def ensure_dir(path: Path) -> Path:
    """Create ``path`` (and its parents) mode 0700; an existing folder of ours is set to 0700."""
    path.mkdir(mode=MODE, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        if path.stat().st_uid == os.geteuid() and path.stat().st_mode & 0o077:
            os.chmod(path, MODE)
    return path


@record(frozen=True)
class Identity:
    """What makes an env the one that was guarded (see `differences`)."""

    #: realpath of the env's prefix
    prefix: str
    #: the interpreter as given to `guard install`, and its realpath
    python: str
    python_real: str
    #: ``major.minor``
    version: str
    #: realpath of site-packages (purelib) and its (st_dev, st_ino)
    purelib: str
    site_dev: int
    site_ino: int
    #: realpaths of the install roots a transaction covers (purelib, platlib, scripts)
    roots: list[str] = field(default_factory=list)
    #: the interpreter file as given (``bin/python``, a symlink in a venv): ``ino`` or, for a
    #: symlink, ``ino:ctime_ns`` (re-creating the env makes a new one; a freed inode number
    #: can come back, a ctime cannot be set back)
    python_file: str = ""
    #: ``<prefix>/pyvenv.cfg`` as ``ino:ctime_ns`` ("" when there is none): written again by
    #: every ``venv --clear``, ``virtualenv --clear``, ``uv venv --clear``
    cfg: str = ""

    def differences(self, now: Identity) -> list[str]:
        """What changed from this (recorded) identity to ``now``, in words; [] when none."""
        out = []
        if not now.python_real:
            out.append(f"the interpreter {now.python} is gone")
        elif self.python_real != now.python_real or self.version != now.version:
            out.append(
                f"the interpreter is {now.python_real} (Python {now.version}), "
                f"not {self.python_real} (Python {self.version})"
            )
        if self.purelib != now.purelib:
            out.append(f"site-packages is {now.purelib}, not {self.purelib}")
        elif (self.site_dev, self.site_ino) != (now.site_dev, now.site_ino):
            out.append(f"{now.purelib} is a new folder (inode {now.site_ino}, was {self.site_ino})")
        if self.python_file and self.python_file != now.python_file:
            out.append(f"{now.python} is a new file (the env was created again)")
        if self.cfg and self.cfg != now.cfg:
            gone = not now.cfg
            out.append(f"{now.prefix}/pyvenv.cfg was {'removed' if gone else 'written again'}")
        return out

    def stat_only(self, now: Identity) -> bool:
        """Do this identity and ``now`` differ only by inode numbers and ctimes? A copy of the
        env (an image layer, overlayfs, ``cp -a``, ``docker commit``) gives every folder and
        file new ones with the same paths, interpreter and contents."""
        same_paths = bool(now.python_real) and (self.python_real, self.version, self.purelib) == (
            now.python_real,
            now.version,
            now.purelib,
        )
        kept = (not self.python_file or bool(now.python_file)) and (not self.cfg or bool(now.cfg))
        return same_paths and kept


def _file_mark(path: str | os.PathLike[str]) -> str:
    """``ino:ctime_ns`` of ``path`` itself (not what a symlink names); "" when there is none."""
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    return f"{st.st_ino}:{st.st_ctime_ns}"


def _roots(interp: Interpreter) -> list[str]:
    out: list[str] = []
    for path in (
        interp.purelib,
        interp.platlib or interp.purelib,
        interp.scripts or interp.prefix / "bin",
    ):
        real = os.path.realpath(path)
        if real not in out:
            out.append(real)
    return out


def current_identity(interp: Interpreter) -> Identity:
    """The identity of ``interp``'s env as it is now (a missing site-packages: inode 0)."""
    purelib = os.path.realpath(interp.purelib)
    try:
        st = os.stat(purelib)
        dev, ino = st.st_dev, st.st_ino
    except OSError:
        dev = ino = 0
    return Identity(
        prefix=os.path.realpath(interp.prefix),
        python=str(interp.python),
        python_real=os.path.realpath(interp.python),
        version=interp.version,
        purelib=purelib,
        site_dev=dev,
        site_ino=ino,
        roots=_roots(interp),
        python_file=_python_mark(interp.python),
        cfg=_file_mark(interp.prefix / "pyvenv.cfg"),
    )


def identity_now(recorded: Identity, version: str | None = None) -> Identity:
    """The recorded identity's paths as they are now, without asking the interpreter (``check``
    reads the env as files): its realpath, the inode of site-packages, the interpreter file and
    ``pyvenv.cfg`` (``version``: the interpreter's, when the caller knows it)."""
    try:
        st = os.stat(recorded.purelib)
        dev, ino = st.st_dev, st.st_ino
    except OSError:
        dev = ino = 0
    python = recorded.python
    return Identity(
        prefix=recorded.prefix,
        python=python,
        python_real=os.path.realpath(python) if os.path.lexists(python) else "",
        version=version or recorded.version,
        purelib=recorded.purelib,
        site_dev=dev,
        site_ino=ino,
        roots=recorded.roots,
        python_file=_python_mark(python),
        cfg=_file_mark(os.path.join(recorded.prefix, "pyvenv.cfg")),
    )


def _python_mark(python: str | os.PathLike[str]) -> str:
    """`_file_mark` of a symlink; of a regular interpreter file its inode only (it may lie in
    the scripts folder, which the journal hard-links)."""
    mark = _file_mark(python)
    return mark if os.path.islink(python) else mark.partition(":")[0]


@record(frozen=True)
class EnvStore:
    """One env's folder in the store, and the paths of what it holds (nothing is created);
    each path is also had as text, without importing pathlib (`text`)."""

    #: the folder, as text (``str(self.dir)``)
    top: str

    @property
    def dir(self) -> Path:
        from pathlib import Path

        return Path(self.top)

    def text(self, name: str) -> str:
        """``str(self.dir / name)`` of a file name such as ``"baseline.json"``."""
        return os.path.join(self.top, name)

    @property
    def record_file(self) -> Path:
        return self.dir / RECORD_FILE

    @property
    def baseline(self) -> Path:
        return self.dir / BASELINE_FILE

    @property
    def policy(self) -> Path:
        return self.dir / POLICY_FILE

    @property
    def constraints(self) -> Path:
        return self.dir / "constraints.txt"

    @property
    def manifest(self) -> Path:
        return self.dir / MANIFEST_FILE

    @property
    def journal(self) -> Path:
        return self.dir / JOURNAL_DIR

    @property
    def vault(self) -> Path:
        return self.dir / "vault"

    @property
    def overrides(self) -> Path:
        return self.dir / OVERRIDES_FILE

    @property
    def tripwire(self) -> Path:
        return self.dir / "tripwire.txt"

    @property
    def protected(self) -> Path:
        """``{path: {"sha256", "size", "mode"}}`` of the env's protected files."""
        return self.dir / PROTECTED_FILE

    @property
    def stat_cache(self) -> Path:
        """``{path: [ino, ctime_ns, sha256]}`` of files a hash found equal to the baseline
        since it was recorded (`dtkguard.env.baseline.CompareStats.seen`)."""
        return self.dir / STAT_CACHE_FILE

    @property
    def layer_stat_cache(self) -> Path:
        """``{path: [ino, ctime_ns, size, sha256]}`` of the guard's layers in the env that a
        hash found equal to the manifest (`dtkguard.rules.guard_store`)."""
        return self.dir / LAYER_STAT_CACHE_FILE

    @property
    def blobs(self) -> Path:
        """Content-addressed copies of the protected files: ``blobs/<sha256>``."""
        return self.dir / "blobs"

    @property
    def exists(self) -> bool:
        from dtkguard.util.purepath import is_file

        return is_file(self.text(RECORD_FILE))

    def record(self) -> Record | None:
        """The env's record; None when there is none; `InputError` when it is unreadable."""
        return read_record(self.text(RECORD_FILE))

    def create(self) -> EnvStore:
        """Create the folder (mode 0700, the store's root too)."""
        ensure_dir(self.dir.parent.parent)
        ensure_dir(self.dir.parent)
        ensure_dir(self.dir)
        return self


@record
class Record:
    """``env.json``: the env's identity when it was recorded, and whether it is guarded."""

    identity: Identity
    #: `guard install` guards it (False: only journalled, or `guard remove`d)
    guarded: bool = False
    created: str = ""
    updated: str = ""

    def to_json(self) -> RecordDict:
        return {
            "format": FORMAT,
            "identity": asdict(self.identity),
            "guarded": self.guarded,
            "created": self.created,
            "updated": self.updated,
        }


def read_record(path: str | os.PathLike[str]) -> Record | None:
    from dtkguard.util.safe_read import read_json

    try:
        data = read_json(path, what="store record")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable store record: {exc}", file=str(path)) from None
    try:
        if data.get("format") != FORMAT:
            raise ValueError(f"format is not {FORMAT}")
        ident = data["identity"]
        identity = Identity(**{f.name: ident[f.name] for f in fields(Identity) if f.name in ident})
        return Record(
            identity, bool(data.get("guarded")), str(data["created"]), str(data["updated"])
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"not a dtkguard store record: {exc}", file=str(path)) from None


def write_record(es: EnvStore, record: Record) -> None:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    record.created = record.created or now
    record.updated = now
    es.create()
    atomic_write_text(es.record_file, dumps(record.to_json(), indent=1) + "\n", 0o600)


def env_store(prefix: str | os.PathLike[str], root: Path | None = None) -> EnvStore:
    """The folder of the env at ``prefix`` (in ``root``, default `store_root`)."""
    from dtkguard.util.purepath import join

    base = store_root_text() if root is None else os.fspath(root)
    return EnvStore(join(base, ENVS_DIR, env_key(prefix)))


def refuse_inside(interp: Interpreter, root: Path | None = None) -> None:
    """`InputError` when the store would live inside the env it guards."""
    store = os.path.realpath(root or store_root())
    prefix = os.path.realpath(interp.prefix)
    if store == prefix or store.startswith(prefix.rstrip("/") + "/"):
        raise InputError(
            f"the store {store} is inside the environment {prefix}: whoever writes the env "
            f"could rewrite it; set {STORE_VAR} to a folder outside it",
            field=STORE_VAR,
        )


def record_env(interp: Interpreter, *, guarded: bool | None = None) -> tuple[EnvStore, Record]:
    """Create or update the env's record with its identity now (``guarded``: None keeps it)."""
    refuse_inside(interp)
    es = env_store(interp.prefix)
    old = es.record()
    rec = Record(current_identity(interp), bool(old and old.guarded), old.created if old else "")
    if guarded is not None:
        rec.guarded = guarded
    write_record(es, rec)
    return es, rec


def known_envs(root: Path | None = None) -> list[tuple[EnvStore, Record]]:
    """Every env the store has a readable record of, by prefix."""
    from dtkguard.util.purepath import join

    base = join(store_root_text() if root is None else os.fspath(root), ENVS_DIR)
    out: list[tuple[EnvStore, Record]] = []
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return out
    for name in names:
        es = EnvStore(join(base, name))
        with contextlib.suppress(InputError):
            rec = es.record()
            if rec is not None:
                out.append((es, rec))
    return sorted(out, key=lambda item: item[1].identity.prefix)


def overrides_log(interp: Interpreter) -> Path:
    """The override log of ``interp``'s env: in its store folder, digest-chained."""
    return env_store(interp.prefix).overrides


def pointer_path(prefix: str | os.PathLike[str]) -> Path:
    """``<prefix>/dtkguard/store.json``: where the env says its store folder is."""
    from pathlib import Path

    from dtkguard.env.interpreter import STATE_DIR

    return Path(prefix) / STATE_DIR / POINTER_FILE


def pointer_text(es: EnvStore) -> str:
    """The pointer's content: informative only (the store never trusts it)."""
    data = {"format": POINTER_FORMAT, "store": es.top}
    return dumps(data, indent=1) + "\n"


def load_stat_cache(path: str | os.PathLike[str]) -> dict[str, list[JSON]]:
    """The stat cache at ``path`` (see `EnvStore.stat_cache`); {} when absent or unreadable."""
    from dtkguard.util.safe_read import read_json

    try:
        data = read_json(path, what="stat cache")
    except (OSError, ValueError):
        return {}
    return (
        {str(k): v for k, v in data.items() if isinstance(v, list)}
        if isinstance(data, dict)
        else {}
    )


def save_stat_cache(path: str | os.PathLike[str], entries: dict[str, list[JSON]]) -> None:
    """Best effort: a store that cannot be written only means hashing again next time."""
    with contextlib.suppress(OSError):
        atomic_write_text(path, dumps(entries, sort_keys=True) + "\n", 0o600, durable=False)
