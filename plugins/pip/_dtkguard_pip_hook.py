"""dtkguard's guard inside pip: veto installs and uninstalls that would clobber vendor builds.

Installed by ``dtkguard guard install`` as this module, a copy of ``dtkguard/decision.py``
beside it (``_dtkguard_decision.py``, the one place that decides), copies of ``protected.py``,
``records.py`` (RECORD rows, a wheel's layout) and ``elf.py``, and a one-line ``.pth`` file
in the target's site-packages. Standard library only. At interpreter start the ``.pth`` line
only imports the start-up finder ``_dtkguard_finder`` (this module is not even imported); the
guard wakes up when pip imports ``pip._internal.commands.install`` or
``pip._internal.req.req_uninstall`` and then wraps:

* ``install_given_reqs`` (as bound in the install command module and in ``pip._internal.req``):
  the set pip is about to install, judged by *where its files land*: pip's own ``get_scheme``
  for the merged ``--prefix``/``--root``/``--target``/``--user`` values (options, ``PIP_*``
  variables and config alike). An install whose destination touches a directory of this
  interpreter is judged by name and version and by the files of every wheel (vendor-owned
  files, the guard's own files, start-up code); an install elsewhere is judged by what pip
  would remove from this interpreter (pip uninstalls the env's copy whatever the destination);
* ``InstallCommand.run``: learns the real ``--target`` directory, arms the build journal,
  explains a resolution that failed on the guard's constraints in dtkguard's words, and answers
  dtkpip's one-run channel (``CHANNEL``: the real run, paused for dtkpip's verdict);
* ``WheelCommand.run``, ``DownloadCommand.run``: the same build journal around their builds;
* ``UninstallPathSet.from_dist``: every removal; a vendor build may only be removed while the
  exact same build replaces it, and no removal may delete files of a vendor build.

If pip lacks one of these internals, or the policy or a copy (decision, protected set,
RECORD module) cannot be read, every install and uninstall is refused (fail closed).
``DTKGUARD_OVERRIDE="reason"`` lets an install through and records it in ``overrides.jsonl``
beside the policy.
"""

import contextlib
import sys

_MODULES = (
    "pip._internal.commands.install",
    "pip._internal.commands.wheel",
    "pip._internal.commands.download",
    "pip._internal.req.req_uninstall",
)
DECISION = "_dtkguard_decision.py"
#: the copy of ``dtkguard/elf.py`` beside this module: what a wheel's native code links
ELF = "_dtkguard_elf.py"
PROTECTED = "_dtkguard_protected.py"
#: the copy of ``dtkguard/records.py`` beside this module: RECORD rows, wheel layout
RECORDS = "_dtkguard_records.py"
PTH = "dtkguard-pip-hook.pth"
#: dtkpip's one pip run: ``"W,R"``, the descriptors of two pipes (`_dtkpip_attach`)
CHANNEL = "DTKGUARD_DTKPIP_CHANNEL"
_state = {
    "policy_path": None,
    "policy": None,
    "error": None,
    "allowed": set(),
    "target_dir": None,
    "decision": None,
    "owners": None,
    "token": None,
    "replacing": {},
    "removed": set(),
    "snapshot": None,
}


def find_spec(fullname, path, target, policy_path):
    """Called by the .pth line's finder for the two pip modules only: pip's own spec, with a
    loader that patches the module once pip's code has run."""
    _state["policy_path"] = policy_path
    if fullname not in _MODULES:
        return None
    for finder in sys.meta_path:
        if getattr(finder, "_dtkguard", 0) or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(fullname, path, target)
        if spec is not None:
            break
    else:
        return None
    if spec.loader is not None and hasattr(spec.loader, "exec_module"):
        spec.loader = _Loader(spec.loader, fullname)
    return spec


class _Loader:
    """Delegates to pip's own loader, then patches the freshly executed module."""

    def __init__(self, loader, fullname):
        self._loader = loader
        self._fullname = fullname

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            _prepare()
            if self._fullname == _MODULES[0]:
                _patch_install(module)
            elif self._fullname == _MODULES[-1]:
                _patch_uninstall(module)
            else:
                _patch_build_only(module)
        except Exception as exc:  # never break pip's import; fail closed at install time
            _changed(f"the dtkguard hook could not attach to pip: {exc!r}")


def _changed(text):
    """Remember why the guard cannot judge (the first reason wins)."""
    if _state["error"] is None:
        _state["error"] = text


def _lacks(*names):
    """pip lacks internals the guard wraps: say which, all of them."""
    import pip

    missing = _state.setdefault("missing", [])
    missing += [n for n in names if n not in missing]
    text = f"pip {getattr(pip, '__version__', '?')} lacks what the guard wraps"
    if _state["error"] is None or _state["error"].startswith(text):
        _state["error"] = f"{text} ({', '.join(missing)})"


# -- start-up of the guard inside pip ------------------------------------------------------


def _prepare():
    """Import now everything the guard needs later: pip 26.x blocks imports during install."""
    import base64  # noqa: F401
    import binascii  # noqa: F401
    import csv  # noqa: F401
    import fcntl  # noqa: F401
    import getpass  # noqa: F401
    import hashlib  # noqa: F401
    import inspect  # noqa: F401
    import json  # noqa: F401
    import os  # noqa: F401
    import site  # noqa: F401
    import stat  # noqa: F401
    import subprocess  # noqa: F401
    import sysconfig  # noqa: F401
    import time  # noqa: F401
    import zipfile  # noqa: F401
    import zlib  # noqa: F401

    import pip._internal.exceptions
    import pip._internal.locations

    with contextlib.suppress(Exception):  # the PEP 508 parser of vendor-deps-broken
        import pip._vendor.packaging.markers
        import pip._vendor.packaging.requirements
        import pip._vendor.packaging.specifiers  # noqa: F401
    _load_decision()
    _load_protected()
    _load_records()
    _load_elf()
    _load_policy()
    _roots()


def _here():
    import os

    return os.path.dirname(os.path.realpath(__file__))


def _load_copy(filename, entry, what):
    """A stdlib module of dtkguard's copied beside this one, loaded by path (pip's build
    environments take site-packages off ``sys.path``); None (and fail closed) if broken."""
    import importlib.util
    import os

    path = os.path.join(_here(), filename)
    unsafe = _untrusted(path, folder=False)  # site-packages: shared group envs are common
    if unsafe:
        _changed(f"the guard's module {path} cannot be trusted: {unsafe}")
        return None
    try:
        spec = importlib.util.spec_from_file_location(filename[:-3], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        getattr(module, entry)  # the entry point must exist
    except Exception as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else repr(exc)
        _changed(f"the guard's {what} {path} is missing or broken ({why})")
        return None
    return module


#: the guard's JSON files the hook reads (policy, baseline, manifest): the baseline's limit
MAX_STATE = 64 << 20


def _read_json(path):
    """A state file as JSON: a regular file only, opened non-blocking (a FIFO there must not
    hang pip), at most `MAX_STATE` bytes, nesting refused as `ValueError` (never a
    RecursionError): `OSError` or `ValueError` when it cannot be read."""
    import json
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_size > MAX_STATE:
            raise ValueError(f"over {MAX_STATE >> 20} MiB")
        data = fh.read(MAX_STATE + 1)
    if len(data) > MAX_STATE:
        raise ValueError(f"over {MAX_STATE >> 20} MiB")
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _untrusted(path, folder=True):
    """Why ``path`` (or, with ``folder``, its folder) could have been written by someone other
    than the environment's owner or root (`dtkguard.util.trust.untrusted`); None if not."""
    import os
    import stat

    try:
        owner = os.stat(sys.prefix).st_uid
    except OSError:
        owner = 0
    for each in (path, os.path.dirname(path)) if folder else (path,):
        try:
            st = os.lstat(each)
        except OSError:
            continue
        if st.st_uid not in (owner, 0):
            return f"{each} is owned by uid {st.st_uid}, not the environment's owner"
        sticky = stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX
        if st.st_mode & 0o020 or (st.st_mode & 0o002 and not sticky):
            return f"{each} is writable by others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _load_decision():
    """The copy of ``dtkguard/decision.py`` beside this module."""
    if _state["decision"] is None:
        _state["decision"] = _load_copy(DECISION, "decide", "decision module")
    return _state["decision"]


def _load_protected():
    """The copy of ``dtkguard/protected.py`` (the protected set) beside this module."""
    if _state.get("protected") is None:
        _state["protected"] = _load_copy(PROTECTED, "protected_paths", "protected-set module")
    return _state["protected"]


def _load_records():
    """The copy of ``dtkguard/records.py`` (RECORD rows, wheel layout) beside this module."""
    if _state.get("records") is None:
        _state["records"] = _load_copy(RECORDS, "paths_of", "RECORD module")
    return _state["records"]


def _copies_loaded():
    """Whether the copies an install or a removal is judged with (decision, protected set,
    RECORD module) are loaded; without one, the guard fails closed."""
    return all(_state.get(key) is not None for key in ("decision", "protected", "records"))


def _load_elf():
    """The copy of ``dtkguard/elf.py`` beside this module, or None: then native code is not
    judged before install, and pip says so (`check` still reads it once installed)."""
    if "elf" in _state:
        return _state["elf"]
    import importlib.util
    import os

    path = os.path.join(_here(), ELF)
    try:
        spec = importlib.util.spec_from_file_location("_dtkguard_elf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.read_member  # noqa: B018  (the entry point must exist)
    except Exception as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else repr(exc)
        _state["elf_error"] = f"the guard's ELF reader {path} is missing or broken ({why})"
        module = None
    _state["elf"] = module
    return module


def _load_policy():
    if _state["policy"] is not None or _state["error"] is not None:
        return _state["policy"]

    path = _state["policy_path"]
    unsafe = _untrusted(path)
    if unsafe:
        _changed(f"the guard policy {path} cannot be trusted: {unsafe}")
        return None
    try:
        data = _read_json(path)
        if not isinstance(data.get("vendor"), dict) or not isinstance(data.get("deny"), list):
            raise ValueError("no 'vendor' table or 'deny' list")
        _state["policy"] = data
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        _changed(f"the guard policy {path} is missing or unreadable ({why})")
    return _state["policy"]


def _real(path):
    import os

    return os.path.normpath(os.path.realpath(path)) if path else None


_DIRS = {}


def _real_in(path):
    """``path`` with its folder resolved (cached per folder) and its last part kept: where
    pip writes or deletes (pip replaces a symlink at the last part, it does not follow it)."""
    import os

    head, tail = os.path.split(os.path.normpath(path))
    real = _DIRS.get(head)
    if real is None:
        real = _DIRS[head] = _real(head)
    return os.path.join(real, tail) if tail else real


def _roots():
    """Directories of this interpreter: its site-packages (also the user site), stdlib and
    scripts, and the folder of this hook. Computed from ``sys.prefix`` (``sysconfig``), not
    ``sys.path``, which pip's build environments rewrite."""
    if "roots" in _state:
        return _state["roots"]
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    sites = [paths.get("purelib"), paths.get("platlib"), _here()]
    with contextlib.suppress(Exception):
        sites += list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        with contextlib.suppress(Exception):
            sites.append(site.getusersitepackages())
    others = [paths.get(k) for k in ("stdlib", "platstdlib", "scripts")]
    sites = sorted({_real(p) for p in sites if p})
    _state["sites"] = sites
    _state["roots"] = sorted(set(sites) | {_real(p) for p in others if p})
    return _state["roots"]


def _touches(path, roots):
    """Is ``path`` one of ``roots``, inside one, or a parent of one?"""
    if not path:
        return False
    for root in roots:
        if path == root or path.startswith(root + "/") or root.startswith(path.rstrip("/") + "/"):
            return True
    return False


# -- facts handed to the decision ----------------------------------------------------------


def _canonical(name):
    return _state["decision"].canonical(name) if _state["decision"] else (name or "").lower()


def _installed():
    """{canonical name: (version, metadata folder)} of the dists in this interpreter's sites
    (``.dist-info`` first, then ``.egg-info``)."""
    import os

    out = {}
    for suffix in (".dist-info", ".egg-info"):
        for site in _state.get("sites") or ():
            try:
                names = sorted(os.listdir(site))
            except OSError:
                continue
            for entry in names:
                if entry.endswith(suffix):
                    name, _, version = entry[: -len(suffix)].partition("-")
                    version = version.split("-py", 1)[0]
                    out.setdefault(_canonical(name), (version, os.path.join(site, entry)))
    return out


def _record_rows(info):
    """The paths of the RECORD in the dist-info ``info``, relative to its site folder."""
    import os

    try:
        with open(os.path.join(info, "RECORD"), encoding="utf-8", newline="") as fh:
            return _state["records"].paths_of(fh.read())
    except OSError:
        return []


def _vendor_rows(policy):
    """{vendor name: (site folder, [RECORD paths relative to it])} of the vendor builds."""
    if "vendor_rows" not in _state:
        import os

        _state["vendor_rows"] = {
            key: (os.path.dirname(info), _record_rows(info))
            for key, (_, info) in _installed().items()
            if key in policy["vendor"] and info.endswith(".dist-info")
        }
    return _state["vendor_rows"]


def _vendor_files(policy):
    """{vendor name: the absolute files of its RECORD}: the site folder is resolved already,
    so plain joins (``..`` rows normalised) are the files pip would remove."""
    import os

    out = {}
    for key, (site, rows) in _vendor_rows(policy).items():
        out[key] = [
            os.path.normpath(f"{site}/{r}") if ".." in r or "./" in r else f"{site}/{r}"
            for r in rows
        ]
    return out


def _vendor_tops(policy):
    """{vendor name: its site-level entries (and their ``__pycache__`` files)}: all the
    decision needs to know which import names a vendor build provides."""
    out = {}
    for key, (site, rows) in _vendor_rows(policy).items():
        tops = set()
        for rel in rows:
            first, _, rest = rel.partition("/")
            if first == "__pycache__":
                first += "/" + rest.split("/", 1)[0]
            tops.add(f"{site}/{first}")
        out[key] = sorted(tops)
    return out


def _facts(policy):
    """The decision's `env_facts` of this interpreter: its resolved sites, the vendor builds'
    import packages, the protected set (``_dtkguard_protected``) and the guard's state."""
    if _state.get("facts") is not None:
        return _state["facts"]
    import sysconfig

    protected = _state["protected"]
    scripts = _real(sysconfig.get_paths().get("scripts"))
    sites = _state["sites"]
    table = _protected_table()

    def kind_of(path):
        return protected.protected_kind(path, sites, scripts, table)

    _state["facts"] = _state["decision"].env_facts(
        sites, _vendor_tops(policy), scripts, kind_of, protected.may_write, _guard_files()
    )
    return _state["facts"]


def _protected_table():
    """The protected set of this interpreter ({path: kind}), computed once."""
    if _state.get("protected_table") is None:
        import sysconfig

        paths = sysconfig.get_paths()
        _state["protected_table"] = _state["protected"].protected_paths(
            sys.prefix, _state["sites"], paths.get("scripts"), _guard_files()
        )
    return _state["protected_table"]


def _guard_files():
    """The guard's state beside the policy (a folder) and the site ``pip.conf``."""
    import os

    state = os.path.dirname(_real(_state["policy_path"]) or _here())
    return [state, os.path.join(os.path.dirname(state), "pip.conf")]


def _wheel_destinations(name, scheme, purelib):
    """Where pip writes the wheel member ``name`` under ``scheme`` (resolved), or None."""
    import os

    top, _, rest = name.partition("/")
    if top.endswith(".data") and rest:
        key, _, sub = rest.partition("/")
        base = scheme.get(key)
        return _real_in(os.path.join(base, sub)) if base and sub else None
    lib = scheme["purelib"] if purelib else scheme["platlib"]
    return _real_in(os.path.join(lib, name)) if lib else None


#: callables (zipfile, ZipInfo, destination, effect) run for each member of a judged wheel;
#: judgements of other kinds of member (shared objects, ...) plug in here
MEMBER_JUDGES = []


def _wheel_dist(zf):
    """The dist name a wheel file is of (its file name's first part)."""
    import os

    return os.path.basename(str(zf.filename or "?")).split("-", 1)[0]


def _judge_shared_member(zf, info, dest, effect):
    """A member that may be native code (a shared object, or an executable: no dot in its
    name, in a ``bin/`` or ``.data/scripts/`` folder) judged by what it links (the decision's
    ``judge_binary``), read from the wheel pip is about to unpack: stored members in place,
    compressed ones inflated only as far as needed (``_dtkguard_elf.read_member``); waived
    problems are dropped."""
    decision, elf = _state["decision"], _state.get("elf")
    native = getattr(elf, "native_name", None)
    if native is None or ".dist-info/" in info.filename or not native(info.filename):
        if native is None and info.filename.endswith(".so") and not effect.get("elf_warned"):
            effect["elf_warned"] = True
            why = _state.get("elf_error") or (
                "no ELF reader beside the hook"
                if elf is None
                else "the ELF reader beside the hook is older than it (run guard install again)"
            )
            sys.stderr.write(f"dtkguard: warning: native code not judged: {why}\n")
        return
    name = _wheel_dist(zf)
    try:
        linkage = elf.read_member(zf, info)
    except elf.NotElf:
        return
    except Exception as exc:  # ElfError, or a broken member: a warning, never a traceback
        text = f"{info.filename} of {name} could not be judged: {exc}"
        found = [decision.Problem("binary-unreadable", "medium", _canonical(name), text)]
    else:
        found = decision.judge_binary(
            _state["policy"], name, info.filename, linkage.needed, linkage.soname
        )
    today = _today()
    effect["problems"] += [p for p in found if decision.waiver(_state["policy"], p, today) is None]


MEMBER_JUDGES.append(_judge_shared_member)


def _wheel_effect(wheel, scheme):
    """What installing ``wheel`` under ``scheme`` does, from its zip listing (pip installs what
    the zip holds, not what RECORD says): {"paths": resolved destinations of every member and
    generated script, "contents": {destination: text} of start-up candidates, "members": its
    top-level import names, "problems": from ``MEMBER_JUDGES``}. The one loop over members."""
    import zipfile

    effect = {"paths": [], "contents": {}, "members": set(), "problems": []}
    with zipfile.ZipFile(wheel) as zf:
        infos = zf.infolist()
        purelib, scripts = True, []
        member = _state["records"].is_info_member
        for info in infos:
            if member(info.filename, "WHEEL"):
                text = zf.read(info).decode("utf-8", "replace").lower()
                purelib = "root-is-purelib: true" in text
            if member(info.filename, "entry_points.txt"):
                scripts = _state["decision"].console_scripts(
                    zf.read(info).decode("utf-8", "replace")
                )
        for info in infos:
            if info.filename.endswith("/"):
                continue
            dest = _wheel_destinations(info.filename, scheme, purelib)
            if dest is None:
                continue
            effect["paths"].append(dest)
            _note_member(zf, info, dest, effect)
            for judge_member in MEMBER_JUDGES:
                judge_member(zf, info, dest, effect)
    for script in scripts:
        if scheme.get("scripts"):
            effect["paths"] += _script_files(scheme["scripts"], script)
    return effect


def _script_files(scripts_dir, script):
    """The files pip generates for a console script (pip adds ``pipX``/``pipX.Y`` for pip)."""
    import os

    names = [script]
    if script in ("pip", "easy_install"):
        major, minor = sys.version_info[:2]
        names += [f"{script}{major}", f"{script}{major}.{minor}"]
    return [_real_in(os.path.join(scripts_dir, n)) for n in names]


def _note_member(zf, info, dest, effect):
    """Record the member's top-level import name and, for start-up candidates, its text."""
    import os

    for site in _state["sites"]:
        if dest.startswith(site + "/"):
            top = dest[len(site) + 1 :].split("/", 1)[0]
            name = top[:-3] if top.endswith(".py") else top
            effect["members"].add(name)
            if dest.endswith(".pth") and os.path.dirname(dest) == site:
                data = zf.read(info)[:65536]
                effect["contents"][dest] = data.decode("utf-8", "replace")
            break


def _manifest_lists(store, path):
    """Does the store's manifest list ``path`` as a layer `guard install` wrote? (True when
    the manifest cannot be read: unknown is not "never written".)"""
    import os

    try:
        files = _read_json(os.path.join(store, "manifest.json"))["files"]
        return path in files
    except (OSError, ValueError, KeyError, TypeError):
        return True


def _baseline():
    """The baseline `guard install` recorded: the store's copy (the reference) when the env
    points to a store, else the one beside the policy ({} when there is none)."""
    if "baseline" not in _state:
        import os

        here = os.path.dirname(_state["policy_path"] or ".")
        store = _store_dir()
        if store is None and os.path.lexists(os.path.join(here, "store.json")):
            _state["baseline_error"] = (
                f"the guard's store pointer {os.path.join(here, 'store.json')} names no "
                "trusted store folder"
            )
            _state["baseline"] = {}
            return _state["baseline"]
        path = os.path.join(store or here, "baseline.json")
        unsafe = _untrusted(path) if os.path.lexists(path) else None
        if unsafe:
            _state["baseline_error"] = f"the guard's baseline {path} cannot be trusted: {unsafe}"
            _state["baseline"] = {}
            return _state["baseline"]
        try:
            _state["baseline"] = _read_json(path)
            if not isinstance(_state["baseline"], dict):
                raise ValueError("not a JSON object")
        except FileNotFoundError:
            _state["baseline"] = {}
            if store is not None and _manifest_lists(store, path):
                # the store's manifest says install wrote it: gone is unknown, not clean
                _state["baseline_error"] = f"the guard's baseline {path} is absent"
        except (OSError, ValueError) as exc:
            _state["baseline_error"] = f"the guard's baseline {path} is unreadable ({exc})"
            _state["baseline"] = {}
    return _state["baseline"]


def _identity(policy, name, version, wheel):
    """A wheel with a vendor build's name and exact label must hold the vendor build's files
    (the baseline's digests): a relabelled community build is refused."""
    decision = _state["decision"]
    pin = policy["vendor"].get(_canonical(name))
    if pin is None or not decision.same_version(version, pin):
        return []
    baseline = _baseline()
    if _state.get("baseline_error"):  # unknown is not the vendor build
        text = f"{name} {version}: {_state['baseline_error']}, so it cannot be told apart from a "
        text += "relabelled build; `dtkguard guard install` records it again"
        return [decision.Problem("vendor-not-baseline", "critical", _canonical(name), text)]
    entry = (baseline.get("vendor") or {}).get(_canonical(name))
    if not entry or not decision.same_version(version, entry.get("version")):
        return []  # the baseline holds no build of that name and version
    import hashlib
    import zipfile

    digests = {}
    with zipfile.ZipFile(wheel) as zf:
        for member in zf.namelist():
            if not member.endswith("/") and decision.comparable(member):
                digests[member] = hashlib.sha256(zf.read(member)).hexdigest()
    sha = None
    locked = ((baseline.get("lock") or {}).get("packages") or {}).get(_canonical(name))
    if locked:
        with open(wheel, "rb") as fh:
            sha = hashlib.sha256(fh.read()).hexdigest()
    return decision.judge_build(baseline, name, version, digests, sha)


def _scheme(req, home, root, prefix, user):
    """pip's own destination for ``req`` as {key: real path}."""
    from pip._internal.locations import get_scheme

    name = getattr(getattr(req, "req", None), "name", None) or req.name or ""
    scheme = get_scheme(
        name,
        user=bool(user),
        home=home,
        root=root,
        isolated=bool(getattr(req, "isolated", False)),
        prefix=prefix,
    )
    keys = ("purelib", "platlib", "headers", "scripts", "data")
    out = {k: _real(getattr(scheme, k)) for k in keys}
    target = _state["target_dir"]
    if home is not None:  # --target: pip moves what lands in the temporary home into target
        bases = (out["purelib"], out["platlib"], _real(home))
        target = _real(target) if target else None
        for key, path in list(out.items()):
            for base in bases:
                if target and (path == base or path.startswith(base + "/")):
                    out[key] = target + path[len(base) :]
                    break
            else:
                if not target:
                    out[key] = None  # an unknown target: judged as if it were this interpreter
    return out


def _req_version(req):
    try:
        return str(req.metadata["Version"])
    except Exception:
        pass
    dist = getattr(req, "satisfied_by", None)
    return str(getattr(dist, "version", "")) or None


# -- the verdict ---------------------------------------------------------------------------


def _error(kind, text):
    from pip._internal import exceptions

    return getattr(exceptions, kind, exceptions.InstallationError)(text)


def _footer(policy, names):
    explain = names[0] if names else "torch"
    return (
        f"\ndtkguard: this environment is guarded by policy {policy.get('name', '?')}. "
        f"Plan it with `dtkpip install ...` to see what would happen and what to use instead; "
        f"`dtkguard policy explain {explain}` shows the rule. "
        f'Override (recorded): DTKGUARD_OVERRIDE="reason" pip ...'
    )


def _fail_closed(kind="InstallationError"):
    return _error(
        kind,
        f"dtkguard: {_state['error']}; refusing to change this environment. Reinstall the guard "
        "with `dtkguard guard install` (or remove it with `dtkguard guard remove`).",
    )


def _override():
    import os

    return os.environ.get("DTKGUARD_OVERRIDE", "").strip()


def _token_recorded():
    """True once when dtkpip recorded this override itself: its one-time token file exists
    (it is consumed here) and the record in ``overrides.jsonl`` carries the same token."""
    import json
    import os

    if _state["token"] is not None:
        return _state["token"]
    _state["token"] = False
    token = os.environ.get("DTKGUARD_OVERRIDE_TOKEN", "").strip()
    if not token or not token.isalnum():
        return False
    state = _override_dir()
    try:
        os.unlink(os.path.join(state, f"override-{token}.token"))
    except OSError:
        return False  # forged, or used already: record again
    try:
        with open(os.path.join(state, "overrides.jsonl"), encoding="utf-8") as fh:
            for line in fh:
                if token in line and json.loads(line).get("token") == token:
                    _state["token"] = True
                    break
    except (OSError, ValueError):
        pass
    return _state["token"]


def _override_dir():
    """Where the override log is: the guard's store folder the env's pointer (``store.json``
    beside the policy) names when this user may write it, else the folder of the policy."""
    import json
    import os

    here = os.path.dirname(_state["policy_path"] or ".")
    try:
        with open(os.path.join(here, "store.json"), encoding="utf-8") as fh:
            store = json.load(fh).get("store")
        if isinstance(store, str) and os.path.isdir(store) and os.access(store, os.W_OK):
            return store
    except (OSError, ValueError, AttributeError):
        pass
    return here


def _chain_append(path, entry):
    """Append ``entry`` to the digest-chained log ``path`` (`dtkguard.env.chain`'s format:
    ``prev`` is the sha256 of the previous line; ``<log>.head`` holds the count and the last
    line's digest)."""
    import fcntl
    import hashlib
    import json
    import os

    private = os.O_CREAT  # with mode 0o600: the store's files are the owner's, whatever the umask
    with os.fdopen(os.open(path + ".lock", os.O_RDWR | private, 0o600), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path, encoding="utf-8") as fh:
                lines = [ln for ln in fh.read().splitlines() if ln.strip()]
        except FileNotFoundError:
            lines = []
        prev = (
            hashlib.sha256(lines[-1].encode("utf-8", "surrogateescape")).hexdigest()
            if lines
            else ""
        )
        line = json.dumps({**entry, "prev": prev}, sort_keys=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | private, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
        tmp = f"{path}.head.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | private, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            last = hashlib.sha256(line.encode("utf-8", "surrogateescape")).hexdigest()
            fh.write(f"{len(lines) + 1} {last}\n")
        os.replace(tmp, path + ".head")


def _record(reason, allowed):
    """Append the override to the override log (unless dtkpip did)."""
    import getpass
    import os
    import time

    if _token_recorded():
        return
    try:
        user = getpass.getuser()
    except Exception:
        user = str(os.getuid()) if hasattr(os, "getuid") else "?"
    entry = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "user": user,
        "reason": reason,
        "argv": list(sys.argv),
        "tool": "pip-hook",
        "allowed": allowed,
    }
    _chain_append(os.path.join(_override_dir(), "overrides.jsonl"), entry)


def _summary(problems, limit=6):
    lines = [f"{p.message} [{p.rule}, {p.severity}]" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more")
    return "\n  ".join(lines)


def _today():
    import time

    return time.strftime("%Y-%m-%d", time.gmtime())


def _requires(policy):
    """{vendor name: its Requires-Dist} from the installed vendor builds' METADATA."""
    if "requires" not in _state:
        import os

        out = {}
        same = _state["decision"].same_version
        for key, (version, info) in _installed().items():
            # only the vendor build's own requirements: a community build of that name is not it
            if not same(version, policy["vendor"].get(key)) or not info.endswith(".dist-info"):
                continue
            try:
                with open(os.path.join(info, "METADATA"), encoding="utf-8") as fh:
                    text = fh.read().split("\n\n", 1)[0]
            except OSError:
                continue
            out[key] = [
                line.split(":", 1)[1].strip()
                for line in text.splitlines()
                if line.lower().startswith("requires-dist:")
            ]
        _state["requires"] = out
    return _state["requires"]


def _vendor_deps(policy, after):
    """``vendor-deps-broken`` problems the change to ``after`` ({name: version}) introduces."""
    try:
        from pip._vendor.packaging.requirements import Requirement
    except ImportError:  # pip without its vendored packaging: judged by `check` instead
        return []
    judge = _state["decision"].judge_vendor_deps
    if not judge(_requires(policy), after, Requirement, pins=policy["vendor"]):
        return []  # nothing broken after the change: the baseline (a large file) is not read
    before = {k: v for k, (v, _) in _installed().items()}
    recorded = _baseline().get("dists")
    if isinstance(recorded, dict) and recorded:  # only what broke since guard install (as check)
        before = {k: str(d.get("version")) for k, d in recorded.items() if isinstance(d, dict)}
    return _state["decision"].judge_vendor_deps(
        _requires(policy), after, Requirement, before, pins=policy["vendor"]
    )


def judge(policy, items, files=None, removals=(), effects=None):
    """Problems of installing ``items`` ([(name, version)]) that write ``files`` ({name: paths},
    None when the destination is elsewhere) and remove the dists named in ``removals``."""
    decision = _state["decision"]
    installed = _installed()
    versions = {k: v for k, (v, _) in installed.items()}
    reference = decision.reference_release(policy, versions)
    problems = []
    if files is not None:
        facts = _facts(policy)
        contents = {name: (e["contents"], e["members"]) for name, e in (effects or {}).items()}
        problems = decision.decide(policy, items, _today(), reference, files, facts, contents)
        for effect in (effects or {}).values():
            problems += effect["problems"]
        after = dict(versions)
        after.update((_canonical(n), v) for n, v in items if v)
        problems += _vendor_deps(policy, after)
    for name in removals:
        key = _canonical(name)
        pin = policy["vendor"].get(key)
        if pin is not None and key in installed:
            problems.append(
                decision.Problem(
                    "vendor-replaced",
                    "critical",
                    key,
                    f"pip would remove the vendor build {key} {installed[key][0]} from this "
                    f"environment and install its replacement elsewhere (the vendor build is "
                    f"{pin})",
                )
            )
    return problems


def _guard_install(reqs, home, root, prefix, user):
    """Judge ``reqs`` before pip changes anything; raise to refuse."""
    policy = _load_policy()
    reason = _override()
    items = [(req.name or "?", _req_version(req)) for req in reqs]
    if policy is None or not _copies_loaded():
        if not reason:
            raise _fail_closed()
        _record(reason, [f"{n} {v}" for n, v in items] + [_state["error"]])
        return
    roots = _roots()
    default = home is None and root is None and prefix is None
    files, effects, unknown, identity = {}, {}, [], []
    touching = default
    for req in reqs:
        scheme = _scheme(req, home, root, prefix, user)
        if default or any(p is None or _touches(p, roots) for p in scheme.values()):
            touching = True
        wheel = getattr(req, "local_file_path", None)
        if wheel and str(wheel).endswith(".whl"):
            effects[req.name or "?"] = _wheel_effect(wheel, scheme)
            files[req.name or "?"] = effects[req.name or "?"]["paths"]
            identity += _identity(policy, req.name or "?", _req_version(req), wheel)
        else:
            unknown.append(req.name or "?")
    removals = [req.name for req in reqs if getattr(req, "should_reinstall", False)]
    if not touching:  # elsewhere: only what pip removes from here counts
        problems = judge(policy, [], None, removals)
    else:
        problems = judge(policy, items, files, (), effects) + identity + _built_changes()
        for name in unknown:
            problems.append(
                _state["decision"].Problem(
                    "file-conflict",
                    "high",
                    _canonical(name),
                    f"{name} is not a wheel (a legacy setup.py install or develop): its files "
                    "cannot be judged before they are written; build a wheel first",
                )
            )
    blocking = _state["decision"].refusals(problems)
    for p in problems:
        if not p.blocking:
            sys.stderr.write(f"dtkguard: warning: {p.message}\n")
    if blocking and not reason:
        text = "dtkguard: refusing to install:\n  " + _summary(blocking)
        raise _error("InstallationError", text + _footer(policy, [p.package for p in blocking]))
    if blocking:
        _record(reason, [p.message for p in blocking])
    _state["allowed"].update(_canonical(n) for n, _ in items)
    if touching:
        _state["replacing"].update((_canonical(n), v) for n, v in items)


def _installed_as(key, pin):
    """Is ``key`` installed here at the policy's ``pin`` (the environment keeps it)?"""
    try:
        from importlib import metadata

        version = metadata.version(key)
    except Exception:
        return False
    decision = _load_decision()
    return decision.same_version(version, pin) if decision is not None else version == pin


def _explain_conflict(exc, args):
    """dtkguard's words for a resolution that failed on the guard's vendor pins, or None."""
    policy = _state["policy"]
    cause = exc.__cause__ if exc.__cause__ is not None else exc.__context__
    causes = getattr(cause, "causes", None)
    if policy is None or not causes:
        return None
    lines, names = [], []
    for item in causes:
        req, parent = item[0], item[1]
        key = _canonical(str(getattr(req, "name", "")).split("[", 1)[0])
        pin = policy["vendor"].get(key)
        if pin is None:
            continue
        try:
            spec = req.format_for_error()
        except Exception:
            spec = key
        who = f"{parent.name} {parent.version} needs" if parent is not None else "you asked for"
        if _installed_as(key, pin):
            lines.append(f"{who} {spec}; this environment keeps {key} {pin}")
        else:
            lines.append(f"{who} {spec}; the policy allows {key} only as {pin}")
        names.append(key)
    if not lines:
        return None
    import os

    files = policy.get("files") or [_state["policy_path"]]
    state = os.path.dirname(_state["policy_path"] or ".")
    request = " ".join(a for a in args if not a.startswith("-")) or "..."
    first = names[0]
    links = "".join(f" --find-links {f}" for f in (policy.get("find_links") or ())[:1])
    return (
        f"\ndtkguard: the constraints above are the vendor pins of the guard of policy "
        f"{policy.get('name', '?')} ({files[0]}), written to {state}/constraints.txt by "
        "`dtkguard guard install`; nobody typed them, and loosening your request will not help.\n"
        + "".join(f"  {line}\n" for line in dict.fromkeys(lines))
        + "What to do:\n"
        f"  dtkpip install {request}   (plans the install and shows what to use instead)\n"
        f"  pip install{links} '{first}=={policy['vendor'][first]}'   (the vendor build)\n"
        f"  dtkguard policy explain {first}   (the rule)\n"
        f'Override (recorded): DTKGUARD_OVERRIDE="reason" dtkpip install {request}'
    )


# -- patching pip --------------------------------------------------------------------------


def _missing_parts(original, command):
    """The names of the pip internals the install patch needs that this pip lacks."""
    parts = (
        ("install_given_reqs", original),
        ("InstallCommand._handle_target_dir", getattr(command, "_handle_target_dir", None)),
        ("pip._internal.locations.get_scheme", _get_scheme()),
    )
    return [name for name, obj in parts if obj is None]


def _patch_install(module):
    import inspect

    original = getattr(module, "install_given_reqs", None)
    command = getattr(module, "InstallCommand", None)
    run = getattr(command, "run", None)
    if command is None or run is None:
        raise AttributeError("pip's InstallCommand.run is gone")
    missing = _missing_parts(original, command)
    if missing:
        _lacks(*missing)
    if not getattr(run, "_dtkguard", False):

        def guarded_run(self, options, args):
            target = getattr(options, "target_dir", None)
            _state["target_dir"] = target
            _dtkpip_attach(options)
            if _state["error"] is not None and missing and not _override():
                raise _fail_closed()
            _snapshot_for(options, target)
            from pip._internal.exceptions import DistributionNotFound

            try:
                result = run(self, options, args)
            except DistributionNotFound as exc:
                _after_run()
                text = _explain_conflict(exc, list(args))
                if text is None:
                    raise
                if _dtkpip_tell(b"conflict"):
                    raise  # dtkpip explains it in its own words
                raise type(exc)(f"{exc}{text}") from exc
            except BaseException:
                _after_run()
                raise
            _after_run()
            return result

        guarded_run._dtkguard = True
        command.run = guarded_run
    if original is None or getattr(original, "_dtkguard", False):
        return
    signature = inspect.signature(original)

    def install_given_reqs(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        reqs = list(a.get("requirements") or ())
        _before_install(reqs, a)
        return original(*args, **kwargs)

    install_given_reqs._dtkguard = True
    module.install_given_reqs = install_given_reqs
    import pip._internal.req as req_package

    if getattr(req_package, "install_given_reqs", None) is original:
        req_package.install_given_reqs = install_given_reqs  # 26.x in-process build deps


def _before_install(reqs, a):
    """Judge an install (``a``: pip's bound arguments); in dtkpip's one run into this
    environment, what builds changed is put back first, then dtkpip is asked."""
    if _state.get("channel") is not None and all(
        a.get(k) is None for k in ("home", "root", "prefix")
    ):
        _after_run()  # before dtkpip's journal starts
        _dtkpip_ask(reqs)
    _guard_install(reqs, a.get("home"), a.get("root"), a.get("prefix"), a.get("use_user_site"))


def _patch_build_only(module):
    """``pip wheel`` and ``pip download``: they install nothing here, but build (the metadata
    of an sdist, a wheel) with code that can write here. The install's build journal around
    their ``run``: what a build changed is put back and the run refused (`_after_run`)."""
    classes = [getattr(module, n, None) for n in ("WheelCommand", "DownloadCommand")]
    command = next((c for c in classes if c is not None), None)
    run = getattr(command, "run", None)
    if run is None:
        raise AttributeError(f"pip's {module.__name__} has no command class with run")
    if getattr(run, "_dtkguard", False):
        return

    def guarded_run(self, options, args):
        if _load_policy() is None or None in (_state.get("protected"), _state.get("records")):
            if not _override():
                raise _fail_closed()
            _record(_override(), [f"pip {self.name} with builds unjudged", _state["error"]])
        _arm(_load_policy())
        try:
            result = run(self, options, args)
        except BaseException:
            _after_run()
            raise
        _after_run()
        return result

    guarded_run._dtkguard = True
    command.run = guarded_run


def _dtkpip_attach(options):
    """dtkpip runs pip once, as ``install --dry-run --report FILE ...`` with two pipes named
    by `CHANNEL`. Without this hook that stays the dry run dtkpip plans from; with it the hook
    says ``hello``, makes it the real run and, before pip installs anything here, waits for
    dtkpip's verdict on the plan (`_dtkpip_ask`). The channel only adds a refusal: the hook
    judges the install all the same. The variable leaves the environment: no child sees it."""
    import os
    import stat

    raw = os.environ.pop(CHANNEL, None)
    if raw is None or not getattr(options, "dry_run", False):
        return
    elsewhere = ("target_dir", "prefix_path", "root_path", "use_user_site")
    if not getattr(options, "json_report_file", None) or any(
        getattr(options, k, None) for k in elsewhere
    ):
        return  # stays the dry run: dtkpip plans such an install first
    try:
        w, r = (int(fd) for fd in raw.split(","))
        if not all(stat.S_ISFIFO(os.fstat(fd).st_mode) for fd in (w, r)):
            return
        os.write(w, b"hello\n")
    except (OSError, ValueError):
        return
    options.dry_run = False
    _state["channel"] = (w, r)


def _dtkpip_tell(message):
    """Send one line to dtkpip; False when no dtkpip is listening."""
    import os

    channel = _state.get("channel")
    if channel is None:
        return False
    try:
        os.write(channel[0], message + b"\n")
    except OSError:
        return False
    return True


def _dtkpip_ask(reqs):
    """Before the first install into this environment of dtkpip's run: tell dtkpip the wheels
    pip is about to install (the plan is in the report pip wrote) and wait for its answer;
    anything but ``go`` (dtkpip refused, or is gone) refuses with nothing installed."""
    import json
    import os

    if _state.get("channel") is None:
        return
    wheels = {
        _canonical(req.name or "?"): str(getattr(req, "local_file_path", None) or "")
        for req in reqs
    }
    answer = b""
    if _dtkpip_tell(b"plan " + json.dumps(wheels).encode()):
        w, r = _state.pop("channel")
        with contextlib.suppress(OSError):
            os.close(w)
            with os.fdopen(r, "rb") as fh:
                answer = fh.readline()
    _state.pop("channel", None)
    if answer.strip() != b"go":
        raise _error(
            "InstallationError",
            "dtkguard: dtkpip refused this install (its reasons follow); nothing was installed "
            "or removed",
        )


def _get_scheme():
    try:
        from pip._internal.locations import get_scheme
    except ImportError:
        return None
    return get_scheme


def _removal_files(pathset):
    """Every file a removal deletes, resolved: pip's paths with folders expanded (a RECORD
    row that is a folder, an egg-info's top_level.txt), and the ``.pth`` files it edits."""
    import os

    out = []
    paths = list(getattr(pathset, "_paths", ())) + list(getattr(pathset, "_pth", {}) or ())
    for path in paths:
        real = _real(path)
        out.append(real)
        if os.path.isdir(real) and not os.path.islink(path):
            for folder, dirs, names in os.walk(real):
                out += [os.path.join(folder, n) for n in dirs + names]
    return out


def _judge_removal(policy, name, version, pathset):
    """Why removing dist ``name`` (with ``pathset``) is refused: [] when it may go."""
    decision = _state["decision"]
    replacement = _state["replacing"].get(name)
    facts = _facts(policy)
    found = decision.judge_removals(policy, name, _removal_files(pathset), facts, replacement)
    pin = policy["vendor"].get(name)
    if pin is not None and not (replacement and decision.same_version(replacement, pin)):
        found.insert(
            0,
            decision.Problem(
                "vendor-missing",
                "critical",
                name,
                f"removing {name} {version} (the vendor build is {pin})",
            ),
        )
    if replacement is None:
        after = {k: v for k, (v, _) in _installed().items()}
        for gone in (*_state["removed"], name):
            after.pop(gone, None)
        found += _vendor_deps(policy, after)
    return [p.message + f" [{p.rule}]" for p in decision.refusals(found)]


def _snapshot_paths(policy):
    """What build-time code must not change: the protected set, the vendor builds' files and
    their folders (``__pycache__`` aside), the site folders."""
    paths = set(_protected_table())
    for files in _vendor_files(policy).values():
        paths.update(files)
        folders = {path.rpartition("/")[0] for path in files}
        paths.update(f for f in folders if not f.endswith("/__pycache__"))
    paths.update(_state["sites"])
    return list(paths)


def _stat_all(paths):
    """{path: (size, inode, ctime, mode, mtime) or None}."""
    import os

    lstat = os.lstat
    out = {}
    for path in paths:
        try:
            st = lstat(path)
        except OSError:
            out[path] = None
            continue
        out[path] = (st.st_size, st.st_ino, st.st_ctime_ns, st.st_mode, st.st_mtime_ns)
    return out


def _snapshot_for(options, target):
    """Take the build snapshot when this run's builds could write into this interpreter: any
    run but the ones into ``--prefix``/``--root`` elsewhere (pip's build environments). A dry
    run and a ``--target`` install build packages too."""
    here = [getattr(options, k, None) for k in ("prefix_path", "root_path")]
    if all(p is None or _touches(_real(p), _roots()) for p in here):
        _arm(_load_policy())


def _arm(policy):
    """Take the build snapshot just before pip starts its first child process: every build
    (a PEP 517 backend, ``setup.py``, pip installing build dependencies) runs in one, and a
    run that starts none (wheels only) runs no build code and needs no snapshot."""
    import subprocess

    _state["armed"] = policy
    init = subprocess.Popen.__init__
    if getattr(init, "_dtkguard", False):
        return

    def guarded_init(self, *args, **kwargs):
        if not _state.get("user_agent"):
            armed = _state.pop("armed", None)
            if armed is not None and _state["snapshot"] is None:
                _take_snapshot(armed)
        return init(self, *args, **kwargs)

    guarded_init._dtkguard = True
    subprocess.Popen.__init__ = guarded_init
    _exempt_user_agent()


def _exempt_user_agent():
    """pip's user agent runs children that are no build (``distro``'s ``lsb_release -a`` and
    ``uname -rs``, ``rustc --version``): while pip builds it, a child takes no snapshot."""
    try:
        from pip._internal.network import session
    except ImportError:
        return
    original = getattr(session, "user_agent", None)
    if original is None or getattr(original, "_dtkguard", False):
        return

    def user_agent(*args, **kwargs):
        _state["user_agent"] = True
        try:
            return original(*args, **kwargs)
        finally:
            _state["user_agent"] = False

    user_agent._dtkguard = True
    session.user_agent = user_agent


def _take_snapshot(policy):
    """Before pip starts its first child (`_arm`): the build journal. (size, inode, ctime)
    of what builds must not touch, the names in each of its folders, and the guard's store
    (read now, before any build code ran), where the bytes to put back come from."""
    import os
    import stat

    if policy is None or None in (_state.get("protected"), _state.get("records")):
        return
    stats = _stat_all(_snapshot_paths(policy))
    names = {}
    for path, st in stats.items():
        if st is not None and stat.S_ISDIR(st[3]):
            with contextlib.suppress(OSError):
                names[path] = set(os.listdir(path))
    _state["snapshot"] = {"stat": stats, "names": names, "store": _store_dir()}


def _built_changes():
    """Problems for what changed since `_take_snapshot` (code run by a build: setup.py, a
    PEP 517 backend, build dependencies), before pip installs anything. What changed is put
    back first (`_put_back`): the refusal leaves the environment as it was."""
    snap = _state["snapshot"]
    _state["snapshot"] = None  # judged once: after this, pip's own install writes here
    _state.pop("armed", None)
    if not snap:
        return []
    now = _stat_all(snap["stat"])
    changed = sorted(p for p, st in snap["stat"].items() if now[p] != st)
    if not changed:
        return []
    restored, failed = _put_back(snap, changed)
    more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
    msg = (
        f"code run while pip prepared or built packages changed {changed[0]}{more} (the guard "
        "or a vendor build); nothing was installed"
    )
    if not failed:
        msg += f"; the guard put back what it changed ({restored} path(s)). Build that package "
        msg += "elsewhere"
    else:
        shown = "; ".join(f"{p} ({why})" for p, why in failed[:3])
        msg += (
            f"; the guard put back {restored} path(s) but not {len(failed)}: {shown}. Restore "
            f"the environment with `dtkguard restore --python {sys.executable}` and build that "
            "package elsewhere"
        )
    return [_state["decision"].Problem("vendor-files-changed", "critical", "build", msg)]


def _after_run():
    """After a run that installed nothing here (a dry run, a failed resolution, ``--target``):
    what its builds changed is put back and the run refused."""
    problems = _built_changes()
    if problems and not _override():
        raise _error("InstallationError", "dtkguard: refusing to install:\n  " + _summary(problems))
    if problems:
        _record(_override(), [p.message for p in problems])


def _store_dir():
    """The env's folder in the guard's store, from the pointer beside the policy, when it can
    be trusted (owner, mode); None otherwise."""
    import json
    import os

    here = os.path.dirname(_state["policy_path"] or ".")
    try:
        with open(os.path.join(here, "store.json"), encoding="utf-8") as fh:
            store = json.load(fh).get("store")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(store, str) or not os.path.isdir(store) or _untrusted(store):
        return None
    return store


def _put_back(snap, changed):
    """Put the environment back as the build journal ``snap`` saw it: entries a build added
    to a watched folder go, changed or removed files come back from the store (the protected
    files' copies, the vault's or the policy's wheelhouse's wheels of the vendor builds, each
    checked against the recorded sha256), in place, with their mode and mtime. Returns (paths
    put back, [(path, why not)])."""
    import os
    import stat

    done, failed = 0, []
    for folder, names in sorted(snap["names"].items()):
        try:
            now = os.listdir(folder)
        except OSError:
            continue
        for name in sorted(set(now) - names - {"__pycache__"}):
            try:
                _remove_path(os.path.join(folder, name))
                done += 1
            except OSError as exc:
                failed.append((os.path.join(folder, name), exc.strerror or str(exc)))
    sources = _Sources(snap.get("store"))
    for path in sorted(changed, key=lambda p: p.count("/")):
        before = snap["stat"][path]
        try:
            if before is None:
                if os.path.lexists(path):
                    _remove_path(path)
                    done += 1
            elif stat.S_ISDIR(before[3]):
                if not os.path.isdir(path) or os.path.islink(path):
                    with contextlib.suppress(FileNotFoundError):
                        _remove_path(path)
                    os.makedirs(path, stat.S_IMODE(before[3]))
                    done += 1
            else:
                why = sources.write(path, before)
                if why:
                    failed.append((path, why))
                else:
                    done += 1
        except OSError as exc:
            failed.append((path, exc.strerror or str(exc)))
    return done, failed


def _remove_path(path):
    import os
    import shutil

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


class _Sources:
    """Where the original bytes of a protected or vendor file come from (the store)."""

    def __init__(self, store):
        self.store = store
        self._protected = None
        self._baseline = None

    def _json(self, name):
        import json
        import os

        if not self.store:
            return {}
        try:
            with open(os.path.join(self.store, name), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write(self, path, before):
        """Put ``path`` back (``before``: its lstat fields); why not, or None."""
        import os
        import stat

        if self._protected is None:
            self._protected = self._json("protected.json").get("files") or {}
        entry = self._protected.get(path)
        if entry and entry.get("kind") == "link" and stat.S_ISLNK(before[3]):
            tmp = f"{path}.dtkguard-put-back"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            os.symlink(entry["target"], tmp)
            os.replace(tmp, path)
            return None
        if not stat.S_ISREG(before[3]):
            return "not a file before: no copy of it"
        if entry and entry.get("kind") == "file":
            data = self._blob(entry.get("sha256"))
            if data is None:
                return "the store's copy of it is missing or damaged"
            return _write_back(path, data, before)
        return self._vendor(path, before)

    def _blob(self, sha):
        import hashlib
        import os

        if not self.store or not isinstance(sha, str) or not sha.isalnum():
            return None
        try:
            with open(os.path.join(self.store, "blobs", sha), "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        return data if hashlib.sha256(data).hexdigest() == sha else None

    def _vendor(self, path, before):
        import hashlib
        import os

        found = None
        for key, (site, rows) in _vendor_rows(_state["policy"]).items():
            if path.startswith(site + "/") and path[len(site) + 1 :] in rows:
                found = key, path[len(site) + 1 :]
                break
        if found is None:
            return "neither a protected file nor a vendor build's: no copy of it"
        key, rel = found
        if self._baseline is None:
            self._baseline = self._json("baseline.json").get("vendor") or {}
        build = self._baseline.get(key) or {}
        want = (build.get("files") or {}).get(rel) or {}
        if want.get("pyc"):  # byte code: Python writes it again from the source
            os.unlink(path)
            return None
        sha = want.get("sha256")
        if not sha:
            return "the guard's baseline holds no digest of it"
        for wheel in self._wheels(key, str(build.get("version") or "")):
            data = _wheel_member(wheel, rel)
            if data is not None and hashlib.sha256(data).hexdigest() == sha:
                return _write_back(path, data, before)
        return f"no wheel of {key} in the vault or the policy's find-links holds it"

    def _wheels(self, key, version):
        """Wheel files of the vendor build ``key`` ``version``: the vault's, then the policy's
        local find-links'."""
        import os

        decision = _state["decision"]
        folders = [os.path.join(self.store, "vault")] if self.store else []
        for link in _state["policy"].get("find_links") or ():
            link = str(link)
            if link.startswith("file://"):
                link = link[7:]
            if "://" not in link:
                folders.append(link)
        for folder in folders:
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                continue
            for name in names:
                parts = name[:-4].split("-") if name.endswith(".whl") else []
                if len(parts) < 5 or _canonical(parts[0]) != key:
                    continue
                if decision.same_version(parts[1], version):
                    yield os.path.join(folder, name)


def _wheel_member(wheel, rel):
    """The bytes a wheel holds for the installed path ``rel`` (site-relative; also under its
    ``.data/purelib`` or ``.data/platlib``), or None."""
    import zipfile

    try:
        with zipfile.ZipFile(wheel) as zf:
            names = set(zf.namelist())
            for member in [rel] + [
                n for n in names if n.endswith(("/purelib/" + rel, "/platlib/" + rel))
            ]:
                if member in names:
                    return zf.read(member)
    except (OSError, zipfile.BadZipFile, KeyError, ValueError):
        return None
    return None


def _write_back(path, data, before):
    """Write ``data`` into ``path``: in place when it is still the same inode (its links, a
    uv cache's too, get the bytes back), else as a new file; then the recorded mode and mtime."""
    import os
    import stat

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_ino == before[1]:
        with open(path, "r+b") as fh:
            fh.write(data)
            fh.truncate()
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.dtkguard-put-back"
        with open(tmp, "wb") as fh:
            fh.write(data)
        if st is not None and stat.S_ISDIR(st.st_mode) and not stat.S_ISLNK(st.st_mode):
            _remove_path(path)
        os.replace(tmp, path)
    os.chmod(path, stat.S_IMODE(before[3]))
    os.utime(path, ns=(before[4], before[4]))
    return None


def _patch_uninstall(module):
    cls = getattr(module, "UninstallPathSet", None)
    original = getattr(cls, "from_dist", None)
    if original is None:
        _lacks("UninstallPathSet.from_dist")
        remove = getattr(cls, "remove", None)
        if remove is not None:

            def refuse(self, *args, **kwargs):
                if not _override():
                    raise _fail_closed("UninstallationError")
                return remove(self, *args, **kwargs)

            cls.remove = refuse
        return
    if getattr(original, "_dtkguard", False):
        return
    func = original.__func__

    def from_dist(klass, dist):
        name = _canonical(
            getattr(dist, "canonical_name", None) or getattr(dist, "project_name", "")
        )
        policy = _load_policy()
        reason = _override()
        if policy is None or not _copies_loaded():
            if not reason:
                raise _fail_closed("UninstallationError")
            _record(reason, [f"remove {name}", _state["error"]])
            return func(klass, dist)
        pathset = func(klass, dist)
        problems = _judge_removal(policy, name, getattr(dist, "version", ""), pathset)
        if problems and not reason:
            raise _error(
                "UninstallationError",
                "dtkguard: refusing " + "; ".join(problems) + _footer(policy, [name]),
            )
        if problems and name not in _state["allowed"]:
            _record(reason, problems)
        if name not in _state["replacing"]:
            _state["removed"].add(name)
        return pathset

    from_dist._dtkguard = True
    cls.from_dist = classmethod(from_dist)
