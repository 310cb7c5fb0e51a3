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

import fnmatch
import re

#: problems at these severities refuse an install (the default ``--fail-on`` of `check`)
VETO = ("critical", "high")
_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3, "info": 4}
STARTUP_MODULES = ("sitecustomize", "usercustomize")


class Problem:
    """One reason a distribution may not be in the environment."""

    __slots__ = ("evidence", "message", "package", "rule", "severity")

    def __init__(self, rule, severity, package, message, evidence=None):
        self.rule = rule
        self.severity = severity
        self.package = package
        self.message = message
        self.evidence = evidence or {}

    @property
    def blocking(self):
        return self.severity in VETO

    def __repr__(self):
        return f"Problem({self.rule!r}, {self.severity!r}, {self.package!r}, {self.message!r})"


# -- names and versions ---------------------------------------------------------------------


def canonical(name):
    """PEP 503 normalised name: ``Flash_Attn`` -> ``flash-attn``."""
    return re.sub(r"[-_.]+", "-", (name or "").strip()).lower()


_VERSION = re.compile(
    r"^\s*v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d+)?)?"
    r"(?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_PRE = {"alpha": "a", "beta": "b", "c": "rc", "pre": "rc", "preview": "rc"}


def version_key(text):
    """A comparable key of a PEP 440 version (local label included); None if not PEP 440."""
    m = _VERSION.match(str(text or ""))
    if m is None:
        return None
    release = [int(p) for p in m.group("release").split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre = None
    if m.group("pre_l"):
        label = m.group("pre_l").lower()
        pre = (_PRE.get(label, label), int(m.group("pre_n") or 0))
    post = None
    if m.group("post_n1") or m.group("post_l"):
        post = int(m.group("post_n1") or m.group("post_n2") or 0)
    dev = int(m.group("dev_n") or 0) if m.group("dev_l") else None
    local = tuple(
        (1, int(p), "") if p.isdigit() else (0, 0, p.lower())
        for p in re.split(r"[-_.]", m.group("local") or "")
        if p
    )
    return (int(m.group("epoch") or 0), tuple(release), pre, post, dev, local)


def same_version(a, b):
    """PEP 440 equality, local labels included (``2.4.1+DAS.opt1`` is ``2.4.1+das.opt1``)."""
    if a is None or b is None:
        return False
    if str(a) == str(b):
        return True
    ka, kb = version_key(a), version_key(b)
    return ka is not None and ka == kb


_DTK = re.compile(r"dtk(\d{2})(\d{2})(\d?)")


def local_parts(version):
    """The parts of a version's local label, lower case (``+das.opt1`` -> [das, opt1])."""
    _, plus, local = str(version or "").partition("+")
    return [p for p in re.split(r"[-_.]", local.lower()) if p] if plus else []


def is_vendor_label(version):
    """True for a DAS or DTK build (``+das...`` or ``+dtkYYMM...``), not ``+cu121``/``+rocm``."""
    return any(p == "das" or _DTK.fullmatch(p) for p in local_parts(version))


def release_of_label(version):
    """The DTK release a label names as (year, month, patch or None), or None."""
    for part in local_parts(version):
        m = _DTK.fullmatch(part)
        if m:
            return (int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None)
    return None


def parse_release(text):
    """``25.04.1``, ``25.04``, ``dtk25041``, ``dtk-25.04.1`` -> (25, 4, 1 or None); or None."""
    text = str(text or "").strip().lower()
    text = text[3:] if text.startswith("dtk") else text
    text = text.lstrip("-")
    m = re.fullmatch(r"(\d{2})\.(\d{1,2})(?:\.(\d+))?", text) or re.fullmatch(
        r"(\d{2})(\d{2})(\d?)", text
    )
    if not m:
        return None
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None)


def release_text(release):
    base = f"{release[0]:02d}.{release[1]:02d}"
    return base if release[2] is None else f"{base}.{release[2]}"


def _key(release):
    return (release[0], release[1], release[2] or 0)


def release_allowed(release, reference, allow):
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


def reference_release(policy, versions):
    """The DTK release the environment is meant for, and where that comes from: the policy's
    ``dtk``, else the installed torch's label, else the most common one. ``versions`` maps
    canonical names to installed versions."""
    if policy.get("dtk"):
        release = parse_release(policy["dtk"])
        if release is not None:
            return release, f"policy {policy.get('name', '?')}"
    torch = versions.get("torch")
    if torch is not None and release_of_label(torch) is not None:
        return release_of_label(torch), f"torch {torch}"
    counts = {}
    for version in versions.values():
        release = release_of_label(version)
        if release is not None:
            counts[release] = counts.get(release, 0) + 1
    if not counts:
        return None
    best = max(counts.items(), key=lambda kv: (kv[1], -list(counts).index(kv[0])))[0]
    return best, "most vendor builds"


# -- the per-dist decision ------------------------------------------------------------------


def deny_rule(policy, name):
    """The first deny rule whose pattern matches the canonical ``name``, or None."""
    key = canonical(name)
    for rule in policy.get("deny") or ():
        if fnmatch.fnmatchcase(key, rule.get("pattern", "")):
            return rule
    return None


def judge_dist(policy, name, version, reference=None):
    """Problems of having ``name`` at ``version`` (None: unknown) in the environment.

    ``reference`` is the environment's DTK release and its source, as ``reference_release``
    gives it; None means: the policy's ``dtk`` only.
    """
    key = canonical(name)
    shown = f"{name} {version if version is not None else '(unknown version)'}"
    policy_name = policy.get("name", "?")
    pin = (policy.get("vendor") or {}).get(key)
    out = []
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


# -- files ----------------------------------------------------------------------------------


def _under(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def startup_allowed(policy, name, filename):
    """May dist ``name`` ship the start-up file ``filename`` (a ``.pth``, sitecustomize ...)?"""
    key = canonical(name)
    for entry in policy.get("startup_allow") or ():
        dist, colon, pattern = str(entry).rpartition(":")
        if colon and dist not in ("*", key) and not fnmatch.fnmatchcase(key, dist):
            continue
        if fnmatch.fnmatchcase(filename, pattern):
            return True
    return False


def startup_file(path, site_dirs):
    """The file name if ``path`` is code every interpreter start runs: a ``.pth`` directly in
    a site directory, or a ``sitecustomize``/``usercustomize`` module or package there."""
    head, _, base = path.rstrip("/").rpartition("/")
    for site in site_dirs:
        site = site.rstrip("/")
        if head == site and base.endswith(".pth"):
            return base
        if _under(path, site):
            top = path[len(site) + 1 :].split("/", 1)[0]
            if top.split(".", 1)[0] in STARTUP_MODULES and (
                top.endswith((".py", ".pyc", ".so")) or "/" in path[len(site) + 1 :]
            ):
                return top
    return None


def judge_files(policy, name, paths, owners=None, guard=(), site_dirs=()):
    """Problems of dist ``name`` writing the absolute, normalised ``paths``.

    ``owners`` maps files of vendor builds to the vendor dist (from their installed RECORDs);
    ``guard`` lists the guard's own files and folders; ``site_dirs`` are the directories whose
    ``.pth`` files and ``sitecustomize`` run at every interpreter start.
    """
    key = canonical(name)
    owners = owners or {}
    conflicts, tamper, startup = {}, [], []
    for path in paths:
        owner = owners.get(path)
        if owner is not None and owner != key:
            conflicts.setdefault(owner, []).append(path)
        if any(_under(path, g) for g in guard):
            tamper.append(path)
            continue
        filename = startup_file(path, site_dirs)
        if filename is not None and not startup_allowed(policy, key, filename):
            startup.append(path)
    out = []
    for owner, files in sorted(conflicts.items()):
        more = f" and {len(files) - 1} more" if len(files) > 1 else ""
        msg = f"{name} would overwrite {files[0]}{more}, files of the vendor build {owner}"
        out.append(Problem("file-conflict", "critical", key, msg, {"owner": owner, "files": files}))
    if tamper:
        more = f" and {len(tamper) - 1} more" if len(tamper) > 1 else ""
        msg = f"{name} would overwrite {tamper[0]}{more}, a file of the dtkguard guard itself"
        out.append(Problem("guard-tamper", "critical", key, msg, {"files": tamper}))
    for path in startup:
        msg = (
            f"{name} would add start-up code {path} (run by every interpreter start); "
            "the policy's startup-allow list does not name it"
        )
        out.append(Problem("startup-code", "critical", key, msg, {"file": path}))
    return out


# -- native code: what a binary links -------------------------------------------------------

#: auditwheel renames a library it bundles ``libcudart-3f8a1c2b.so.12``; judged as its own name
_MANGLED = re.compile(r"^(?P<stem>.+?)-[0-9a-f]{8}(?P<so>\.so(?:\.[0-9][^/]*)?)$")


def library_names(name):
    """The names ``name`` (a DT_NEEDED or SONAME entry) is judged by: its base name, and the
    name auditwheel started from when it is a mangled copy."""
    base = str(name or "").rsplit("/", 1)[-1]
    m = _MANGLED.match(base)
    return (base, m.group("stem") + m.group("so")) if m else (base,)


def library_matches(name, patterns):
    """Does library ``name`` match one of the fnmatch ``patterns`` (``libcudart.so*``)?"""
    return any(fnmatch.fnmatchcase(n, p) for n in library_names(name) for p in patterns or ())


def judge_binary(policy, name, path, needed, soname=None):
    """Problems of dist ``name`` shipping the ELF file ``path`` that needs the libraries
    ``needed`` (its DT_NEEDED, in order) and is named ``soname``: ``cuda-binary`` when it needs
    (or is) a CUDA runtime library of the policy's ``binary.deny_needed``; ``foreign-hip`` when it
    needs a HIP runtime (``binary.hip_runtime``) and none of the DTK ones
    (``binary.gpu_runtime``)."""
    rules = policy.get("binary") or {}
    key = canonical(name) if name else str(path)
    shown = f"{path} of {name}" if name else str(path)
    needed = list(needed or ())
    evidence = {"file": str(path), "needed": needed}
    if soname:
        evidence["soname"] = soname
    out = []
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


def gpu_runtime(policy, needed):
    """Which GPU runtime a binary needing ``needed`` links: ``dtk``, ``cuda``, ``rocm`` or
    None (no GPU runtime)."""
    rules = policy.get("binary") or {}
    kinds = (("dtk", "gpu_runtime"), ("cuda", "deny_needed"), ("rocm", "hip_runtime"))
    for kind, field in kinds:
        if any(library_matches(n, rules.get(field)) for n in needed or ()):
            return kind
    return None


# -- identity: the vendor build of the baseline ----------------------------------------------


def comparable(rel):
    """Files a wheel and its installed copy share: not the metadata pip rewrites, not .pyc."""
    return ".dist-info/" not in rel and not rel.endswith(".pyc") and not rel.startswith("../")


def _hex(digest):
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


def baseline_build(baseline, name, version, record_sha256=None, files=None, wheel_sha256=None):
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
    verdicts = []
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


def judge_build(baseline, name, version, files=None, wheel_sha256=None):
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


def exception_covers(exception, rule, subject):
    """Does the policy exception (a JSON dict) name ``rule`` for ``subject`` (a package name,
    or a path when the exception's package contains ``/``)?"""
    if exception.get("rule") != rule:
        return False
    pattern = exception.get("package", "")
    if "/" in pattern:
        return fnmatch.fnmatchcase(str(subject).lower(), pattern)
    return fnmatch.fnmatchcase(canonical(subject), pattern)


def exception_active(exception, today):
    """Unexpired on ``today`` (an ISO date string): the exception's last day is ``expires``."""
    return str(today) <= str(exception.get("expires", ""))


def waiver(policy, problem, today):
    """The unexpired exception of ``policy`` that waives ``problem``, or None."""
    for exception in policy.get("exceptions") or ():
        if exception_covers(exception, problem.rule, problem.package) and exception_active(
            exception, today
        ):
            return exception
    return None


def decide(policy, dists, today, reference=None, files=None, owners=None, guard=(), sites=()):
    """Every unwaived problem of putting ``dists`` ([(name, version)]) into the environment,
    most severe first. ``files`` maps a name to the paths it writes (see ``judge_files``)."""
    out = []
    for name, version in dists:
        found = judge_dist(policy, name, version, reference)
        if files is not None and name in files:
            found += judge_files(policy, name, files[name], owners, guard, sites)
        out += [p for p in found if waiver(policy, p, today) is None]
    return sorted(out, key=lambda p: _ORDER.get(p.severity, 9))


def refusals(problems):
    """The problems that refuse an install."""
    return [p for p in problems if p.blocking]
