"""Already satisfied: the one decision "the target environment already holds what this
``install`` asks for, so pip/uv would change nothing", taken by dtkpip and dtkuv before any
pip or uv run and without running any of the target's code.

The installed dists are read from the target's site folders (``.dist-info`` ``METADATA``); the
interpreter's paths and marker values come from dtkguard's interpreter cache
(`dtkguard.env.interp_cache`). The answer is conservative: `decide` says ``None`` ("don't
know": the front-end runs its usual path) for anything it does not fully understand, an option
it does not know, a config file or variable that may change the answer, a path, URL or
requirements file, a damaged or duplicated dist, a dependency it cannot find installed at a
satisfying version, a constraint the installed version breaks. When it holds, the front-end
says what pip/uv says of a satisfied install and exits 0, with nothing run and nothing written.

pip's lines come in the order pip's resolver creates its candidates: the requested ones in the
order given, then the dependencies of each dist in the order pip pins them (its preference:
pip 22-24 by depth, pip 25-26 by upper bounds; other pips, and extras, are "don't know" when
dependencies are followed).
"""

from __future__ import annotations

import os
import sys

from dtkguard.decision import canonical
from dtkguard.guard.pep508 import Requirement, Unsure, Version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

    from dtkguard.env.interpreter import Interpreter


class Unknown(Exception):
    """The fast path does not know: run pip/uv as usual."""


# -- options -----------------------------------------------------------------------------------

#: pip ``install`` options without a value that change nothing of a satisfied answer
_PIP_FLAGS = frozenset(
    (
        "--no-deps", "--no-index", "--disable-pip-version-check", "--no-input", "--no-color",
        "--no-cache-dir", "--no-compile", "--compile", "--no-warn-script-location",
        "--no-warn-conflicts", "--pre", "--prefer-binary", "--no-build-isolation",
        "--use-pep517", "--no-use-pep517", "--check-build-dependencies",
        "--break-system-packages", "--no-python-version-warning",
    )
)  # fmt: skip
#: pip options with a value that change nothing of it (the index options only say where
#: pip would look: their "Looking in ..." line is said)
_PIP_VALUED = frozenset(
    (
        "-f", "--find-links", "-i", "--index-url", "--extra-index-url", "-c", "--constraint",
        "--no-binary", "--only-binary", "--progress-bar", "--root-user-action", "--cache-dir",
        "--timeout", "--retries", "--exists-action", "--trusted-host", "--cert",
    )
)  # fmt: skip
#: pip.conf keys / ``PIP_*`` variables that change nothing of a satisfied answer
_PIP_CONFIG_OK = frozenset(
    (
        "disable-pip-version-check", "no-input", "no-color", "no-cache-dir", "cache-dir",
        "no-compile", "compile", "timeout", "retries", "progress-bar", "root-user-action",
        "no-warn-script-location", "no-warn-conflicts", "trusted-host", "cert",
        "prefer-binary", "no-build-isolation", "break-system-packages",
        "find-links", "index-url", "extra-index-url", "no-index", "constraint", "config-file",
        "exists-action", "yes", "only-binary", "no-binary", "pre", "default-timeout",
    )
)  # fmt: skip

#: uv ``pip install`` flags that change nothing of a satisfied answer
_UV_FLAGS = frozenset(
    (
        "--no-deps", "--no-index", "--no-cache", "-n", "--offline", "--no-build",
        "--no-progress", "--native-tls", "--no-config", "--break-system-packages", "--pre",
        "--no-build-isolation", "--compile-bytecode", "--compile",
    )
)  # fmt: skip
_UV_VALUED = frozenset(
    (
        "-f", "--find-links", "-i", "--index-url", "--extra-index-url", "--index",
        "--default-index", "-c", "--constraint", "--constraints", "--cache-dir", "-p",
        "--python", "--no-binary", "--only-binary", "--color", "--link-mode",
    )
)  # fmt: skip
#: ``UV_*`` variables that change nothing of it
_UV_ENV_OK = frozenset(
    (
        "UV_NO_CONFIG", "UV_CONFIG_FILE", "UV_CACHE_DIR", "UV_NO_CACHE", "UV_PYTHON_DOWNLOADS",
        "UV_OFFLINE", "UV_NO_PROGRESS", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS",
        "UV_INDEX", "UV_DEFAULT_INDEX", "UV_NATIVE_TLS", "UV_LINK_MODE", "UV_NO_BUILD",
        "UV_COMPILE_BYTECODE", "UV_PYTHON", "UV_HTTP_TIMEOUT", "UV_CONCURRENT_DOWNLOADS",
        "UV_NO_INDEX",
    )
)  # fmt: skip
#: uv.toml keys (top level or in ``[pip]``) that change nothing of it
_UV_TOML_OK = frozenset(
    (
        "constraint-dependencies", "index-url", "extra-index-url", "find-links", "index",
        "no-index", "cache-dir", "native-tls", "offline", "no-cache", "link-mode",
        "python-downloads", "no-build", "compile-bytecode", "constraint",
    )
)  # fmt: skip


def _is_quiet(arg: str) -> bool:
    return arg == "--quiet" or (arg.startswith("-q") and set(arg[1:]) == {"q"})


def _split_options(
    args: list[str], flags: frozenset[str], valued: frozenset[str]
) -> tuple[list[tuple[str, str]], list[str], int]:
    """(options with their values, requirement arguments, -q count); `Unknown` on any option
    not in ``flags``/``valued``."""
    options: list[tuple[str, str]] = []
    positionals: list[str] = []
    quiet = 0
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            positionals.append(arg)
            continue
        if _is_quiet(arg):
            quiet += 1 if arg == "--quiet" else len(arg) - 1
            continue
        name, eq, value = arg.partition("=")
        if name in flags and not eq:
            options.append((name, ""))
            continue
        if name not in valued:
            if not name.startswith("--") and name[:2] in valued and len(name) > 2:
                options.append((name[:2], arg[2:]))  # -fFOLDER
                continue
            raise Unknown(arg)
        if not eq:
            if i >= len(args):
                raise Unknown(arg)
            value = args[i]
            i += 1
        options.append((name, value))
    return options, positionals, quiet


# -- the target's dists ------------------------------------------------------------------------


class Dist:
    """One installed ``.dist-info``: its METADATA's fields (read on first use)."""

    def __init__(self, site: str, entry: str) -> None:
        self.site, self.entry = site, entry
        self.name = ""
        self.version = ""
        self.requires: list[str] = []

    def read(self) -> Dist:
        path = os.path.join(self.site, self.entry, "METADATA")
        try:
            with open(path, "rb") as fh:
                data = fh.read(1 << 20)
        except OSError:
            raise Unknown(f"{path}: no METADATA") from None
        text = data.decode("utf-8", "surrogateescape")
        fields: list[list[str]] = []
        for line in text.splitlines():
            if not line.strip():
                break  # the body
            if line[0] in " \t" and fields:
                fields[-1][1] += " " + line.strip()
                continue
            key, colon, value = line.partition(":")
            if not colon:
                raise Unknown(f"{path}: not a header")
            fields.append([key.strip().lower(), value.strip()])
        for key, value in fields:
            if key == "name":
                self.name = value
            elif key == "version":
                self.version = value
            elif key == "requires-dist":
                self.requires.append(value)
        if not self.name or not self.version:
            raise Unknown(f"{path}: no Name or Version")
        return self


_INFO = (".dist-info", ".egg-info", ".egg", ".egg-link")


def _entry_key(entry: str) -> str | None:
    for suffix in _INFO:
        if entry.endswith(suffix):
            stem = entry[: -len(suffix)]
            return canonical(stem.split("-", 1)[0] if suffix != ".egg-link" else stem)
    return None


def scan(sites: list[str]) -> dict[str, list[Dist]]:
    """Every dist-like entry of ``sites`` by canonical name (egg metadata as a `Dist` with no
    METADATA, which `find` refuses)."""
    found: dict[str, list[Dist]] = {}
    for site in sites:
        try:
            entries = os.listdir(site)
        except NotADirectoryError:
            raise Unknown(f"{site}: a zip or egg on sys.path") from None
        except OSError:
            continue
        for entry in entries:
            key = _entry_key(entry)
            if key is not None:
                found.setdefault(key, []).append(Dist(site, entry))
    return found


class Installed:
    """The target's dists, each read when first asked for."""

    def __init__(self, sites: list[str]) -> None:
        self.by_name = scan(sites)
        self.read: dict[str, tuple[Dist, Version]] = {}

    def find(self, key: str) -> tuple[Dist, Version]:
        """(the one dist of ``key``, its parsed Version); `Unknown` when none, several, egg
        metadata, no METADATA, a Name of another project or an invalid version."""
        if key in self.read:
            return self.read[key]
        dists = self.by_name.get(key, [])
        if len(dists) != 1 or not dists[0].entry.endswith(".dist-info"):
            raise Unknown(f"{key}: {len(dists)} installed")
        dist = dists[0].read()
        if canonical(dist.name) != key:
            raise Unknown(f"{key}: METADATA names {dist.name}")
        try:
            version = Version(dist.version)
        except Unsure:
            raise Unknown(f"{key}: invalid version {dist.version}") from None
        self.read[key] = (dist, version)
        return dist, version


# -- markers -----------------------------------------------------------------------------------

_MARKERS_CODE = (
    "import platform as p;i=sys.implementation;v=i.version\n"
    "iv='%d.%d.%d'%v[:3]+(v[3][0]+str(v[4]) if v[3]!='final' else '')\n"
    "put([i.name,iv,os.name,p.python_implementation(),p.python_version(),sys.platform])"
)


def marker_env(python: str) -> dict[str, str]:
    """PEP 508's marker values of the target: its own from the interpreter cache (asked with
    ``-I -S`` on a miss), the kernel's from this process (the same machine)."""
    from dtkguard.env.interp_cache import cached

    def ask() -> list[str]:
        from dtkguard.env.environment import ask_interpreter_fields

        return ask_interpreter_fields(python, _MARKERS_CODE, "its marker values")

    values = cached(python, ask, "markers")
    if len(values) != 6:
        raise Unknown("marker values")
    name, impl_version, os_name, impl, full, platform = values
    uname = os.uname()
    return {
        "implementation_name": name,
        "implementation_version": impl_version,
        "os_name": os_name,
        "platform_machine": uname.machine,
        "platform_release": uname.release,
        "platform_system": uname.sysname,
        "platform_version": uname.version,
        "python_full_version": full,
        "platform_python_implementation": impl,
        "python_version": ".".join(full.split(".")[:2]),
        "sys_platform": platform,
        "extra": "",
    }


# -- requirements ------------------------------------------------------------------------------


def parse_requirement(text: str, where: str) -> Requirement:
    """A requirement specifier (name, extras, versions, marker); `Unknown` for a URL, a path
    or anything pip/uv would read otherwise."""
    if "/" in text or "\\" in text or "@" in text or text.endswith((".whl", ".zip", ".gz")):
        raise Unknown(f"{where}: {text}: a path or URL")
    try:
        return Requirement(text)
    except Unsure:
        raise Unknown(f"{where}: {text}") from None


def constraints_file(path: str, constraints: list[Requirement]) -> None:
    """The requirement lines of a constraints file (anything else: `Unknown`)."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read(1 << 20).splitlines()
    except (OSError, UnicodeDecodeError):
        raise Unknown(f"{path}: unreadable") from None
    for line in lines:
        line = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not line:
            continue
        if line.startswith("-") or line.endswith("\\"):
            raise Unknown(f"{path}: {line}")
        constraints.append(parse_requirement(line, path))


class Closure:
    """What the resolver would take from the installed dists for ``roots`` under
    ``constraints``: each dist once with the requirements that reached it."""

    def __init__(
        self,
        installed: Installed,
        markers: dict[str, str],
        constraints: list[Requirement],
    ) -> None:
        self.installed, self.markers = installed, markers
        self.constraints: dict[str, list[Requirement]] = {}
        for c in constraints:
            if c.extras or (c.marker is not None and not c.marker.evaluate(markers)):
                raise Unknown(f"constraint {c}")  # pip says so ("Ignoring ...")
            self.constraints.setdefault(canonical(c.name), []).append(c)

    def check(self, req: Requirement, key: str) -> tuple[Dist, Version]:
        """The installed dist of ``req`` at a version it and every constraint accept."""
        dist, version = self.installed.find(key)
        for spec in (req, *self.constraints.get(key, ())):
            if not spec.specifier.contains(version):  # pip: prereleases=True
                raise Unknown(f"{key} {version} does not satisfy {spec}")
        return dist, version

    def deps(self, dist: Dist, extras: set[str]) -> list[Requirement]:
        """``Requires-Dist`` of ``dist`` whose markers hold for ``extras`` (and none)."""
        out = []
        for text in dist.requires:
            req = parse_requirement(text, dist.entry)
            if req.marker is not None:
                envs = [{**self.markers, "extra": e} for e in ("", *sorted(extras))]
                if not any(req.marker.evaluate(env) for env in envs):
                    continue
            out.append(req)
        return out


# -- pip ---------------------------------------------------------------------------------------


def _pip_version(sites: list[str]) -> tuple[int, int]:
    for site in sites:
        try:
            entries = os.listdir(site)
        except OSError:
            continue
        for entry in entries:
            if entry.startswith("pip-") and entry.endswith(".dist-info"):
                parts = entry[4:-10].split(".")
                try:
                    return int(parts[0]), int(parts[1])
                except (ValueError, IndexError):
                    raise Unknown(f"pip {entry}") from None
    raise Unknown("no pip")


def _display_path(path: str) -> str:
    """pip's ``display_path``: relative to the working folder when inside it."""
    cwd = os.getcwd()
    if path == cwd:
        raise Unknown("the site is the working folder")
    if path.startswith(cwd.rstrip(os.sep) + os.sep):
        return "." + os.sep + path[len(cwd.rstrip(os.sep)) + 1 :]
    return path


def pip_lines(
    closure: Closure,
    roots: list[Requirement],
    no_deps: bool,
    pip_version: tuple[int, int],
) -> list[str]:
    """pip's "Requirement already satisfied" lines for ``roots``, in pip's order; `Unknown`
    unless every dist of the closure is installed at a satisfying version."""
    criteria: dict[str, list[tuple[Requirement, str | None]]] = {}
    template: dict[str, tuple[str, str]] = {}  # key -> (requirement as pip says it, chain)
    dists: dict[str, Dist] = {}
    lines: list[str] = []

    def add(req: Requirement, parent: str | None) -> None:
        if req.extras:
            raise Unknown(f"{req}: extras")  # pip's lines for extras differ between pips
        key = canonical(req.name)
        dist, version = closure.check(req, key)
        criteria.setdefault(key, []).append((req, parent))
        if key in template:
            return
        chain = ""
        if parent is not None:
            said, above = template[parent]
            chain = said + ("->" + above if above else "")
        said = f"{req.name}{req.specifier}"  # pip parses its marker off the line it says
        template[key] = (said, chain)
        dists[key] = dist
        came = f" (from {chain})" if chain else ""
        lines.append(
            f"Requirement already satisfied: {said} in {_display_path(dist.site)}{came} "
            f"({version})\n"
        )

    user = {}
    for i, req in enumerate(roots):
        if req.marker is not None and not req.marker.evaluate(closure.markers):
            raise Unknown(f"{req}: its marker is false")  # pip says "Ignoring ..."
        key = canonical(req.name)
        if key in user:
            raise Unknown(f"{key} given twice")
        user[key] = i
        add(req, None)
    if no_deps:
        return lines
    if not (22, 0) <= pip_version < (27, 0):
        raise Unknown(f"pip {pip_version}: its resolver's order is not known")
    depths: dict[str, float] = {}
    pinned_keys: set[str] = set()
    while True:
        unsatisfied = [k for k in criteria if k not in pinned_keys]
        if not unsatisfied:
            return lines
        key = min(unsatisfied, key=lambda k: _preference(k, criteria, user, depths, pip_version))
        pinned_keys.add(key)
        for dep in closure.deps(dists[key], set()):
            add(dep, key)


def _preference(
    key: str,
    criteria: dict[str, list[tuple[Requirement, str | None]]],
    user: dict[str, int],
    depths: dict[str, float],
    pip_version: tuple[int, int],
) -> tuple[object, ...]:
    """pip's ``get_preference`` for a project with no URL and no conflict: pips 22-24 by depth
    (recorded in ``depths`` as pip does), pips 25-26 by upper bounds."""
    import math

    ops = [(s.op, s.text) for r, _ in criteria[key] for s in r.specifier.specs]
    requested = user.get(key, math.inf)
    unfree = bool(ops)
    if pip_version < (25, 0):
        pinned = any(op[:2] == "==" for op, _ in ops)
        if key in user:
            depth = 1.0
        else:
            parents = (depths.get(p, math.inf) if p else 0.0 for _, p in criteria[key])
            depth = min(parents) + 1.0
        depths[key] = depth
        delay = pip_version < (23, 0) and key == "setuptools"
        return (delay, not pinned, depth, requested, not unfree, key)
    pinned = any(op[:2] == "==" and "*" not in v for op, v in ops)
    upper = any(op in ("<", "<=", "~=") or (op == "==" and "*" in v) for op, v in ops)
    return (not pinned, not upper, requested, not unfree, key)


def _pip_config_files(env: dict[str, str], interp: Interpreter) -> list[str]:
    """The config files pip reads, in its order (none for ``PIP_CONFIG_FILE=/dev/null``)."""
    config_file = env.get("PIP_CONFIG_FILE")
    if config_file == os.devnull:
        return []
    home = os.path.expanduser("~")
    xdg_dirs = env.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files = [os.path.join(d, "pip", "pip.conf") for d in xdg_dirs.split(":") if d]
    files.append("/etc/pip.conf")
    if not (config_file and os.path.exists(config_file)):
        files.append(os.path.join(home, ".pip", "pip.conf"))
        xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        files.append(os.path.join(xdg, "pip", "pip.conf"))
    files.append(os.path.join(str(interp.prefix), "pip.conf"))
    if config_file:
        files.append(config_file)
    return files


def _pip_config(env: dict[str, str], interp: Interpreter) -> dict[str, str]:
    """The values pip's config files and ``PIP_*`` variables give ``pip install`` (option
    name -> value, the last one pip reads winning); `Unknown` for any key that may change a
    satisfied answer."""
    import configparser

    values: dict[str, str] = {}
    merged: dict[str, dict[str, str]] = {"global": {}, "install": {}}
    for path in _pip_config_files(env, interp):
        if not os.path.exists(path):
            continue
        cfg = configparser.RawConfigParser()
        try:
            cfg.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            raise Unknown(f"{path}: unreadable") from None
        for section in cfg.sections():
            for key, value in cfg.items(section) if section in merged else ():
                merged[section][key.replace("_", "-")] = value
    for section in ("global", "install"):
        values.update((k, v) for k, v in merged[section].items() if v)
    for var, value in env.items():
        if var.startswith("PIP_") and value:
            values[var[4:].lower().replace("_", "-")] = value
    for key in values:
        if key not in _PIP_CONFIG_OK:
            raise Unknown(f"pip config {key}")
    return values


def _true(value: str) -> bool:
    low = value.strip().lower()
    if low in ("yes", "true", "on", "1"):
        return True
    if low in ("no", "false", "off", "0"):
        return False
    raise Unknown(f"pip config value {value}")


def _pip_default_index(site: str) -> str:
    """The index pip of ``site`` uses when none is named (``PyPI.simple_url``), read from
    pip's own source without running it; `Unknown` when it cannot be read."""
    import re

    try:
        with open(os.path.join(site, "pip", "_internal", "models", "index.py")) as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        raise Unknown("pip's default index") from None
    m = re.search(r'^PyPI = PackageIndex\(\s*"([^"]+/)"', text, re.M)
    if m is None:
        raise Unknown("pip's default index")
    return m.group(1) + "simple"


def _looking_in(config: dict[str, str], options: list[tuple[str, str]], site: str) -> str:
    """pip's "Looking in indexes/links" lines for these options (pip of ``site``)."""
    links = config.get("find-links", "").split()
    extra = config.get("extra-index-url", "").split()
    index = config.get("index-url", "").split()[-1:] or None
    no_index = _true(config["no-index"]) if "no-index" in config else False
    for name, value in options:
        if name in ("-f", "--find-links"):
            links.append(value)
        elif name == "--extra-index-url":
            extra.append(value)
        elif name in ("-i", "--index-url"):
            index = [value]
        elif name == "--no-index":
            no_index = True
    default = [] if no_index or (index and extra) else [_pip_default_index(site)]
    urls = [] if no_index else [*(index or default), *extra]
    out = ""
    if any("@" in u for u in [*urls, *links]):
        raise Unknown("credentials in a URL")  # pip redacts them
    if urls and urls != default:
        out += f"Looking in indexes: {', '.join(urls)}\n"
    if links:
        out += "Looking in links: " + ", ".join(os.path.expanduser(x) for x in links) + "\n"
    return out


def _pip_path(interp: Interpreter) -> list[str]:
    """The folders pip's ``python -m pip`` finds dists in: the working folder, ``PYTHONPATH``,
    then the target's ``sys.path`` (each once). Only a venv: a base interpreter brings PEP 668
    and pip's warning about root."""
    if not interp.in_venv:
        raise Unknown("not a venv")
    if os.environ.get("PYTHONHOME") or os.environ.get("PYTHONSAFEPATH"):
        raise Unknown("PYTHONHOME or PYTHONSAFEPATH")  # another path, or none of the cwd
    cwd = os.getcwd()
    extra = os.environ.get("PYTHONPATH", "")
    head = [os.path.abspath(p) if p else cwd for p in extra.split(os.pathsep)] if extra else []
    out: list[str] = []
    for entry in [cwd, *head, *_sys_path(interp)]:
        if entry not in out:
            out.append(entry)
    return out


def pip_fast(argv: list[str]) -> int | None:
    """``dtkpip ARGS`` settled here: 0 after saying pip's satisfied lines, None for the usual
    path (anything this cannot prove satisfied)."""
    return _settle("dtkpip", pip_answer(argv), sys.stdout)


def _settle(tool: str, answer: tuple[str, str] | None, stream: TextIO) -> int | None:
    """0 after saying which target ``tool`` acted on and ``answer``'s words on ``stream``;
    None for no answer."""
    if answer is None:
        return None
    from dtkguard.guard.target import say_target

    say_target(tool, answer[0])
    stream.write(answer[1])
    stream.flush()
    return 0


def pip_answer(argv: list[str]) -> tuple[str, str] | None:
    """(the target interpreter, what pip would print) when ``dtkpip ARGS`` is satisfied
    already; None: don't know."""
    try:
        return _pip_answer(argv)
    except Exception:  # Unknown, or anything the usual path says better: run it
        return None


def _pip_answer(argv: list[str]) -> tuple[str, str]:
    from dtkguard.guard.pipargs import split_dtkpip, split_pip

    opts = split_dtkpip(argv)
    cmd = split_pip(opts.pip_args)
    if cmd.command != "install" or cmd.global_args:
        raise Unknown("not a plain install")
    if opts.override or os.environ.get("DTKGUARD_OVERRIDE"):
        raise Unknown("override")
    options, positionals, quiet = _split_options(cmd.args, _PIP_FLAGS, _PIP_VALUED)
    if not positionals or any(os.path.exists(p) for p in positionals):
        raise Unknown("a path")  # pip takes an existing folder or file for a local project
    from dtkguard.guard.target import choose_python

    python = choose_python(opts.python, "dtkpip")
    interp, policy_pins = _target(python, opts.policy)
    config = _pip_config(dict(os.environ), interp)
    path = _pip_path(interp)
    constraints = list(policy_pins)
    for name, value in options:
        if name in ("-c", "--constraint"):
            constraints_file(value, constraints)
    for value in config.get("constraint", "").split():
        constraints_file(value, constraints)
    markers = marker_env(interp.python)
    roots = [parse_requirement(p, "argument") for p in positionals]
    closure = Closure(Installed(path), markers, constraints)
    no_deps = any(n == "--no-deps" for n, _ in options)
    lines = pip_lines(closure, roots, no_deps, _pip_version([str(interp.purelib)]))
    head = _looking_in(config, options, str(interp.purelib))
    return python, "" if quiet else head + "".join(lines)


def _target(python: str, policy_ref: str | None) -> tuple[Interpreter, list[Requirement]]:
    """The target's interpreter and the vendor pins of its policy as constraints."""
    from dtkguard.env.interpreter import interpreter
    from dtkguard.guard.hook_policy import constraints_lines, load_guard_policy

    interp = interpreter(python)
    policy = load_guard_policy(policy_ref, interp)
    return interp, [parse_requirement(line, "policy") for line in constraints_lines(policy)]


class _Paths:
    """What the uv answer reads of the target's `Interpreter`, as text (``str`` of its
    paths), from the same interpreter cache without importing pathlib."""

    def __init__(self, python: str) -> None:
        from dtkguard.env.interpreter import interpreter_fields
        from dtkguard.util.purepath import pure_path

        data = interpreter_fields(python)
        self.python = python
        self.prefix = pure_path(data["prefix"])
        self.in_venv = self.prefix != pure_path(data["base_prefix"])
        self.purelib = pure_path(data["purelib"])
        self.platlib = pure_path(data["platlib"]) if data.get("platlib") else None


def _uv_target(python: str, policy_ref: str | None) -> tuple[_Paths, list[Requirement]]:
    """`_target` for the uv answer: the policy `guard install` recorded is read by its path as
    text (`load_guard_policy` without --policy, the same file and the same reading); any
    other policy (--policy, none recorded, one unreadable) is `_target`'s."""
    from dtkguard.guard.hook_policy import constraints_lines, recorded_policy

    paths = _Paths(python)
    if policy_ref is None:
        policy = recorded_policy(paths.prefix)
        if policy is not None:
            return paths, [parse_requirement(x, "policy") for x in constraints_lines(policy)]
    _, pins = _target(python, policy_ref)
    return paths, pins


def _sys_path(interp: Interpreter) -> list[str]:
    """The target's ``sys.path`` with its site folders and ``.pth`` lines, as dtkguard reads
    it (`dtkguard.env.environment.describe_python`, from the interpreter cache)."""
    from dtkguard.env.environment import python_sys_path

    return python_sys_path(interp.python)[0]


# -- uv ----------------------------------------------------------------------------------------


def uv_closure(closure: Closure, roots: list[Requirement], no_deps: bool) -> int:
    """The number of requested requirements uv checks, when every dist of their closure
    (extras followed) is installed at a satisfying version; `Unknown` otherwise."""
    seen: dict[str, set[str]] = {}
    todo = []
    keys = set()
    for req in roots:
        if req.marker is not None and not req.marker.evaluate(closure.markers):
            raise Unknown(f"{req}: its marker is false")
        key = canonical(req.name)
        if key in keys:
            raise Unknown(f"{key} given twice")
        keys.add(key)
        todo.append(req)
    while todo:
        req = todo.pop()
        key = canonical(req.name)
        dist, _ = closure.check(req, key)
        extras = {canonical(e) for e in req.extras}
        if key in seen and extras <= seen[key]:
            continue
        seen[key] = seen.get(key, set()) | extras
        if not no_deps:
            todo.extend(closure.deps(dist, seen[key]))
    return len(roots)


def _uv_config(env: dict[str, str], constraints: list[Requirement]) -> None:
    """uv reads no config but the shim's ``uv.toml`` (``UV_CONFIG_FILE``) or none
    (``UV_NO_CONFIG``), and no ``UV_*`` variable that may change the answer; the file's
    constraints are added."""
    for var, value in env.items():
        if var.startswith("UV_") and value and var not in _UV_ENV_OK:
            raise Unknown(var)
    config = env.get("UV_CONFIG_FILE")
    if not config:
        if not _true(env.get("UV_NO_CONFIG") or "0"):
            raise Unknown("uv reads its config files")
        return
    _uv_toml(config, constraints)


def _uv_toml(config: str, constraints: list[Requirement]) -> None:
    """The constraints of the shim's ``uv.toml``; `Unknown` for any other key that may
    change the answer."""
    import importlib

    try:
        tomllib = importlib.import_module("tomllib")  # 3.11+; without it uv's path runs
        with open(config, "rb") as fh:
            doc = tomllib.load(fh)
    except (ImportError, OSError, ValueError):
        raise Unknown(f"{config}: unreadable") from None
    pip = doc.get("pip", {})
    if not isinstance(pip, dict):
        raise Unknown(config)
    for key, value in [*((k, v) for k, v in doc.items() if k != "pip"), *pip.items()]:
        if key not in _UV_TOML_OK:
            raise Unknown(f"{config}: {key}")
        if key not in ("constraint-dependencies", "constraint"):
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise Unknown(f"{config}: {key}")
        for item in value:
            if key == "constraint":
                constraints_file(item, constraints)
            else:
                constraints.append(parse_requirement(item, config))


def _uv_elapsed(seconds: float) -> str:
    """uv's way of saying a duration."""
    if seconds >= 60:
        return f"{int(seconds) // 60}m {int(seconds) % 60:02d}s"
    if seconds >= 1:
        return f"{int(seconds)}.{int(seconds * 100) % 100:02d}s"
    ms = int(seconds * 1000)
    return f"{ms}ms" if ms else f"0.{int(seconds * 100_000):02d}ms"


def uv_fast(argv: list[str], started: float) -> int | None:
    """``dtkuv ARGS`` settled here (see `pip_fast`); ``started``: when dtkuv started (uv's
    line says how long its check took)."""
    return _settle("dtkuv", uv_answer(argv, started), sys.stderr)


def uv_answer(argv: list[str], started: float) -> tuple[str, str] | None:
    """(the target interpreter, what uv would say on stderr) when ``dtkuv ARGS`` is
    satisfied already; None: don't know."""
    try:
        return _uv_answer(argv, started)
    except Exception:  # Unknown, or anything the usual path says better: run it
        return None


def _uv_answer(argv: list[str], started: float) -> tuple[str, str]:
    from dtkguard.guard.pipargs import split_dtkpip

    opts = split_dtkpip(argv, own=("--shim-of",))
    args = opts.pip_args
    if args[:2] != ["pip", "install"]:
        raise Unknown("not uv pip install")
    if opts.override or os.environ.get("DTKGUARD_OVERRIDE"):
        raise Unknown("override")
    options, positionals, quiet = _split_options(args[2:], _UV_FLAGS, _UV_VALUED)
    if not positionals or any(os.path.exists(p) for p in positionals):
        raise Unknown("a path")
    given = [v for n, v in options if n in ("-p", "--python")]
    if len(given) > 1:
        raise Unknown("--python twice")
    env = dict(os.environ)
    from dtkguard.guard.target import choose_python

    told = given[-1] if given else (None if opts.python else env.get("UV_PYTHON") or None)
    python = choose_python(opts.python, "dtkuv", fallback=opts.shim_of, given=told)
    interp, constraints = _uv_target(python, opts.policy)
    if not interp.in_venv:
        raise Unknown("not a venv")
    for name, value in options:
        if name in ("-c", "--constraint", "--constraints"):
            constraints_file(value, constraints)
    _uv_config(env, constraints)
    sites = [interp.purelib]
    if interp.platlib and interp.platlib not in sites:
        sites.append(interp.platlib)
    markers = marker_env(interp.python)
    roots = [parse_requirement(p, "argument") for p in positionals]
    closure = Closure(Installed(sites), markers, constraints)
    no_deps = any(n == "--no-deps" for n, _ in options)
    count = uv_closure(closure, roots, no_deps)
    if quiet:
        return interp.python, ""
    import time

    prefix = interp.prefix
    cwd = os.getcwd()
    if prefix == cwd:
        raise Unknown("the env is the working folder")
    inside = prefix.startswith(cwd.rstrip(os.sep) + os.sep)
    shown = prefix[len(cwd.rstrip(os.sep)) + 1 :] if inside else prefix
    took = _uv_elapsed(time.perf_counter() - started)
    noun = "package" if count == 1 else "packages"
    return interp.python, (
        f"Using Python {markers['python_full_version']} environment at: {shown}\n"
        f"Checked {count} {noun} in {took}\n"
    )
