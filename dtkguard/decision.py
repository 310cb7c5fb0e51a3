"""The one decision: may this distribution (name, version, files) be in this env under this policy?

Standard library only, no dtkguard imports and no I/O: the rule engine (`check`, `audit`,
dtkpip), the pip hook (which gets a copy of this file beside it, ``_dtkguard_decision.py``), the
uv shim and the resolver's candidate filter all hand it facts and get the same answer.

``policy`` is the compiled policy as plain JSON (``CompiledPolicy.to_json()``): ``name``,
``vendor`` {canonical name: full version}, ``deny`` [{pattern, reason, severity,
vendor_builds_ok}], ``exceptions`` [{rule, package, reason, expires}], ``dtk``, ``dtk_allow``,
``startup_allow`` (the ``.pth``/sitecustomize files a dist may ship, ``[dist:]pattern``) and
``binary`` {deny_needed, gpu_runtime, hip_runtime} (library name patterns, `judge_binary`).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs start-up time, inside pip too; annotations are lazy
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping, Sized
    from typing import Any, Protocol, TypedDict

    #: a value of parsed JSON whose shape its writer owns: the compiled policy's
    #: (``CompiledPolicy.to_json()``, the module docstring), the baseline's
    #: (`dtkguard.env.baseline`), a problem's evidence; read here with ``.get`` and defaults
    JSON = Any
    #: the compiled policy as plain JSON
    Policy = Mapping[str, JSON]
    #: a DTK release: (year, month, patch or None)
    Release = tuple[int, int, int | None]
    #: the environment's DTK release and where that comes from (`reference_release`)
    Reference = tuple[Release, str]
    #: `version_key`: epoch, release, pre, post, dev, local label
    VersionKey = tuple[
        int,
        tuple[int, ...],
        tuple[str, int] | None,
        int | None,
        int | None,
        tuple[tuple[int, int, str], ...],
    ]

    class EnvFacts(TypedDict):
        """`env_facts`: what the file judgement knows of the environment."""

        sites: list[str]
        #: {(site, import name): the vendor builds providing it there}
        tops: dict[tuple[str, str], set[str]]
        scripts: str | None
        #: the protected kind of a path, or None
        kind_of: Callable[[str], str | None]
        #: may dist ``name`` at ``version`` write a protected file of ``kind``?
        may_write: Callable[[str, str, str | None], bool]
        guard: list[str]

    class Marker(Protocol):
        def evaluate(self, environment: dict[str, str]) -> bool: ...

    class Specifier(Protocol):
        def contains(self, item: str, prereleases: bool | None = ...) -> bool: ...

    class Requirement(Protocol):
        """A parsed PEP 508 requirement: ``packaging.requirements.Requirement``'s interface."""

        @property
        def name(self) -> str: ...
        @property
        def marker(self) -> Marker | None: ...
        @property
        def specifier(self) -> Specifier: ...


#: problems at these severities refuse an install (the default ``--fail-on`` of `check`)
VETO = ("critical", "high")
_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3, "info": 4}


class Problem:
    """One reason a distribution may not be in the environment."""

    __slots__ = ("evidence", "message", "package", "rule", "severity")

    def __init__(
        self,
        rule: str,
        severity: str,
        package: str,
        message: str,
        evidence: dict[str, JSON] | None = None,
    ) -> None:
        self.rule = rule
        self.severity = severity
        self.package = package
        self.message = message
        self.evidence = evidence or {}

    @property
    def blocking(self) -> bool:
        return self.severity in VETO

    def __repr__(self) -> str:
        return f"Problem({self.rule!r}, {self.severity!r}, {self.package!r}, {self.message!r})"


# -- names and versions ---------------------------------------------------------------------


def canonical(name: str | None) -> str:
    """PEP 503 normalised name: ``Flash_Attn`` -> ``flash-attn``: ``re.sub(r"[-_.]+", "-",
    name.strip()).lower()``, without `re` (not imported by the paths that need no pattern)."""
    text = (name or "").strip().replace("_", "-").replace(".", "-")
    while "--" in text:
        text = text.replace("--", "-")
    return text.lower()


#: compiled on first use (by `re`'s cache): a check that needs no version key compiles none
_VERSION = (
    r"(?i)^\s*v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d+)?)?"
    r"(?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$"
)
_PRE = {"alpha": "a", "beta": "b", "c": "rc", "pre": "rc", "preview": "rc"}


def version_key(text: str | None) -> VersionKey | None:
    """A comparable key of a PEP 440 version (local label included); None if not PEP 440."""
    import re

    m = re.match(_VERSION, str(text or ""))
    if m is None:
        return None
    release = [int(p) for p in m.group("release").split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre: tuple[str, int] | None = None
    if m.group("pre_l"):
        label = m.group("pre_l").lower()
        pre = (_PRE.get(label, label), int(m.group("pre_n") or 0))
    post: int | None = None
    if m.group("post_n1") or m.group("post_l"):
        post = int(m.group("post_n1") or m.group("post_n2") or 0)
    dev = int(m.group("dev_n") or 0) if m.group("dev_l") else None
    local = tuple(
        (1, int(p), "") if p.isdigit() else (0, 0, p.lower())
        for p in re.split(r"[-_.]", m.group("local") or "")
        if p
    )
    return (int(m.group("epoch") or 0), tuple(release), pre, post, dev, local)


def same_version(a: str | None, b: str | None) -> bool:
    """PEP 440 equality, local labels included (``2.4.1+DAS.opt1`` is ``2.4.1+das.opt1``)."""
    if a is None or b is None:
        return False
    if str(a) == str(b):
        return True
    ka, kb = version_key(a), version_key(b)
    return ka is not None and ka == kb


_DTK = r"dtk(\d{2})(\d{2})(\d?)"  # compiled on first use


def local_parts(version: str | None) -> list[str]:
    """The parts of a version's local label, lower case (``+das.opt1`` -> [das, opt1])."""
    import re

    _, plus, local = str(version or "").partition("+")
    return [p for p in re.split(r"[-_.]", local.lower()) if p] if plus else []


def is_vendor_label(version: str | None) -> bool:
    """True for a DAS or DTK build (``+das...`` or ``+dtkYYMM...``), not ``+cu121``/``+rocm``."""
    import re

    return any(p == "das" or re.fullmatch(_DTK, p) for p in local_parts(version))


def release_of_label(version: str | None) -> Release | None:
    """The DTK release a label names as (year, month, patch or None), or None."""
    import re

    for part in local_parts(version):
        m = re.fullmatch(_DTK, part)
        if m:
            return (int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None)
    return None


def parse_release(text: str | None) -> Release | None:
    """``25.04.1``, ``25.04``, ``dtk25041``, ``dtk-25.04.1`` -> (25, 4, 1 or None); or None."""
    import re

    text = str(text or "").strip().lower()
    text = text[3:] if text.startswith("dtk") else text
    text = text.lstrip("-")
    m = re.fullmatch(r"(\d{2})\.(\d{1,2})(?:\.(\d+))?", text) or re.fullmatch(
        r"(\d{2})(\d{2})(\d?)", text
    )
    if not m:
        return None
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None)


def release_text(release: Release) -> str:
    base = f"{release[0]:02d}.{release[1]:02d}"
    return base if release[2] is None else f"{base}.{release[2]}"


def _key(release: Release) -> tuple[int, int, int]:
    return (release[0], release[1], release[2] or 0)


def release_allowed(release: Release, reference: Release, allow: Iterable[str] | None) -> bool:
    """Is a build for DTK ``release`` allowed beside ``reference`` (plus the ``dtk_allow`` list)?"""
    if _key(release) == _key(reference):
        return True
    for text in allow or ():
        entry = parse_release(text)
        if entry is None:
            continue
        if _key(entry) == _key(release) or (entry[2] is None and entry[:2] == release[:2]):
            return True
    return False


def reference_release(policy: Policy, versions: Mapping[str, str]) -> Reference | None:
    """The DTK release the environment is meant for, and where that comes from: the policy's
    ``dtk``, else the installed torch's label, else the most common one. ``versions`` maps
    canonical names to installed versions."""
    if policy.get("dtk"):
        release = parse_release(policy["dtk"])
        if release is not None:
            return release, f"policy {policy.get('name', '?')}"
    torch = versions.get("torch")
    labelled = release_of_label(torch) if torch is not None else None
    if labelled is not None:
        return labelled, f"torch {torch}"
    counts: dict[Release, int] = {}
    for version in versions.values():
        release = release_of_label(version)
        if release is not None:
            counts[release] = counts.get(release, 0) + 1
    if not counts:
        return None
    best = max(counts.items(), key=lambda kv: (kv[1], -list(counts).index(kv[0])))[0]
    return best, "most vendor builds"


# -- the per-dist decision ------------------------------------------------------------------


def deny_rule(policy: Policy, name: str | None) -> Mapping[str, JSON] | None:
    """The first deny rule whose pattern matches the canonical ``name``, or None."""
    import fnmatch

    key = canonical(name)
    rules: Iterable[Mapping[str, JSON]] = policy.get("deny") or ()
    for rule in rules:
        pattern = rule.get("pattern", "")
        if isinstance(pattern, str) and not key.startswith(literal_head(pattern)):
            continue  # cannot match: not compiled (a policy denies some twenty patterns)
        if fnmatch.fnmatchcase(key, pattern):
            return rule
    return None


def literal_head(pattern: str) -> str:
    """The part of an fnmatch pattern before its first wildcard: every name it matches
    starts so."""
    cut = min((i for i in map(pattern.find, "*?[") if i >= 0), default=len(pattern))
    return pattern[:cut]


def judge_dist(
    policy: Policy, name: str, version: str | None, reference: Reference | None = None
) -> list[Problem]:
    """Problems of having ``name`` at ``version`` (None: unknown) in the environment.

    ``reference`` is the environment's DTK release and its source, as ``reference_release``
    gives it; None means: the policy's ``dtk`` only.
    """
    key = canonical(name)
    shown = f"{name} {version if version is not None else '(unknown version)'}"
    policy_name = policy.get("name", "?")
    pin = (policy.get("vendor") or {}).get(key)
    out: list[Problem] = []
    if pin is not None:
        if same_version(version, pin):
            return []  # the policy's own pin is never mixed, never denied
        evidence = {"installed": version, "policy": pin, "policy_name": policy_name}
        if version is not None and is_vendor_label(version):
            msg = f"{shown} is another vendor build than the policy's {pin}"
            out.append(Problem("vendor-mismatch", "high", key, msg, evidence))
        else:
            kind = "a CUDA build" if "+cu" in str(version) else "a community build"
            msg = f"{shown} ({kind}) replaced the vendor build {pin}"
            out.append(Problem("vendor-replaced", "critical", key, msg, evidence))
    rule = deny_rule(policy, key) if pin is None else None
    if rule is not None and not (rule.get("vendor_builds_ok") and is_vendor_label(version)):
        msg = f"{shown} is denied by policy {policy_name}: {rule.get('reason', '')}"
        evidence = {"pattern": rule.get("pattern"), "version": version}
        out.append(Problem("denied-package", rule.get("severity", "critical"), key, msg, evidence))
    release = release_of_label(version)
    if reference is None and policy.get("dtk"):
        reference = reference_release(policy, {})
    if release is not None and reference is not None:
        ref, source = reference
        if not release_allowed(release, ref, policy.get("dtk_allow")):
            msg = (
                f"{shown} is built for DTK {release_text(release)}; the environment is "
                f"DTK {release_text(ref)} ({source})"
            )
            evidence = {"release": release_text(release), "expected": release_text(ref)}
            out.append(Problem("dtk-mixed", "high", key, msg, evidence))
    return out


# -- files: what a change does to imports and to the guard ---------------------------------


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


_METADATA_DIRS = (".dist-info", ".egg-info", ".egg")


def metadata_project(entry: str) -> str | None:
    """The canonical project of a site-level ``NAME[-VER].dist-info``/``.egg-info``/``.egg``
    entry (a file or a folder: ``importlib.metadata`` reads both), else None."""
    for suffix in _METADATA_DIRS:
        if entry.endswith(suffix) and len(entry) > len(suffix):
            return canonical(entry[: -len(suffix)].split("-", 1)[0])
    return None


def import_top(entry: str) -> str | None:
    """The import name a site-level entry provides: ``torch`` for ``torch/``, ``torch.py``,
    ``torch.cpython-311-x86_64-linux-gnu.so`` or ``torch.pth``; None for metadata folders."""
    if metadata_project(entry) is not None or entry.endswith(".data"):
        return None
    return entry.split(".", 1)[0] or None


def console_scripts(text: str) -> list[str]:
    """The script names of ``[console_scripts]``/``[gui_scripts]`` in a wheel's
    entry_points.txt (the files an installer generates in the scripts folder)."""
    out: list[str] = []
    section: str | None = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").strip()
        elif section in ("console_scripts", "gui_scripts") and "=" in line:
            out.append(line.split("=", 1)[0].strip())
    return out


def _site_of(path: str, site_dirs: Iterable[str]) -> str | None:
    for site in site_dirs:
        if path.startswith(site.rstrip("/") + "/"):
            return site.rstrip("/")
    return None


def env_facts(
    site_dirs: Collection[str],
    vendor_files: Mapping[str, Iterable[str]],
    scripts: str | None = None,
    kind_of: Callable[[str], str | None] | None = None,
    may_write: Callable[[str, str, str | None], bool] | None = None,
    guard: Iterable[str] = (),
) -> EnvFacts:
    """What the file judgement needs to know of the environment, from plain data.

    ``site_dirs``: resolved site directories; ``vendor_files``: {vendor name: [absolute files of
    its installed RECORD]}; ``kind_of(path)``: the protected kind of a path or None, and
    ``may_write(kind, name, version)`` (both from the protected set, ``dtkguard.protected``);
    ``guard``: further files and folders of the guard (its state)."""
    tops: dict[tuple[str, str], set[str]] = {}
    for key, files in vendor_files.items():
        for path in files:
            site = _site_of(path, site_dirs)
            if site is None:
                continue
            first = path[len(site) + 1 :].split("/", 1)
            if first[0] == "__pycache__" and len(first) > 1:
                first = first[1:]
            top = import_top(first[0])
            if top is not None:
                tops.setdefault((site, top), set()).add(canonical(key))
    return {
        "sites": [s.rstrip("/") for s in site_dirs],
        "tops": tops,
        "scripts": scripts,
        "kind_of": kind_of or (lambda path: None),
        "may_write": may_write or (lambda kind, name, version: False),
        "guard": list(guard),
    }


def vendor_of(path: str, facts: EnvFacts, policy: Policy) -> tuple[str, str] | None:
    """(vendor name, what) when ``path`` lies inside a vendor build's import package or module
    (any suffix, any depth, its ``__pycache__``) or is a metadata folder named like a vendor
    project; else None."""
    site = _site_of(path, facts["sites"])
    if site is None:
        return None
    parts = path[len(site) + 1 :].split("/")
    project = metadata_project(parts[0])
    if project is not None:
        if project in (policy.get("vendor") or {}):
            return project, f"metadata of the vendor project {project}"
        return None
    if parts[0] == "__pycache__" and len(parts) > 1:
        parts = parts[1:]
    top = import_top(parts[0])
    owners = facts["tops"].get((site, top)) if top else None
    if owners:
        return sorted(owners)[0], f"inside `{top}`, files of the vendor build {sorted(owners)[0]}"
    return None


def is_vendor_writer(policy: Policy, key: str, version: str | None, owner: str) -> bool:
    """The vendor build itself (its pinned version) may write its own package."""
    pin = (policy.get("vendor") or {}).get(key)
    return key == owner and pin is not None and same_version(version, pin)


STARTUP_MODULES = ("sitecustomize", "usercustomize")


def startup_file(path: str, site_dirs: Iterable[str]) -> str | None:
    """The file name if ``path`` is code every interpreter start runs: a ``.pth`` directly in
    a site directory, or a ``sitecustomize``/``usercustomize`` module or package there."""
    head, _, base = path.rstrip("/").rpartition("/")
    for site in site_dirs:
        site = site.rstrip("/")
        if head == site and base.endswith(".pth"):
            return base
        if _under(path, site) and path != site:
            rest = path[len(site) + 1 :]
            if rest.startswith("__pycache__/"):
                rest = rest[len("__pycache__/") :]
            top = rest.split("/", 1)[0]
            if top.split(".", 1)[0] in STARTUP_MODULES and (
                top.endswith((".py", ".pyc", ".so")) or "/" in rest
            ):
                return top
    return None


#: setuptools' ``distutils-precedence.pth``, byte for byte (only the ``setuptools`` dist)
DISTUTILS_PRECEDENCE = (
    "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') == "
    "'local'; enabled and __import__('_distutils_hack').add_shim(); "
)
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_NSPKG = [  # setuptools' namespace-package line, statement by statement (both templates)
    r"import sys, types, os",
    r"has_mfs = sys\.version_info > \(3, 5\)",
    r"p = os\.path\.join\(sys\._getframe\(1\)\.f_locals\['sitedir'\], \*\((?P<pth>[^)]*)\)\)",
    r"importlib = (has_mfs and )?__import__\('importlib\.util'\)",
    r"(has_mfs and )?__import__\('importlib\.machinery'\)",
    r"m = (has_mfs and )?sys\.modules\.setdefault\('[\w.]+', importlib\.util\.module_from_spec"
    r"\(importlib\.machinery\.PathFinder\.find_spec\('[\w.]+', \[os\.path\.dirname\(p\)\]\)\)\)",
    r"m = m or sys\.modules\.setdefault\('[\w.]+', types\.ModuleType\('[\w.]+'\)\)",
    r"mp = \(m or \[\]\) and m\.__dict__\.setdefault\('__path__',\[\]\)",
    r"\(p not in mp\) and mp\.append\(p\)",
    r"m and setattr\(sys\.modules\['[\w.]+'\], '\w+', m\)",
]


def _nspkg_line(line: str, tops: Collection[str]) -> bool:
    """A setuptools namespace-package line for a namespace the same wheel ships."""
    import re

    match: re.Match[str] | None = None
    for statement in line.strip().rstrip(";").split(";"):
        for pattern in _NSPKG:
            m = re.fullmatch(pattern, statement.strip())
            if m:
                match = m if "pth" in m.groupdict() else match
                break
        else:
            return False
    if match is None:
        return False
    first = match.group("pth").split(",", 1)[0].strip().strip("'\"")
    return first in tops


def _editable_pth(
    key: str, version: str | None, filename: str, lines: Iterable[str], members: Collection[str]
) -> bool:
    """setuptools' ``__editable__.NAME-VER.pth`` of this dist: path lines, or one
    ``import F; F.install()`` of the finder module the same wheel ships."""
    import re

    stem = filename[len("__editable__.") : -len(".pth")]
    name, _, ver = stem.rpartition("-")
    if canonical(name) != key or not same_version(ver, version):
        return False
    for line in lines:
        if line.startswith(("import ", "import\t")):
            m = re.fullmatch(rf"import ({_NAME}); \1\.install\(\)", line.strip())
            if not (m and m.group(1).startswith("__editable___") and m.group(1) in members):
                return False
    return True


def startup_shape_ok(
    key: str, version: str | None, filename: str, content: str | None, members: Collection[str]
) -> bool:
    """Does dist ``key`` at ``version`` ship exactly what pip, setuptools or virtualenv write
    as this start-up file? ``content``: the file's text (None: unknown); ``members``: the
    import names the same wheel ships at its top level."""
    if content is None or not filename.endswith(".pth"):
        return False
    lines = [ln for ln in content.splitlines() if ln.strip() and not ln.startswith("#")]
    if filename == "distutils-precedence.pth":
        return key == "setuptools" and content.strip() == DISTUTILS_PRECEDENCE.strip()
    if filename.startswith("__editable__.") and filename.endswith(".pth"):
        return _editable_pth(key, version, filename, lines, members)
    if filename.endswith("-nspkg.pth"):
        return bool(lines) and all(_nspkg_line(line, members) for line in lines)
    return not lines  # an empty .pth runs nothing


def startup_allowed(policy: Policy, name: str, filename: str) -> bool:
    """Does the policy's ``startup-allow`` let dist ``name`` ship ``filename`` by name? Only
    entries naming one dist (``dist:pattern``) count: a pattern for every dist would let any
    wheel ship it."""
    import fnmatch

    key = canonical(name)
    for entry in policy.get("startup_allow") or ():
        dist, colon, pattern = str(entry).rpartition(":")
        if colon and canonical(dist) == key and fnmatch.fnmatchcase(filename, pattern):
            return True
    return False


def _more(items: Sized) -> str:
    return f" and {len(items) - 1} more" if len(items) > 1 else ""


def _vendor_by_folder(facts: EnvFacts, policy: Policy) -> Callable[[str], tuple[str, str] | None]:
    """`vendor_of`, kept by folder where the answer is the folder's: below a site's top and
    its ``__pycache__`` (there it depends on the file's own name)."""
    kept: dict[str, tuple[str, str] | None] = {}

    def vendor_at(path: str) -> tuple[str, str] | None:
        folder = path.rpartition("/")[0]
        if folder in kept:
            return kept[folder]
        hit = vendor_of(path, facts, policy)
        site = _site_of(path, facts["sites"])
        if site is None or folder not in (site, site + "/__pycache__"):
            kept[folder] = hit
        return hit

    return vendor_at


def judge_files(
    policy: Policy,
    name: str,
    version: str | None,
    paths: Iterable[str],
    facts: EnvFacts,
    contents: Mapping[str, str] | None = None,
    members: Collection[str] = (),
) -> list[Problem]:
    """Problems of dist ``name`` at ``version`` writing the absolute, *resolved* ``paths``.

    ``facts``: `env_facts`; ``contents``: {path: text} of the start-up files among ``paths``;
    ``members``: the import names the wheel ships at its top level."""
    key = canonical(name)
    conflicts: dict[str, list[tuple[str, str]]] = {}
    tamper: list[tuple[str, str]] = []
    startup: list[str] = []
    kind_of, vendor_at = facts["kind_of"], _vendor_by_folder(facts, policy)
    # `_under` of each guard path: the path itself, or a prefix of it
    guard_exact = set(facts["guard"])
    guard_roots = tuple(g.rstrip("/") + "/" for g in facts["guard"])
    for path in paths:
        hit = vendor_at(path)
        if hit is not None and not is_vendor_writer(policy, key, version, hit[0]):
            conflicts.setdefault(hit[0], []).append((path, hit[1]))
        kind = kind_of(path)
        if kind is not None and not facts["may_write"](kind, key, version):
            tamper.append((path, kind))
            continue
        if kind is None and (path in guard_exact or path.startswith(guard_roots)):
            tamper.append((path, "guard"))
            continue
        maybe = path.endswith(".pth") or "customize" in path
        filename = startup_file(path, facts["sites"]) if maybe else None
        if filename is None or startup_allowed(policy, key, filename):
            continue
        if not startup_shape_ok(key, version, filename, (contents or {}).get(path), members):
            startup.append(path)
    out: list[Problem] = []
    for owner, hits in sorted(conflicts.items()):
        files = [p for p, _ in hits]
        msg = f"{name} would add or change {files[0]}{_more(files)}, {hits[0][1]}"
        out.append(Problem("file-conflict", "critical", key, msg, {"owner": owner, "files": files}))
    if tamper:
        files = [p for p, _ in tamper]
        what = PROTECTED_WHY.get(tamper[0][1], "a file the guard protects")
        if tamper[0][1] == "pip" and key == "pip":
            what = f"pip {version} is not a pip the guard supports, and pip is where it lives"
        msg = f"{name} would overwrite {files[0]}{_more(files)}: {what}"
        out.append(Problem("guard-tamper", "critical", key, msg, {"files": files}))
    for path in startup:
        msg = (
            f"{name} would add start-up code {path} (run by every interpreter start) that is "
            "not what pip, setuptools or virtualenv write for this dist"
        )
        out.append(Problem("startup-code", "critical", key, msg, {"file": path}))
    return out


PROTECTED_WHY = {
    "guard": "a file of the dtkguard guard itself",
    "pip": "a file of pip itself, which the guard lives inside",
    "interpreter": "the environment's interpreter or activation script",
    "uv-shim": "the uv shim of the guard",
    "dtkguard": "a dtkguard command of the environment",
}


def judge_removals(
    policy: Policy,
    name: str,
    paths: Iterable[str],
    facts: EnvFacts,
    replacement: str | None = None,
) -> list[Problem]:
    """Problems of removing dist ``name``'s files ``paths`` (absolute, resolved, every file
    the removal deletes, folders expanded). ``replacement``: the version installed in its place
    in the same change (None: a plain removal). A vendor build's files may only go while the
    vendor build itself replaces them; protected files only while their writer does."""
    key = canonical(name)
    vendor: list[tuple[str, tuple[str, str]]] = []
    tamper: list[str] = []
    for path in paths:
        hit = vendor_of(path, facts, policy)
        if hit is not None and not (
            replacement is not None and is_vendor_writer(policy, key, replacement, hit[0])
        ):
            vendor.append((path, hit))
        kind = facts["kind_of"](path)
        if kind is not None and not (
            replacement is not None and facts["may_write"](kind, key, replacement)
        ):
            tamper.append(path)
    out: list[Problem] = []
    if vendor:
        files = [p for p, _ in vendor]
        owner = vendor[0][1][0]
        msg = f"removing {name} would delete {files[0]}{_more(files)}, {vendor[0][1][1]}"
        out.append(Problem("file-conflict", "critical", key, msg, {"owner": owner, "files": files}))
    if tamper:
        msg = f"removing {name} would delete {tamper[0]}{_more(tamper)}, which the guard protects"
        out.append(Problem("guard-tamper", "critical", key, msg, {"files": tamper}))
    return out


def judge_uninstall(
    policy: Policy,
    name: str,
    version: str | None,
    paths: Iterable[str],
    facts: EnvFacts,
    today: str,
    replacement: str | None = None,
) -> list[Problem]:
    """Every unwaived problem of removing the installed dist ``name`` ``version`` whose removal
    deletes ``paths`` (as `judge_removals`), as `decide` judges an install: a vendor build
    may only go while its own build replaces it in the same change (``replacement``: the
    version installed in its place, None for a plain uninstall), and no removal deletes a
    vendor build's files or the guard's."""
    key = canonical(name)
    pin = (policy.get("vendor") or {}).get(key)
    found: list[Problem] = []
    if pin is not None and not (replacement and same_version(replacement, pin)):
        text = f"removing {name} {version} (the vendor build is {pin})"
        found.append(Problem("vendor-missing", "critical", key, text))
    found += judge_removals(policy, name, paths, facts, replacement)
    return [p for p in found if waiver(policy, p, today) is None]


def judge_moved_away(policy: Policy, name: str, version: str | None, today: str) -> list[Problem]:
    """The unwaived problem of an install elsewhere (``--prefix``, ``--root``) that removes
    the installed ``name`` ``version`` from this environment: a vendor build goes, its
    replacement lands outside."""
    key = canonical(name)
    pin = (policy.get("vendor") or {}).get(key)
    if pin is None:
        return []
    text = (
        f"pip would remove the vendor build {key} {version} from this environment and install "
        f"its replacement elsewhere (the vendor build is {pin})"
    )
    found = [Problem("vendor-replaced", "critical", key, text)]
    return [p for p in found if waiver(policy, p, today) is None]


# -- the vendor builds keep what they need -------------------------------------------------


def vendor_deps_broken(
    requires: Mapping[str, Iterable[str]],
    versions: Mapping[str, str],
    requirement: Callable[[str], Requirement],
    environment: Mapping[str, str] | None = None,
    pins: Mapping[str, str | None] | None = None,
) -> dict[tuple[str, str], str]:
    """{(vendor, dependency): why} for every ``Requires-Dist`` of a vendor build that
    ``versions`` ({canonical name: version} of the environment) does not satisfy.

    ``requires``: {vendor name: [Requires-Dist strings]}; ``requirement``: a PEP 508 parser
    with packaging's interface (``packaging.requirements.Requirement``, or pip's vendored
    copy inside the hook). Extras' requirements and unmet markers do not count;
    ``environment`` overrides marker variables (``python_version`` of the target); with
    ``pins`` ({vendor name: pinned version}, the policy's ``vendor``), only a dist that is the
    pinned build counts as a vendor build (a community torch is judged as ``vendor-replaced``,
    not by its own requirements), and a requirement on another pinned vendor build is left to
    the vendor rules (``vendor-replaced``/``vendor-missing`` judge that build itself)."""
    out: dict[tuple[str, str], str] = {}
    for vendor, texts in sorted(requires.items()):
        key = canonical(vendor)
        if key not in versions:
            continue
        if pins is not None and not same_version(versions[key], pins.get(key)):
            continue
        for text in texts:
            try:
                req = requirement(text)
                marks = {**(environment or {}), "extra": ""}
                if req.marker is not None and not req.marker.evaluate(marks):
                    continue
            except Exception:
                continue
            dep = canonical(req.name)
            if pins is not None and pins.get(dep) is not None:
                continue
            have = versions.get(dep)
            if have is None:
                out[(canonical(vendor), dep)] = f"needs {text.split(';')[0].strip()}: missing"
                continue
            try:
                ok = req.specifier.contains(have, prereleases=True)
            except Exception:
                continue
            if not ok:
                out[(canonical(vendor), dep)] = (
                    f"needs {text.split(';')[0].strip()}: {dep} {have} would not do"
                )
    return out


def judge_vendor_deps(
    requires: Mapping[str, Iterable[str]],
    after: Mapping[str, str],
    requirement: Callable[[str], Requirement],
    before: Mapping[str, str] | None = None,
    environment: Mapping[str, str] | None = None,
    pins: Mapping[str, str | None] | None = None,
) -> list[Problem]:
    """``vendor-deps-broken`` (high) for each vendor requirement the environment ``after`` a
    change leaves unsatisfied; with ``before``, only those the change breaks; ``pins`` as for
    `vendor_deps_broken`."""
    broken = vendor_deps_broken(requires, after, requirement, environment, pins)
    if before is not None:
        old = vendor_deps_broken(requires, before, requirement, environment, pins)
        broken = {k: v for k, v in broken.items() if k not in old}
    out: list[Problem] = []
    for (vendor, dep), why in sorted(broken.items()):
        ver = after.get(vendor, "")
        msg = f"the vendor build {vendor} {ver} {why}"
        evidence = {"vendor": vendor, "dependency": dep, "installed": after.get(dep)}
        out.append(Problem("vendor-deps-broken", "high", dep, msg, evidence))
    return out


# -- native code: what a binary links -------------------------------------------------------

#: auditwheel renames a library it bundles ``libcudart-3f8a1c2b.so.12``; judged as its own name
_MANGLED = r"^(?P<stem>.+?)-[0-9a-f]{8}(?P<so>\.so(?:\.[0-9][^/]*)?)$"  # compiled on first use


def library_names(name: str | None) -> tuple[str, ...]:
    """The names ``name`` (a DT_NEEDED or SONAME entry) is judged by: its base name, and the
    name auditwheel started from when it is a mangled copy."""
    import re

    base = str(name or "").rsplit("/", 1)[-1]
    m = re.match(_MANGLED, base)
    return (base, m.group("stem") + m.group("so")) if m else (base,)


def library_matches(name: str | None, patterns: Iterable[str] | None) -> bool:
    """Does library ``name`` match one of the fnmatch ``patterns`` (``libcudart.so*``)?"""
    import fnmatch

    return any(fnmatch.fnmatchcase(n, p) for n in library_names(name) for p in patterns or ())


def judge_binary(
    policy: Policy,
    name: str | None,
    path: str,
    needed: Iterable[str] | None,
    soname: str | None = None,
) -> list[Problem]:
    """Problems of dist ``name`` shipping the ELF file ``path`` that needs the libraries
    ``needed`` (its DT_NEEDED, in order) and is named ``soname``: ``cuda-binary`` when it needs
    (or is) a CUDA runtime library of the policy's ``binary.deny_needed``; ``foreign-hip`` when it
    needs a HIP runtime (``binary.hip_runtime``) and none of the DTK ones
    (``binary.gpu_runtime``)."""
    rules = policy.get("binary") or {}
    key = canonical(name) if name else str(path)
    shown = f"{path} of {name}" if name else str(path)
    needed = list(needed or ())
    evidence: dict[str, JSON] = {"file": str(path), "needed": needed}
    if soname:
        evidence["soname"] = soname
    out: list[Problem] = []
    deny = rules.get("deny_needed") or ()
    cuda = [n for n in needed if library_matches(n, deny)]
    if soname and library_matches(soname, deny):
        msg = f"{shown} is the CUDA library {soname}: it cannot load on a DCU"
        out.append(Problem("cuda-binary", "high", key, msg, {**evidence, "cuda": [soname]}))
    elif cuda:
        msg = f"{shown} needs {', '.join(cuda)} (CUDA): it cannot load on a DCU"
        out.append(Problem("cuda-binary", "high", key, msg, {**evidence, "cuda": cuda}))
    hip = [n for n in needed if library_matches(n, rules.get("hip_runtime"))]
    if hip and not any(library_matches(n, rules.get("gpu_runtime")) for n in needed):
        want = ", ".join(rules.get("gpu_runtime") or ()) or "the DTK HIP runtime"
        msg = f"{shown} needs {', '.join(hip)} (a ROCm HIP runtime), not {want} (DTK)"
        out.append(Problem("foreign-hip", "medium", key, msg, {**evidence, "hip": hip}))
    return out


def gpu_runtime(policy: Policy, needed: Iterable[str] | None) -> str | None:
    """Which GPU runtime a binary needing ``needed`` links: ``dtk``, ``cuda``, ``rocm`` or
    None (no GPU runtime)."""
    rules = policy.get("binary") or {}
    kinds = (("dtk", "gpu_runtime"), ("cuda", "deny_needed"), ("rocm", "hip_runtime"))
    for kind, field in kinds:
        if any(library_matches(n, rules.get(field)) for n in needed or ()):
            return kind
    return None


# -- identity: the vendor build of the baseline ----------------------------------------------


def comparable(rel: str) -> bool:
    """Files a wheel and its installed copy share: not the metadata pip rewrites, not .pyc."""
    return ".dist-info/" not in rel and not rel.endswith(".pyc") and not rel.startswith("../")


def _hex(digest: str | None) -> str:
    """A hex sha256 from hex or from a RECORD value (``sha256=<urlsafe base64>``)."""
    digest = str(digest or "")
    if digest.startswith("sha256="):
        import base64
        import binascii

        raw = digest[7:]
        try:
            return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).hex()
        except (binascii.Error, ValueError):
            return ""
    return digest.lower()


def baseline_build(
    baseline: Mapping[str, JSON],
    name: str,
    version: str | None,
    record_sha256: str | None = None,
    files: Mapping[str, str] | None = None,
    wheel_sha256: str | None = None,
) -> bool | None:
    """Is (name, version) with these digests the vendor build the baseline of `guard install`
    recorded? ``record_sha256``: hex sha256 of an installed RECORD (or its build digest,
    `dtkguard.env.baseline.record_digest`); ``files``: {RECORD path:
    hex sha256 or ``sha256=...``}: every file outside the dist-info (``.pyc`` and scripts
    aside) must be the baseline's, no more, no fewer; ``wheel_sha256``: the wheel's hash,
    matched against the lock's hashes. None when the baseline has no vendor build of that name
    and version (the question does not apply); False when no digest was given."""
    entry = (baseline.get("vendor") or {}).get(canonical(name))
    if entry is None or not same_version(version, entry.get("version")):
        return None
    verdicts: list[bool] = []
    if record_sha256 is not None:
        record = entry["record"]  # the RECORD file's sha256, or its build digest
        verdicts.append(str(record_sha256).lower() in (record["sha256"], record.get("digest")))
    if files is not None:
        mine = {r: f["sha256"] for r, f in entry["files"].items() if comparable(r)}
        theirs = {r: _hex(d) for r, d in files.items() if comparable(r)}
        verdicts.append(mine == theirs)
    if wheel_sha256 is not None:
        locked = ((baseline.get("lock") or {}).get("packages") or {}).get(canonical(name))
        hashes = [w.get("hashes", {}).get("sha256") for w in (locked or {}).get("wheels", [])]
        verdicts.append(bool(hashes) and str(wheel_sha256).lower() in hashes)
    return bool(verdicts) and all(verdicts)


def judge_build(
    baseline: Mapping[str, JSON],
    name: str,
    version: str | None,
    files: Mapping[str, str] | None = None,
    wheel_sha256: str | None = None,
) -> list[Problem]:
    """Problems of installing (name, version) with these file digests when the baseline holds a
    vendor build of that name and version: a relabelled build is not the vendor build."""
    if not baseline:
        return []
    verdict = baseline_build(baseline, name, version, None, files, wheel_sha256)
    if verdict is None or verdict:
        return []
    key = canonical(name)
    msg = (
        f"{name} {version} carries the vendor build's name and label but not its files: it is "
        f"not the vendor build `guard install` recorded"
    )
    return [Problem("vendor-not-baseline", "critical", key, msg, {"version": version})]


# -- exceptions and the verdict -------------------------------------------------------------


def exception_covers(exception: Mapping[str, JSON], rule: str, subject: object) -> bool:
    """Does the policy exception (a JSON dict) name ``rule`` for ``subject`` (a package name,
    or a path when the exception's package contains ``/``)?"""
    import fnmatch

    if exception.get("rule") != rule:
        return False
    pattern = exception.get("package", "")
    if "/" in pattern:
        return fnmatch.fnmatchcase(str(subject).lower(), pattern)
    return fnmatch.fnmatchcase(canonical(str(subject)), pattern)


def exception_active(exception: Mapping[str, JSON], today: object) -> bool:
    """Unexpired on ``today`` (an ISO date string): the exception's last day is ``expires``."""
    return str(today) <= str(exception.get("expires", ""))


def waiver(policy: Policy, problem: Problem, today: str) -> Mapping[str, JSON] | None:
    """The unexpired exception of ``policy`` that waives ``problem``, or None."""
    exceptions: Iterable[Mapping[str, JSON]] = policy.get("exceptions") or ()
    for exception in exceptions:
        if exception_covers(exception, problem.rule, problem.package) and exception_active(
            exception, today
        ):
            return exception
    return None


def decide(
    policy: Policy,
    dists: Iterable[tuple[str, str | None]],
    today: str,
    reference: Reference | None = None,
    files: Mapping[str, Iterable[str]] | None = None,
    facts: EnvFacts | None = None,
    contents: Mapping[str, tuple[Mapping[str, str], Collection[str]]] | None = None,
) -> list[Problem]:
    """Every unwaived problem of putting ``dists`` ([(name, version)]) into the environment,
    most severe first. ``files`` maps a name to the resolved paths it writes and ``facts`` is
    `env_facts` (see ``judge_files``); ``contents``: {name: ({path: text} of its start-up
    files, its top-level import names)}."""
    out: list[Problem] = []
    for name, version in dists:
        found = judge_dist(policy, name, version, reference)
        if files is not None and name in files and facts is not None:
            text, members = (contents or {}).get(name, ({}, ()))
            found += judge_files(policy, name, version, files[name], facts, text, members)
        out += [p for p in found if waiver(policy, p, today) is None]
    return sorted(out, key=lambda p: _ORDER.get(p.severity, 9))


def refusals(problems: Iterable[Problem]) -> list[Problem]:
    """The problems that refuse an install."""
    return [p for p in problems if p.blocking]
