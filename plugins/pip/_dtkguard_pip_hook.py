"""dtkguard's guard inside pip: veto installs and uninstalls that would clobber vendor builds.

Installed by ``dtkguard guard install`` as this module, a copy of ``dtkguard/decision.py``
beside it (``_dtkguard_decision.py``, the one place that decides) and a one-line ``.pth`` file
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
* ``InstallCommand.run``: learns the real ``--target`` directory, and explains a resolution that
  failed on the guard's constraints in dtkguard's words;
* ``UninstallPathSet.from_dist``: every removal; a vendor build may only be removed while the
  exact same build replaces it, and no removal may delete files of a vendor build.

If pip lacks one of these internals, or the policy or the decision copy cannot be read, every
install and uninstall is refused (fail closed). ``DTKGUARD_OVERRIDE="reason"`` lets an install
through and records it in ``overrides.jsonl`` beside the policy.
"""

import contextlib
import sys

_MODULES = ("pip._internal.commands.install", "pip._internal.req.req_uninstall")
DECISION = "_dtkguard_decision.py"
#: the copy of ``dtkguard/elf.py`` beside this module: what a wheel's native code links
ELF = "_dtkguard_elf.py"
PTH = "dtkguard-pip-hook.pth"
_state = {
    "policy_path": None,
    "policy": None,
    "error": None,
    "allowed": set(),
    "target_dir": None,
    "decision": None,
    "owners": None,
    "token": None,
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
            else:
                _patch_uninstall(module)
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
    import getpass  # noqa: F401
    import hashlib  # noqa: F401
    import inspect  # noqa: F401
    import json  # noqa: F401
    import os  # noqa: F401
    import site  # noqa: F401
    import sysconfig  # noqa: F401
    import time  # noqa: F401
    import zipfile  # noqa: F401
    import zlib  # noqa: F401

    import pip._internal.exceptions
    import pip._internal.locations  # noqa: F401

    _load_decision()
    _load_elf()
    _load_policy()
    _roots()


def _here():
    import os

    return os.path.dirname(os.path.realpath(__file__))


def _load_decision():
    """The copy of ``dtkguard/decision.py`` beside this module, loaded by path (pip's build
    environments take site-packages off ``sys.path``)."""
    if _state["decision"] is not None:
        return _state["decision"]
    import importlib.util
    import os

    path = os.path.join(_here(), DECISION)
    try:
        spec = importlib.util.spec_from_file_location("_dtkguard_decision", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.decide  # noqa: B018  (the entry point must exist)
    except Exception as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else repr(exc)
        _changed(f"the guard's decision module {path} is missing or broken ({why})")
        return None
    _state["decision"] = module
    return module


def _load_elf():
    """The copy of ``dtkguard/elf.py`` beside this module, or None (then native code is not
    judged before install, and pip says so; `check` still reads it after)."""
    if "elf" in _state:
        return _state["elf"]
    import importlib.util
    import os

    path = os.path.join(_here(), ELF)
    try:
        spec = importlib.util.spec_from_file_location("_dtkguard_elf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.wheel_linkages  # noqa: B018  (the entry point must exist)
    except Exception as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else repr(exc)
        _state["elf_error"] = f"the guard's ELF reader {path} is missing or broken ({why})"
        module = None
    _state["elf"] = module
    return module


def _binaries(policy, name, wheel):
    """Problems of the shared objects wheel ``wheel`` of dist ``name`` ships, judged by what
    they link (the decision's ``judge_binary``) before pip unpacks anything."""
    import zipfile

    decision, elf = _state["decision"], _state.get("elf")
    if elf is None or not hasattr(decision, "judge_binary"):
        why = _state.get("elf_error") or "the guard's decision module predates judge_binary"
        sys.stderr.write(f"dtkguard: warning: native code of {name} not judged: {why}\n")
        return []
    key = _canonical(name)
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = elf.wheel_linkages(zf)
    except (OSError, zipfile.BadZipFile) as exc:
        text = f"{name}: {wheel} cannot be read as a wheel ({exc})"
        return [decision.Problem("binary-unreadable", "medium", key, text)]
    out = []
    for member, linkage, error in members:
        if linkage is None:
            text = f"{member} of {name} could not be judged: {error}"
            out.append(decision.Problem("binary-unreadable", "medium", key, text))
            continue
        out += decision.judge_binary(policy, name, member, linkage.needed, linkage.soname)
    today = _today()
    return [p for p in out if decision.waiver(policy, p, today) is None]


def _load_policy():
    if _state["policy"] is not None or _state["error"] is not None:
        return _state["policy"]
    import json

    path = _state["policy_path"]
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
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
    """{canonical name: (version, dist-info folder)} of the dists in this interpreter's sites."""
    import os

    out = {}
    for site in _state.get("sites") or ():
        try:
            names = os.listdir(site)
        except OSError:
            continue
        for entry in names:
            if entry.endswith(".dist-info"):
                name, _, version = entry[: -len(".dist-info")].partition("-")
                out.setdefault(_canonical(name), (version, os.path.join(site, entry)))
    return out


def _owners(policy):
    """{absolute file: vendor dist} from the installed RECORDs of the vendor builds."""
    if _state["owners"] is not None:
        return _state["owners"]
    import csv
    import os

    owners = {}
    for key, (_, info) in _installed().items():
        if key not in policy["vendor"]:
            continue
        base = os.path.dirname(info)
        try:
            with open(os.path.join(info, "RECORD"), encoding="utf-8", newline="") as fh:
                for row in csv.reader(fh):
                    if row and row[0]:
                        path = os.path.normpath(os.path.join(base, row[0]))
                        if not path.endswith((".pyc", "/INSTALLER", "/REQUESTED")):
                            owners[path] = key
        except OSError:
            continue
    _state["owners"] = owners
    return owners


#: the guard's modules beside this one (their byte code is the guard's too)
_GUARD_MODULES = (
    "_dtkguard_pip_hook",
    "_dtkguard_decision",
    "_dtkguard_elf",
    "_dtkguard_tripwire",
    "_dtkguard_finder",
)


def _guard_files():
    import os

    here = _here()
    state = os.path.dirname(_real(_state["policy_path"]) or here)
    return [
        os.path.join(here, "_dtkguard_pip_hook.py"),
        os.path.join(here, DECISION),
        os.path.join(here, ELF),
        os.path.join(here, PTH),
        os.path.join(here, "_dtkguard_tripwire.py"),
        os.path.join(here, "_dtkguard_finder.py"),
        *(
            os.path.join(here, "__pycache__", f"{module}.{tag}{opt}.pyc")
            for module in _GUARD_MODULES
            for tag in (sys.implementation.cache_tag,)
            for opt in ("", ".opt-1", ".opt-2")
        ),
        state,
        os.path.join(os.path.dirname(state), "pip.conf"),
    ]


def _wheel_files(wheel, scheme):
    """Where pip would write each member of ``wheel`` under ``scheme`` (its zip listing, not its
    RECORD: pip installs what the zip holds). Members under ``*.data/<key>/`` are judged at
    both places pip might put them."""
    import os
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        purelib = True
        for name in names:
            if name.count("/") == 1 and name.endswith(".dist-info/WHEEL"):
                text = zf.read(name).decode("utf-8", "replace").lower()
                purelib = "root-is-purelib: true" in text
    lib = scheme["purelib"] if purelib else scheme["platlib"]
    out = []
    for name in names:
        if name.endswith("/"):
            continue
        out.append(os.path.normpath(os.path.join(lib, name)))
        top, _, rest = name.partition("/")
        if top.endswith(".data") and rest:
            key, _, sub = rest.partition("/")
            if key in scheme and sub:
                out.append(os.path.normpath(os.path.join(scheme[key], sub)))
    return out


def _baseline():
    """The baseline `guard install` recorded beside the policy ({} when there is none)."""
    if "baseline" not in _state:
        import json
        import os

        path = os.path.join(os.path.dirname(_state["policy_path"] or "."), "baseline.json")
        try:
            with open(path, encoding="utf-8") as fh:
                _state["baseline"] = json.load(fh)
        except FileNotFoundError:
            _state["baseline"] = {}
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
    state = os.path.dirname(_state["policy_path"] or ".")
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


def _record(reason, allowed):
    """Append the override to overrides.jsonl beside the policy (unless dtkpip did)."""
    import getpass
    import json
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
    path = os.path.join(os.path.dirname(_state["policy_path"] or "."), "overrides.jsonl")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")


def _summary(problems, limit=6):
    lines = [f"{p.message} [{p.rule}, {p.severity}]" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more")
    return "\n  ".join(lines)


def _today():
    import time

    return time.strftime("%Y-%m-%d", time.gmtime())


def judge(policy, items, files=None, removals=()):
    """Problems of installing ``items`` ([(name, version)]) that write ``files`` ({name: paths},
    None when the destination is elsewhere) and remove the dists named in ``removals``."""
    decision = _state["decision"]
    installed = _installed()
    versions = {k: v for k, (v, _) in installed.items()}
    reference = decision.reference_release(policy, versions)
    problems = []
    if files is not None:
        owners = _owners(policy) if files else {}
        problems = decision.decide(
            policy, items, _today(), reference, files, owners, _guard_files(), _state["sites"]
        )
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
    if policy is None or _state["decision"] is None:
        if not reason:
            raise _fail_closed()
        _record(reason, [f"{n} {v}" for n, v in items] + [_state["error"]])
        return
    roots = _roots()
    default = home is None and root is None and prefix is None
    files, unknown, identity = {}, [], []
    touching = default
    for req in reqs:
        scheme = _scheme(req, home, root, prefix, user)
        if default or any(p is None or _touches(p, roots) for p in scheme.values()):
            touching = True
        wheel = getattr(req, "local_file_path", None)
        if wheel and str(wheel).endswith(".whl"):
            files[req.name or "?"] = _wheel_files(wheel, scheme)
            identity += _identity(policy, req.name or "?", _req_version(req), wheel)
            identity += _binaries(policy, req.name or "?", wheel)
        else:
            unknown.append(req.name or "?")
    removals = [req.name for req in reqs if getattr(req, "should_reinstall", False)]
    if not touching:  # elsewhere: only what pip removes from here counts
        problems = judge(policy, [], None, removals)
    else:
        problems = judge(policy, items, files) + identity
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
        lines.append(f"{who} {spec}; this environment keeps {key} {pin}")
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


def _patch_install(module):
    import inspect

    original = getattr(module, "install_given_reqs", None)
    command = getattr(module, "InstallCommand", None)
    run = getattr(command, "run", None)
    if command is None or run is None:
        raise AttributeError("pip's InstallCommand.run is gone")
    missing = [
        name
        for name, obj in (
            ("install_given_reqs", original),
            ("InstallCommand._handle_target_dir", getattr(command, "_handle_target_dir", None)),
            ("pip._internal.locations.get_scheme", _get_scheme()),
        )
        if obj is None
    ]
    if missing:
        _lacks(*missing)
    if not getattr(run, "_dtkguard", False):

        def guarded_run(self, options, args):
            target = getattr(options, "target_dir", None)
            _state["target_dir"] = target
            if _state["error"] is not None and missing and not _override():
                raise _fail_closed()
            from pip._internal.exceptions import DistributionNotFound

            try:
                return run(self, options, args)
            except DistributionNotFound as exc:
                text = _explain_conflict(exc, list(args))
                if text is None:
                    raise
                raise type(exc)(f"{exc}{text}") from exc

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
        _guard_install(reqs, a.get("home"), a.get("root"), a.get("prefix"), a.get("use_user_site"))
        return original(*args, **kwargs)

    install_given_reqs._dtkguard = True
    module.install_given_reqs = install_given_reqs
    import pip._internal.req as req_package

    if getattr(req_package, "install_given_reqs", None) is original:
        req_package.install_given_reqs = install_given_reqs  # 26.x in-process build deps


def _get_scheme():
    try:
        from pip._internal.locations import get_scheme
    except ImportError:
        return None
    return get_scheme


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
        if name in _state["allowed"]:
            return func(klass, dist)
        policy = _load_policy()
        reason = _override()
        if policy is None or _state["decision"] is None:
            if not reason:
                raise _fail_closed("UninstallationError")
            _record(reason, [f"remove {name}", _state["error"]])
            return func(klass, dist)
        pin = policy["vendor"].get(name)
        problems = []
        if pin is not None:
            problems.append(
                f"removing {name} {getattr(dist, 'version', '')} (the vendor build is {pin})"
            )
        pathset = func(klass, dist)
        owners = _owners(policy)
        hit = sorted(
            p for p in getattr(pathset, "_paths", ()) if owners.get(_real(p), name) != name
        )
        if hit:
            problems.append(
                f"removing {name} would delete {hit[0]}"
                + (f" and {len(hit) - 1} more" if len(hit) > 1 else "")
                + f", files of the vendor build {owners[_real(hit[0])]}"
            )
        if problems and not reason:
            raise _error(
                "UninstallationError",
                "dtkguard: refusing " + "; ".join(problems) + _footer(policy, [name]),
            )
        if problems:
            _record(reason, problems)
        return pathset

    from_dist._dtkguard = True
    cls.from_dist = classmethod(from_dist)
