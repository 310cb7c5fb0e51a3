"""dtkguard's guard inside pip: veto installs and uninstalls that would clobber vendor builds.

Installed by ``dtkguard guard install`` as this module, a copy of ``dtkguard/decision.py``
beside it (``_dtkguard_decision.py``, the one place that decides), copies of ``protected.py``,
``records.py`` (RECORD rows, a wheel's layout), ``sitefacts.py`` (the interpreter's facts the
guard judges with), ``buildwatch.py`` (the build journal), ``pipoverride.py`` (an override and
its record) and ``elf.py``, and a one-line ``.pth`` file
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
RECORD module, site facts, build journal, override log) cannot be read, every install and
uninstall is refused (fail closed). ``DTKGUARD_OVERRIDE="reason"`` lets an install through and
records it in ``overrides.jsonl`` beside the policy.
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
#: the copy of ``dtkguard/sitefacts.py``: roots, schemes, wheel files, owners, the baseline
SITEFACTS = "_dtkguard_sitefacts.py"
#: the copy of ``dtkguard/buildwatch.py``: the build journal (snapshot, compare, put back)
BUILDWATCH = "_dtkguard_buildwatch.py"
#: the copy of ``dtkguard/pipoverride.py``: an override's reason, dtkpip's token, its record
PIPOVERRIDE = "_dtkguard_pipoverride.py"
PTH = "dtkguard-pip-hook.pth"
#: dtkpip's one pip run: ``"W,R"``, the descriptors of two pipes (`_dtkpip_attach`)
CHANNEL = "DTKGUARD_DTKPIP_CHANNEL"
#: the guard of this pip run, built once by `find_spec` (`Guard`)
GUARD = None


def find_spec(fullname, path, target, policy_path):
    """Called by the .pth line's finder for the two pip modules only: pip's own spec, with a
    loader that patches the module once pip's code has run."""
    global GUARD
    if GUARD is None:
        GUARD = Guard(policy_path)
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
            GUARD.changed(f"the dtkguard hook could not attach to pip: {exc!r}")


# -- the guard of one pip run --------------------------------------------------------------


class Guard:
    """What the guard knows and decided in one pip run, built once (`find_spec`) and loaded
    when pip imports a module the hook wraps (`load`): the copies beside the hook, the
    policy, this interpreter's sites and roots. The facts the decision is given (installed
    dists, the vendor builds' files, the protected set, the baseline) are computed by the site
    facts' functions on first use and kept here; the patches read and change only this."""

    def __init__(self, policy_path):
        self.policy_path = policy_path
        #: why the guard cannot judge (the first reason wins), and the pip internals it lacks
        self.error = None
        self.missing = []
        self.decision = self.protected = self.records = self.sitefacts = None
        self.buildwatch = self.pipoverride = None
        self.elf = self.elf_error = self.policy = None
        self.sites, self.roots = [], None
        #: the run: names judged, what pip installs here in place of a removal, what it removed
        self.allowed, self.replacing, self.removed = set(), {}, set()
        self.target_dir = self.token = self.channel = None
        #: the package finder of dtkpip's one run (`_conflict_plan`)
        self.finder = None
        #: the build journal: the policy it is armed with, its snapshot, pip's user agent
        self.armed = self.snapshot = None
        self.user_agent = False
        self.dirs = {}  # folder -> resolved (`_real_in`)
        self._vendor_rows = self._env_facts = self._protected_table = None
        self._baseline = self._requires = None
        self.baseline_error = None

    @classmethod
    def given(cls, policy_path, policy, copies, sites, table):
        """The guard of this process (`GUARD`) built from facts already known (dtkuv's watch
        of a uv run, outside pip): the policy, the modules (``copies``: {attribute: module}),
        the sites, the protected set."""
        global GUARD
        GUARD = guard = cls(policy_path)
        guard.policy, guard.sites, guard._protected_table = policy, list(sites), table
        for name, *_ in _COPIES:
            setattr(guard, name, copies[name])
        return guard

    def changed(self, text):
        """Remember why the guard cannot judge (the first reason wins)."""
        if self.error is None:
            self.error = text

    def lacks(self, *names):
        """pip lacks internals the guard wraps: say which, all of them."""
        import pip

        self.missing += [n for n in names if n not in self.missing]
        text = f"pip {getattr(pip, '__version__', '?')} lacks what the guard wraps"
        if self.error is None or self.error.startswith(text):
            self.error = f"{text} ({', '.join(self.missing)})"

    def load(self):
        """The copies beside the hook, the policy and the roots (each once; what failed to
        load is retried, and its reason kept in `error`)."""
        for name, filename, entry, what in _COPIES:
            if getattr(self, name) is None:
                setattr(self, name, _load_copy(filename, entry, what))
        if self.elf is None and self.elf_error is None:
            self.elf, self.elf_error = _load_elf()
        self.load_policy()
        if self.roots is None and self.sitefacts is not None:
            self.sites, self.roots = _roots(self.sitefacts)

    def copies_loaded(self):
        """Whether the copies an install or a removal is judged with (decision, protected set,
        RECORD module, site facts, build journal, override log) are loaded; without one, the
        guard fails closed."""
        return all(getattr(self, name) is not None for name, *_ in _COPIES)

    def load_policy(self):
        """The compiled policy, or None (and the reason in `error`)."""
        if self.policy is not None or self.error is not None:
            return self.policy
        path = self.policy_path
        unsafe = _untrusted(path)
        if unsafe:
            self.changed(f"the guard policy {path} cannot be trusted: {unsafe}")
            return None
        try:
            data = _read_json(path)
            if not isinstance(data.get("vendor"), dict) or not isinstance(data.get("deny"), list):
                raise ValueError("no 'vendor' table or 'deny' list")
            self.policy = data
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            self.changed(f"the guard policy {path} is missing or unreadable ({why})")
        return self.policy

    # -- facts, each computed once by the site facts' functions (`_dtkguard_sitefacts`)

    def canonical(self, name):
        return self.decision.canonical(name) if self.decision else (name or "").lower()

    def installed(self):
        """{canonical name: (version, metadata folder)} of the dists in this interpreter's
        sites, as they are now (pip changes them during the run: never kept)."""
        facts = self.sitefacts
        return facts.installed(facts.listings(self.sites or ()), self.canonical)

    def vendor_rows(self):
        """{vendor name: (site folder, [RECORD paths relative to it])} of the vendor builds."""
        if self._vendor_rows is None:
            rows = self.sitefacts.vendor_rows(self.installed(), self.policy["vendor"], self.rows)
            self._vendor_rows = rows
        return self._vendor_rows

    def rows(self, info):
        """The paths of the RECORD in the dist-info ``info``, relative to its site folder."""
        import os

        try:
            with open(os.path.join(info, "RECORD"), encoding="utf-8", newline="") as fh:
                return self.records.paths_of(fh.read())
        except OSError:
            return []

    def vendor_files(self):
        """{vendor name: the absolute files of its RECORD}."""
        return self.sitefacts.vendor_files(self.vendor_rows())

    def env_facts(self):
        """The decision's `env_facts` of this interpreter: its resolved sites, the vendor
        builds' import packages, the protected set and the guard's state."""
        if self._env_facts is None:
            import sysconfig

            protected, sites, table = self.protected, self.sites, self.protected_table()
            scripts = self.sitefacts.real(sysconfig.get_paths().get("scripts"))

            def kind_of(path):
                return protected.protected_kind(path, sites, scripts, table)

            tops = self.sitefacts.vendor_tops(self.vendor_rows())
            self._env_facts = self.decision.env_facts(
                sites, tops, scripts, kind_of, protected.may_write, self.guard_files()
            )
        return self._env_facts

    def protected_table(self):
        """The protected set of this interpreter ({path: kind})."""
        if self._protected_table is None:
            import sysconfig

            scripts = sysconfig.get_paths().get("scripts")
            self._protected_table = self.protected.protected_paths(
                sys.prefix, self.sites, scripts, self.guard_files()
            )
        return self._protected_table

    def guard_files(self):
        """The guard's state beside the policy (a folder) and the site ``pip.conf``."""
        return self.sitefacts.guard_files(self.policy_path, _here())

    def baseline(self):
        """The baseline `guard install` recorded ({} when there is none, or none to trust:
        then `baseline_error` says why)."""
        if self._baseline is None:
            import os

            facts = self.sitefacts
            here = os.path.dirname(self.policy_path or ".")
            store = _store_dir()
            pointer = os.path.lexists(os.path.join(here, "store.json"))
            path, error = facts.baseline_file(here, store, pointer)
            data = {}
            if path is not None:
                there = os.path.lexists(path)
                unsafe = _untrusted(path) if there else None
                written = not there and store is not None and _manifest_lists(store, path)
                data, error = facts.baseline_data(path, _read_json, unsafe, written)
            self._baseline, self.baseline_error = data, error
        return self._baseline

    def requires(self):
        """{vendor name: its Requires-Dist} from the installed vendor builds' METADATA."""
        if self._requires is None:
            same = self.decision.same_version
            self._requires = self.sitefacts.vendor_requires(
                self.installed(), self.policy["vendor"], same, _read_metadata
            )
        return self._requires


#: the stdlib modules of dtkguard beside this one: (attribute, file, entry point, what)
_COPIES = (
    ("decision", DECISION, "decide", "decision module"),
    ("protected", PROTECTED, "protected_paths", "protected-set module"),
    ("records", RECORDS, "paths_of", "RECORD module"),
    ("sitefacts", SITEFACTS, "roots", "site-facts module"),
    ("buildwatch", BUILDWATCH, "put_back", "build-journal module"),
    ("pipoverride", PIPOVERRIDE, "record", "override-log module"),
)


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
    GUARD.load()


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
        GUARD.changed(f"the guard's module {path} cannot be trusted: {unsafe}")
        return None
    try:
        spec = importlib.util.spec_from_file_location(filename[:-3], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        getattr(module, entry)  # the entry point must exist
    except Exception as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else repr(exc)
        GUARD.changed(f"the guard's {what} {path} is missing or broken ({why})")
        return None
    return module


def _load_elf():
    """(the copy of ``dtkguard/elf.py`` beside this module, None), or (None, why): then
    native code is not judged before install, and pip says so (`check` still reads it)."""
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
        return None, f"the guard's ELF reader {path} is missing or broken ({why})"
    return module, None


def _roots(facts):
    """(sites, roots) of this interpreter: its site-packages (also the user site), stdlib and
    scripts, and the folder of this hook. Computed from ``sys.prefix`` (``sysconfig``), not
    ``sys.path``, which pip's build environments rewrite."""
    import site
    import sysconfig

    found = []
    with contextlib.suppress(Exception):
        found = list(site.getsitepackages())
    user = None
    if site.ENABLE_USER_SITE:
        with contextlib.suppress(Exception):
            user = site.getusersitepackages()
    return facts.roots(sysconfig.get_paths(), _here(), found, user)


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


def _real(path):
    return GUARD.sitefacts.real(path)


def _real_in(path):
    """``path`` with its folder resolved (cached per folder), its last part kept."""
    return GUARD.sitefacts.real_in(path, GUARD.dirs)


def _touches(path, roots):
    """Is ``path`` one of ``roots``, inside one, or a parent of one?"""
    return GUARD.sitefacts.touches(path, roots)


# -- facts handed to the decision ----------------------------------------------------------


def _canonical(name):
    return GUARD.canonical(name)


def _wheel_destinations(name, scheme, purelib):
    """Where pip writes the wheel member ``name`` under ``scheme`` (resolved), or None."""
    return GUARD.sitefacts.wheel_destination(name, scheme, purelib, GUARD.dirs)


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
    decision, elf = GUARD.decision, GUARD.elf
    native = getattr(elf, "native_name", None)
    if native is None or ".dist-info/" in info.filename or not native(info.filename):
        if native is None and info.filename.endswith(".so") and not effect.get("elf_warned"):
            effect["elf_warned"] = True
            why = GUARD.elf_error or (
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
            GUARD.policy, name, info.filename, linkage.needed, linkage.soname
        )
    today = _today()
    effect["problems"] += [p for p in found if decision.waiver(GUARD.policy, p, today) is None]


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
        member = GUARD.records.is_info_member
        for info in infos:
            if member(info.filename, "WHEEL"):
                text = zf.read(info).decode("utf-8", "replace")
                purelib = GUARD.sitefacts.root_is_purelib(text)
            if member(info.filename, "entry_points.txt"):
                scripts = GUARD.decision.console_scripts(zf.read(info).decode("utf-8", "replace"))
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
    return GUARD.sitefacts.script_files(scripts_dir, script, sys.version_info, GUARD.dirs)


def _note_member(zf, info, dest, effect):
    """Record the member's top-level import name and, for start-up candidates, its text."""
    found = GUARD.sitefacts.site_member(dest, GUARD.sites)
    if found is not None:
        effect["members"].add(found[0])
        if found[1]:
            data = zf.read(info)[:65536]
            effect["contents"][dest] = data.decode("utf-8", "replace")


def _manifest_lists(store, path):
    """Does the store's manifest list ``path`` as a layer `guard install` wrote? (True when
    the manifest cannot be read: unknown is not "never written".)"""
    import os

    try:
        files = _read_json(os.path.join(store, "manifest.json"))["files"]
        return path in files
    except (OSError, ValueError, KeyError, TypeError):
        return True


def _identity(policy, name, version, wheel):
    """A wheel with a vendor build's name and exact label must hold the vendor build's files
    (the baseline's digests): a relabelled community build is refused."""
    decision = GUARD.decision
    pin = policy["vendor"].get(_canonical(name))
    if pin is None or not decision.same_version(version, pin):
        return []
    baseline = GUARD.baseline()
    if GUARD.baseline_error:  # unknown is not the vendor build
        text = f"{name} {version}: {GUARD.baseline_error}, so it cannot be told apart from a "
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
    facts = GUARD.sitefacts
    paths = {k: getattr(scheme, k) for k in facts.SCHEME_KEYS}
    return facts.scheme(paths, home, GUARD.target_dir)


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
        f"dtkguard: {GUARD.error}; refusing to change this environment. Reinstall the guard "
        "with `dtkguard guard install` (or remove it with `dtkguard guard remove`).",
    )


def _override():
    """The reason ``DTKGUARD_OVERRIDE`` gives ("" also when the override-log module is
    missing: an override that cannot be recorded is none, the guard fails closed)."""
    import os

    log = GUARD.pipoverride
    return log.reason(os.environ) if log is not None else ""


def _token_recorded():
    """True once when dtkpip recorded this override itself (its one-time token)."""
    import os

    if GUARD.token is None:
        GUARD.token = GUARD.pipoverride.token_recorded(os.environ, GUARD.policy_path)
    return GUARD.token


def _record(reason, allowed):
    """Append the override to the override log (unless dtkpip did)."""
    if _token_recorded():
        return
    GUARD.pipoverride.record(GUARD.policy_path, reason, allowed, sys.argv)


def _summary(problems, limit=6):
    lines = [f"{p.message} [{p.rule}, {p.severity}]" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more")
    return "\n  ".join(lines)


def _today():
    import time

    return time.strftime("%Y-%m-%d", time.gmtime())


def _read_metadata(info):
    import os

    with open(os.path.join(info, "METADATA"), encoding="utf-8") as fh:
        return fh.read()


def _vendor_deps(policy, after):
    """``vendor-deps-broken`` problems the change to ``after`` ({name: version}) introduces."""
    try:
        from pip._vendor.packaging.requirements import Requirement
    except ImportError:  # pip without its vendored packaging: judged by `check` instead
        return []
    judge = GUARD.decision.judge_vendor_deps
    if not judge(GUARD.requires(), after, Requirement, pins=policy["vendor"]):
        return []  # nothing broken after the change: the baseline (a large file) is not read
    before = {k: v for k, (v, _) in GUARD.installed().items()}
    recorded = GUARD.sitefacts.baseline_versions(GUARD.baseline())
    if recorded is not None:  # only what broke since guard install (as check)
        before = recorded
    return GUARD.decision.judge_vendor_deps(
        GUARD.requires(), after, Requirement, before, pins=policy["vendor"]
    )


def judge(policy, items, files=None, removals=(), effects=None):
    """Problems of installing ``items`` ([(name, version)]) that write ``files`` ({name: paths},
    None when the destination is elsewhere) and remove the dists named in ``removals``."""
    installed = GUARD.installed()
    problems = []
    if files is not None:
        problems = _judge_here(policy, items, files, effects or {}, installed)
    today = _today()
    for name in removals:
        key = _canonical(name)
        if key in installed:
            problems += GUARD.decision.judge_moved_away(policy, key, installed[key][0], today)
    return problems


def _judge_here(policy, items, files, effects, installed):
    """Problems of an install into this interpreter: the dists and the files they write
    (`decide`), what ``MEMBER_JUDGES`` found in their wheels, the vendor builds' needs."""
    decision = GUARD.decision
    versions = {k: v for k, (v, _) in installed.items()}
    reference = decision.reference_release(policy, versions)
    facts = GUARD.env_facts()
    contents = {name: (e["contents"], e["members"]) for name, e in effects.items()}
    problems = decision.decide(policy, items, _today(), reference, files, facts, contents)
    for effect in effects.values():
        problems += effect["problems"]
    after = dict(versions)
    after.update((_canonical(n), v) for n, v in items if v)
    return problems + _vendor_deps(policy, after)


def _guard_install(reqs, home, root, prefix, user):
    """Judge ``reqs`` before pip changes anything; raise to refuse."""
    policy = GUARD.load_policy()
    reason = _override()
    items = [(req.name or "?", _req_version(req)) for req in reqs]
    if policy is None or not GUARD.copies_loaded():
        if not reason:
            raise _fail_closed()
        _record(reason, [f"{n} {v}" for n, v in items] + [GUARD.error])
        return
    touching, problems = _install_problems(policy, reqs, items, (home, root, prefix, user))
    _refuse_install(policy, problems, reason)
    GUARD.allowed.update(_canonical(n) for n, _ in items)
    if touching:
        GUARD.replacing.update((_canonical(n), v) for n, v in items)


def _install_problems(policy, reqs, items, where):
    """(does the install touch this interpreter, its problems); ``where``: pip's (home,
    root, prefix, user). An install elsewhere counts only for what pip removes from here."""
    touching, files, effects, unknown, identity = _wheels_of(policy, reqs, where)
    if not touching:
        removals = [req.name for req in reqs if getattr(req, "should_reinstall", False)]
        return False, judge(policy, [], None, removals)
    problems = judge(policy, items, files, (), effects) + identity + _built_changes()
    return True, problems + [_not_a_wheel(name) for name in unknown]


def _wheels_of(policy, reqs, where):
    """What the wheels of ``reqs`` do where pip puts them (``where``: (home, root, prefix,
    user)): (touching, {name: files}, {name: effect}, [names that are no wheel], identity
    problems)."""
    home, root, prefix, user = where
    default = home is None and root is None and prefix is None
    files, effects, unknown, identity = {}, {}, [], []
    touching = default
    for req in reqs:
        name = req.name or "?"
        scheme = _scheme(req, home, root, prefix, user)
        if default or any(p is None or _touches(p, GUARD.roots) for p in scheme.values()):
            touching = True
        wheel = getattr(req, "local_file_path", None)
        if wheel and str(wheel).endswith(".whl"):
            effects[name] = _wheel_effect(wheel, scheme)
            files[name] = effects[name]["paths"]
            identity += _identity(policy, name, _req_version(req), wheel)
        else:
            unknown.append(name)
    return touching, files, effects, unknown, identity


def _not_a_wheel(name):
    return GUARD.decision.Problem(
        "file-conflict",
        "high",
        _canonical(name),
        f"{name} is not a wheel (a legacy setup.py install or develop): its files cannot be "
        "judged before they are written; build a wheel first",
    )


def _refuse_install(policy, problems, reason):
    """Warn of what does not refuse; refuse what does, unless overridden (then recorded)."""
    blocking = GUARD.decision.refusals(problems)
    for p in problems:
        if not p.blocking:
            sys.stderr.write(f"dtkguard: warning: {p.message}\n")
    if blocking and not reason:
        text = "dtkguard: refusing to install:\n  " + _summary(blocking)
        raise _error("InstallationError", text + _footer(policy, [p.package for p in blocking]))
    if blocking:
        _record(reason, [p.message for p in blocking])


def _installed_as(key, pin):
    """Is ``key`` installed here at the policy's ``pin`` (the environment keeps it)?"""
    try:
        from importlib import metadata

        version = metadata.version(key)
    except Exception:
        return False
    decision = GUARD.decision
    return decision.same_version(version, pin) if decision is not None else version == pin


def _explain_conflict(exc, args):
    """dtkguard's words for a resolution that failed on the guard's vendor pins, or None."""
    policy = GUARD.policy
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

    files = policy.get("files") or [GUARD.policy_path]
    state = os.path.dirname(GUARD.policy_path or ".")
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
    """``InstallCommand.run`` (`_guarded_install_run`) and ``install_given_reqs`` (as bound in
    the install command module and in ``pip._internal.req``: `_guarded_install_given`)."""
    original = getattr(module, "install_given_reqs", None)
    command = getattr(module, "InstallCommand", None)
    run = getattr(command, "run", None)
    if command is None or run is None:
        raise AttributeError("pip's InstallCommand.run is gone")
    missing = _missing_parts(original, command)
    if missing:
        GUARD.lacks(*missing)
    if not getattr(run, "_dtkguard", False):

        def guarded_run(self, options, args):
            return _guarded_install_run(run, self, options, args, missing)

        guarded_run._dtkguard = True
        command.run = guarded_run
    if original is None or getattr(original, "_dtkguard", False):
        return
    install_given_reqs = _guarded_install_given(original)
    module.install_given_reqs = install_given_reqs
    import pip._internal.req as req_package

    if getattr(req_package, "install_given_reqs", None) is original:
        req_package.install_given_reqs = install_given_reqs  # 26.x in-process build deps


def _guarded_install_run(run, command, options, args, missing):
    """pip's ``InstallCommand.run`` (``run``) inside the guard: learns the real ``--target``,
    answers dtkpip's channel, arms the build journal, explains a resolution that failed on
    the guard's pins, and refuses what builds changed (`_after_run`)."""
    target = getattr(options, "target_dir", None)
    GUARD.target_dir = target
    _dtkpip_attach(options)
    _keep_finder(command)
    if GUARD.error is not None and missing and not _override():
        raise _fail_closed()
    _snapshot_for(options, target)
    from pip._internal.exceptions import DistributionNotFound

    try:
        result = run(command, options, args)
    except DistributionNotFound as exc:
        _after_run()
        text = _explain_conflict(exc, list(args))
        if text is None:
            raise
        if _dtkpip_tell(b"conflict " + _conflict_plan(exc).encode()):
            raise  # dtkpip explains it in its own words
        raise type(exc)(f"{exc}{text}") from exc
    except BaseException:
        _after_run()
        raise
    _after_run()
    return result


def _guarded_install_given(original):
    """pip's ``install_given_reqs`` judging the set it is given first (`_before_install`)."""
    import inspect

    signature = inspect.signature(original)

    def install_given_reqs(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        reqs = list(a.get("requirements") or ())
        _before_install(reqs, a)
        return original(*args, **kwargs)

    install_given_reqs._dtkguard = True
    return install_given_reqs


def _before_install(reqs, a):
    """Judge an install (``a``: pip's bound arguments); in dtkpip's one run into this
    environment, what builds changed is put back first, then dtkpip is asked."""
    if GUARD.channel is not None and all(a.get(k) is None for k in ("home", "root", "prefix")):
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
        if GUARD.load_policy() is None or not GUARD.copies_loaded():
            if not _override():
                raise _fail_closed()
            _record(_override(), [f"pip {self.name} with builds unjudged", GUARD.error])
        _arm(GUARD.load_policy())
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
    GUARD.channel = (w, r)


def _keep_finder(command):
    """In dtkpip's one run, keep the package finder pip builds (`_conflict_plan` asks it)."""
    build = getattr(command, "_build_package_finder", None)
    if GUARD.channel is None or build is None:
        return

    def keep(*args, **kwargs):
        GUARD.finder = build(*args, **kwargs)
        return GUARD.finder

    command._build_package_finder = keep


def _conflict_plan(exc):
    """What dtkpip needs of a resolution that failed on the vendor pins to explain it without
    planning the request again, as JSON (pip's report's shape; ``{}`` when not at hand): the
    dists of the causes' parents, and for a requirement of the request itself the release
    pip's finder picks for it without the pins, where that is a local wheel."""
    import json

    try:
        from pip._vendor.packaging.markers import default_environment

        cause = exc.__cause__ if exc.__cause__ is not None else exc.__context__
        items = {}
        for info in getattr(cause, "causes", None) or ():
            req, parent = info[0], info[1]
            if parent is not None:
                link = getattr(parent, "source_link", None)
                dist, url = getattr(parent, "dist", None), getattr(link, "url_without_fragment", "")
            else:
                dist, url = _unpinned(req)
            if dist is None:
                continue
            meta = dict(dist.metadata_dict)
            meta.pop("description", None)
            items[(meta.get("name"), meta.get("version"))] = {
                "metadata": meta,
                "download_info": {"url": url},
            }
        return json.dumps({"environment": default_environment(), "install": list(items.values())})
    except Exception:
        return "{}"


def _unpinned(req):
    """(dist, URL) of the release pip's finder picks for ``req`` (a requirement of the
    request) ignoring the pins, when it is a local wheel; (None, "") otherwise."""
    finder = GUARD.finder
    ireq = getattr(req, "_ireq", None)
    spec = getattr(getattr(ireq, "req", None), "specifier", None)
    if finder is None or spec is None:
        return None, ""
    best = finder.find_best_candidate(req.project_name, spec).best_candidate
    link = getattr(best, "link", None)
    if link is None or not link.is_wheel or not link.is_file:
        return None, ""
    from pip._internal.metadata import get_wheel_distribution
    from pip._internal.metadata.base import FilesystemWheel

    wheel = FilesystemWheel(link.file_path)
    return get_wheel_distribution(wheel, req.project_name), link.url_without_fragment


def _dtkpip_tell(message):
    """Send one line to dtkpip; False when no dtkpip is listening."""
    import os

    channel = GUARD.channel
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

    if GUARD.channel is None:
        return
    wheels = {
        _canonical(req.name or "?"): str(getattr(req, "local_file_path", None) or "")
        for req in reqs
    }
    answer = b""
    if _dtkpip_tell(b"plan " + json.dumps(wheels).encode()):
        (w, r), GUARD.channel = GUARD.channel, None
        with contextlib.suppress(OSError):
            os.close(w)
            with os.fdopen(r, "rb") as fh:
                answer = fh.readline()
    GUARD.channel = None
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
    """Every file a removal deletes, resolved: pip's paths with folders expanded, and the
    ``.pth`` files it edits."""
    paths = list(getattr(pathset, "_paths", ())) + list(getattr(pathset, "_pth", {}) or ())
    return GUARD.sitefacts.removal_files(paths)


def _judge_removal(policy, name, version, pathset):
    """Why removing dist ``name`` (with ``pathset``) is refused: [] when it may go."""
    decision = GUARD.decision
    replacement = GUARD.replacing.get(name)
    files = _removal_files(pathset)
    facts = GUARD.env_facts()
    found = decision.judge_uninstall(policy, name, version, files, facts, _today(), replacement)
    if replacement is None:
        after = {k: v for k, (v, _) in GUARD.installed().items()}
        for gone in (*GUARD.removed, name):
            after.pop(gone, None)
        found += _vendor_deps(policy, after)
    return [p.message + f" [{p.rule}]" for p in decision.refusals(found)]


def _snapshot_for(options, target):
    """Take the build snapshot when this run's builds could write into this interpreter: any
    run but the ones into ``--prefix``/``--root`` elsewhere (pip's build environments). A dry
    run and a ``--target`` install build packages too."""
    here = [getattr(options, k, None) for k in ("prefix_path", "root_path")]
    roots = GUARD.roots
    if roots is None or all(p is None or _touches(_real(p), roots) for p in here):
        _arm(GUARD.load_policy())


def _arm(policy):
    """Take the build snapshot just before pip starts its first child process: every build
    (a PEP 517 backend, ``setup.py``, pip installing build dependencies) runs in one, and a
    run that starts none (wheels only) runs no build code and needs no snapshot."""
    import subprocess

    GUARD.armed = policy
    init = subprocess.Popen.__init__
    if getattr(init, "_dtkguard", False):
        return

    def guarded_init(self, *args, **kwargs):
        if not GUARD.user_agent:
            armed, GUARD.armed = GUARD.armed, None
            if armed is not None and GUARD.snapshot is None:
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
        GUARD.user_agent = True
        try:
            return original(*args, **kwargs)
        finally:
            GUARD.user_agent = False

    user_agent._dtkguard = True
    session.user_agent = user_agent


def _take_snapshot(policy):
    """Before pip starts its first child (`_arm`): the build journal (`_dtkguard_buildwatch`)
    of what builds must not touch, and the guard's store (read now, before any build code
    ran), where the bytes to put back come from."""
    if policy is None or not GUARD.copies_loaded():
        return
    watch = GUARD.buildwatch
    paths = watch.watched_paths(GUARD.protected_table(), GUARD.vendor_files(), GUARD.sites)
    GUARD.snapshot = watch.snapshot(paths, _store_dir())


def _built_changes():
    """Problems for what changed since `_take_snapshot` (code run by a build: setup.py, a
    PEP 517 backend, build dependencies), before pip installs anything. What changed is put
    back first (`_put_back`): the refusal leaves the environment as it was."""
    snap = GUARD.snapshot
    GUARD.snapshot = None  # judged once: after this, pip's own install writes here
    GUARD.armed = None
    if not snap:
        return []
    changed = GUARD.buildwatch.changed(snap)
    if not changed:
        return []
    restored, failed = _put_back(snap, changed)
    msg = GUARD.buildwatch.changed_text(changed, restored, failed, sys.executable)
    return [GUARD.decision.Problem("vendor-files-changed", "critical", "build", msg)]


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

    here = os.path.dirname(GUARD.policy_path or ".")
    try:
        with open(os.path.join(here, "store.json"), encoding="utf-8") as fh:
            store = json.load(fh).get("store")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(store, str) or not os.path.isdir(store) or _untrusted(store):
        return None
    return store


def _put_back(snap, changed):
    """Put back what the build journal ``snap`` saw change (`_dtkguard_buildwatch.put_back`),
    from the store and the vendor builds' wheels: (paths put back, [(path, why not)])."""
    return GUARD.buildwatch.put_back(snap, changed, _put_back_sources(snap.get("store")))


def _put_back_sources(store):
    """Where a vendor file's bytes come back from (``_dtkguard_buildwatch.Sources``): the
    store's baseline and copies, the vault's and the policy's find-links' vendor wheels."""

    def owner_of(path):
        return GUARD.sitefacts.owner_of(path, GUARD.vendor_rows())

    def is_build(name, key, version):
        parts = GUARD.sitefacts.wheel_file_name(name)
        if parts is None or _canonical(parts[0]) != key:
            return False
        return GUARD.decision.same_version(parts[1], version)

    return GUARD.buildwatch.Sources(store, owner_of, is_build, GUARD.policy.get("find_links"))


def _patch_uninstall(module):
    """``UninstallPathSet.from_dist``: every removal pip plans is judged (`_guard_removal`)
    before pip deletes anything; a pip without it refuses every removal (``remove``)."""
    cls = getattr(module, "UninstallPathSet", None)
    original = getattr(cls, "from_dist", None)
    if original is None:
        GUARD.lacks("UninstallPathSet.from_dist")
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
        return _guard_removal(func, klass, dist)

    from_dist._dtkguard = True
    cls.from_dist = classmethod(from_dist)


def _guard_removal(func, klass, dist):
    """pip's path set of removing ``dist`` (``func``: pip's ``from_dist``), judged by the
    decision core (`_judge_removal`): refused (raised) unless overridden, then recorded."""
    name = _canonical(getattr(dist, "canonical_name", None) or getattr(dist, "project_name", ""))
    policy = GUARD.load_policy()
    reason = _override()
    if policy is None or not GUARD.copies_loaded():
        if not reason:
            raise _fail_closed("UninstallationError")
        _record(reason, [f"remove {name}", GUARD.error])
        return func(klass, dist)
    pathset = func(klass, dist)
    problems = _judge_removal(policy, name, getattr(dist, "version", ""), pathset)
    if problems and not reason:
        raise _error(
            "UninstallationError",
            "dtkguard: refusing " + "; ".join(problems) + _footer(policy, [name]),
        )
    if problems and name not in GUARD.allowed:
        _record(reason, problems)
    if name not in GUARD.replacing:
        GUARD.removed.add(name)
    return pathset
