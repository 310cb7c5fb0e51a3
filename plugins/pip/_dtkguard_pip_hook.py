"""dtkguard's guard inside pip: veto installs and uninstalls that would clobber vendor builds.

Installed by ``dtkguard guard install`` as this module plus a one-line ``.pth`` file in the
target's site-packages. Standard library only. At interpreter start the ``.pth`` line only
inserts a tiny meta-path finder (this module is not even imported); the guard wakes up
when pip imports ``pip._internal.commands.install`` or
``pip._internal.req.req_uninstall`` and then wraps:

* ``install_given_reqs`` as bound in the install command module: the set pip is about to
  install, judged against the compiled vendor pins (full local labels) and deny patterns;
* ``UninstallPathSet.from_dist``: every removal; a vendor build may only be removed while the
  exact same build replaces it.

Installs into another place (``--target``, ``--prefix``, ``--root``, and therefore pip's
build-isolation environments) are left alone. ``DTKGUARD_OVERRIDE="reason"`` lets an install
through and records it in ``overrides.jsonl`` beside the policy.
"""

import sys

_MODULES = ("pip._internal.commands.install", "pip._internal.req.req_uninstall")
_state = {"policy_path": None, "policy": None, "error": None, "allowed": set(), "external": False}


def activate(policy_path):
    """Watch for pip's modules (the .pth line does the same without importing this module)."""
    _state["policy_path"] = policy_path
    if not any(getattr(f, "_dtkguard", 0) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


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


class _Finder:
    """The same finder as the .pth line's, for callers of :func:`activate`."""

    _dtkguard = 1

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _MODULES:
            return None
        return find_spec(fullname, path, target, _state["policy_path"])


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
            _state["error"] = f"the dtkguard hook could not attach to pip: {exc!r}"


def _prepare():
    """Import now everything the guard needs later: pip 26.3 blocks imports during install."""
    import fnmatch  # noqa: F401
    import getpass  # noqa: F401
    import json  # noqa: F401
    import os  # noqa: F401
    import time  # noqa: F401

    import pip._internal.exceptions
    import pip._vendor.packaging.version  # noqa: F401  (every supported pip vendors it)

    _load_policy()


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
        _state["error"] = f"the guard policy {path} is missing or unreadable ({why})"
    return _state["policy"]


def _canonical(name):
    out, prev = [], False
    for ch in (name or "").strip().lower():
        if ch in "-_.":
            if not prev:
                out.append("-")
            prev = True
        else:
            out.append(ch)
            prev = False
    return "".join(out)


def _same_version(a, b):
    try:
        from pip._vendor.packaging.version import Version

        return Version(a) == Version(b)
    except Exception:
        return str(a) == str(b)


def _is_vendor_label(version):
    local = str(version).partition("+")[2].lower()
    return any(part.startswith(("das", "dtk")) for part in local.replace("_", ".").split("."))


def _deny_rule(policy, name):
    import fnmatch

    for rule in policy["deny"]:
        if fnmatch.fnmatchcase(name, rule.get("pattern", "")):
            return rule
    return None


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


def _fail_closed():
    return _error(
        "InstallationError",
        f"dtkguard: {_state['error']}; refusing to change this environment. Reinstall the guard "
        "with `dtkguard guard install` (or remove it with `dtkguard guard remove`).",
    )


def _override():
    import os

    return os.environ.get("DTKGUARD_OVERRIDE", "").strip()


def _record(reason, allowed):
    """Append the override to overrides.jsonl beside the policy (unless dtkpip already did)."""
    import getpass
    import json
    import os
    import time

    if os.environ.get("DTKGUARD_OVERRIDE_RECORDED"):
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


def judge(policy, items):
    """Problems of installing ``items`` ([(name, version)]) under ``policy``:
    [(canonical name, text)], vendor builds first."""
    vendor, denied = [], []
    for raw_name, version in items:
        name = _canonical(raw_name)
        pin = policy["vendor"].get(name)
        if pin is not None:
            if version is None or not _same_version(version, pin):
                text = f"{raw_name} {version or '(unknown version)'} would replace the vendor "
                vendor.append((name, text + f"build {name} {pin}"))
            continue
        rule = _deny_rule(policy, name)
        if rule is not None and not (rule.get("vendor_builds_ok") and _is_vendor_label(version)):
            denied.append((name, f"{raw_name} {version} is denied: {rule.get('reason', '')}"))
    return vendor + denied


def _summary(problems, limit=6):
    lines = [text for _, text in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more")
    return "\n  ".join(lines)


def _req_version(req):
    try:
        return str(req.metadata["Version"])
    except Exception:
        pass
    dist = getattr(req, "satisfied_by", None)
    return str(getattr(dist, "version", "")) or None


def _patch_install(module):
    original = getattr(module, "install_given_reqs", None)
    if original is None or getattr(original, "_dtkguard", False):
        return

    def install_given_reqs(*args, **kwargs):
        if any(kwargs.get(k) for k in ("home", "prefix", "root")):
            _state["external"] = True  # --target/--prefix/--root, pip's build environments
            return original(*args, **kwargs)
        reqs = list(args[0] if args else kwargs.get("requirements", ()))
        items = [(req.name or "?", _req_version(req)) for req in reqs]
        policy = _load_policy()
        reason = _override()
        if policy is None:
            if not reason:
                raise _fail_closed()
            _record(reason, [f"{n} {v}" for n, v in items] + [_state["error"]])
        else:
            problems = judge(policy, items)
            if problems and not reason:
                text = "dtkguard: refusing to install:\n  " + _summary(problems)
                raise _error("InstallationError", text + _footer(policy, [n for n, _ in problems]))
            if problems:
                _record(reason, [text for _, text in problems])
            _state["allowed"].update(_canonical(n) for n, _ in items)
        return original(*args, **kwargs)

    install_given_reqs._dtkguard = True
    module.install_given_reqs = install_given_reqs


def _patch_uninstall(module):
    cls = getattr(module, "UninstallPathSet", None)
    original = getattr(cls, "from_dist", None)
    if original is None or getattr(original, "_dtkguard", False):
        return
    func = original.__func__

    def from_dist(klass, dist):
        name = _canonical(
            getattr(dist, "canonical_name", None) or getattr(dist, "project_name", "")
        )
        if _state["external"] or name in _state["allowed"]:
            return func(klass, dist)
        policy = _load_policy()
        reason = _override()
        if policy is None:
            if not reason:
                raise _fail_closed()
            _record(reason, [f"remove {name}", _state["error"]])
            return func(klass, dist)
        pin = policy["vendor"].get(name)
        if pin is not None:
            problem = f"removing {name} {getattr(dist, 'version', '')} (the vendor build is {pin})"
            if not reason:
                raise _error(
                    "UninstallationError",
                    f"dtkguard: refusing {problem}" + _footer(policy, [name]),
                )
            _record(reason, [problem])
        return func(klass, dist)

    from_dist._dtkguard = True
    cls.from_dist = classmethod(from_dist)
