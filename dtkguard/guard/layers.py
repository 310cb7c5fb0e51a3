"""`dtkguard guard install|status|remove`: the files that guard one interpreter.

Layers: the compiled policy and the constraints file (``<prefix>/dtkguard/``, caches the hook
and pip read), the site-level ``<prefix>/pip.conf`` (read even by ``pip --isolated``), the pip
hook (a module and a ``.pth`` line in the target's site-packages), optionally uv's config and a
PEP 668 marker, and a read-only pointer to the env's folder in the guard's store
(``<prefix>/dtkguard/store.json``). The store (`dtkguard.env.store`) holds the references: the
baseline, the manifest (what was written, with its sha256 and the previous content of files that
existed before, so that `remove` undoes exactly that), copies of the policy and the tripwire
snapshot. Every write is atomic. A guard from before the store is moved into it (`migrate`).
"""

from __future__ import annotations

import configparser
import contextlib
import hashlib
import io
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from dtkguard.env import store
from dtkguard.env.baseline import baseline_path
from dtkguard.env.interpreter import Interpreter
from dtkguard.errors import InputError, TargetError
from dtkguard.guard import baseline as baselines
from dtkguard.guard.hook_files import FINDER_MODULE, HOOK_MODULE, HOOK_PTH, hook_source
from dtkguard.guard.hook_policy import constraints_text, hook_json
from dtkguard.guard.transaction import require_writable, roll_back
from dtkguard.policy.compiled import CompiledPolicy
from dtkguard.util.atomic import atomic_write_text
from dtkguard.util.trust import FILE_MODE, make_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from dtkguard.lock.read import Lock
    from dtkguard.util.json_types import JSON

#: the copy of `dtkguard.decision` beside the hook (the hook imports it by path)
HOOK_DECISION = "_dtkguard_decision.py"
#: the copy of `dtkguard.protected` (the protected set) beside the hook
HOOK_PROTECTED = "_dtkguard_protected.py"
#: the copy of `dtkguard.elf` beside the hook (what a wheel's native code links)
HOOK_ELF = "_dtkguard_elf.py"
#: the copy of `dtkguard.records` beside the hook (RECORD rows, a wheel's layout)
HOOK_RECORDS = "_dtkguard_records.py"
#: the copy of `dtkguard.sitefacts` beside the hook (the interpreter's facts it judges with)
HOOK_SITEFACTS = "_dtkguard_sitefacts.py"
#: the copy of `dtkguard.buildwatch` beside the hook (the build journal around pip's builds)
HOOK_BUILDWATCH = "_dtkguard_buildwatch.py"
#: the copy of `dtkguard.pipoverride` beside the hook (an override and its record)
HOOK_PIPOVERRIDE = "_dtkguard_pipoverride.py"
MARKER = "EXTERNALLY-MANAGED"
TRIPWIRE_MODULE = "_dtkguard_tripwire.py"


def decision_source(module: str = "decision.py") -> str:
    """The source of `dtkguard.decision` (or of another stdlib module of the hook's, such as
    ``protected.py``), copied beside the hook as ``_dtkguard_<module>``."""
    return resources.files("dtkguard").joinpath(module).read_text(encoding="utf-8")


def env_uv_config(interp: Interpreter) -> Path:
    """uv's config of one environment, ``<prefix>/uv.toml``: the env's uv shim points uv at it
    (``UV_CONFIG_FILE``), so uv anywhere else on the machine never reads the vendor pins."""
    return interp.prefix / "uv.toml"


def machine_wide(path: Path | str | None, interp: Interpreter) -> bool:
    """A uv config outside the environment: every uv of the machine (or user) may read it."""
    return path is not None and not Path(path).is_relative_to(interp.prefix)


@dataclass(frozen=True)
class Layer:
    """One file the guard owns (or edits), and what it should hold."""

    name: str
    path: Path
    content: str
    #: file mode when written (the `uv` shim is executable)
    mode: int | None = None


def _pip_conf(policy: CompiledPolicy, constraints: Path, original: str | None) -> str:
    cfg = configparser.ConfigParser(interpolation=None)
    if original:
        cfg.read_string(original)
    if not cfg.has_section("install"):
        cfg.add_section("install")
    _add(cfg, "constraint", [str(constraints)])
    _add(cfg, "find-links", policy.find_links)
    _add(cfg, "extra-index-url", policy.indexes)
    buf = io.StringIO()
    if not original:
        buf.write(
            f"# dtkguard: vendor pins of policy {policy.name}; `dtkguard guard remove` undoes\n"
        )
    cfg.write(buf)
    return buf.getvalue()


def _add(cfg: configparser.ConfigParser, key: str, ours: Sequence[str]) -> None:
    """``[install] key``: what the original gave ``pip install`` (its ``[install]`` value, else
    its ``[global]`` one, either spelling) and then ``ours``. Setting ours alone would drop the
    user's own constraints, find-links or extra indexes for as long as the guard is there."""
    if not ours:
        return
    theirs: list[str] = []
    for section in ("install", "global"):
        for spelling in (key, key.replace("-", "_")):
            value = cfg.get(section, spelling, fallback=None)
            if value and not theirs:
                theirs = value.split()  # pip splits a config list on whitespace
        if theirs:
            break
    cfg.remove_option("install", key.replace("-", "_"))
    cfg.set("install", key, "\n".join([*theirs, *(x for x in ours if x not in theirs)]))


def _uv_toml(policy: CompiledPolicy, original: str | None) -> str:
    import tomlkit

    doc = tomlkit.parse(original) if original else tomlkit.document()
    if not original:
        doc.add(tomlkit.comment(f"dtkguard: vendor pins of policy {policy.name}"))
    pins = [f"{n}=={v}" for n, v in sorted(policy.vendor.items())]
    existing = [str(x) for x in doc.get("constraint-dependencies", [])]
    doc["constraint-dependencies"] = existing + [p for p in pins if p not in existing]
    sources = [(u, "flat") for u in policy.find_links] + [(u, None) for u in policy.indexes]
    if sources:
        table = tomlkit.aot()
        for i, (url, fmt) in enumerate(sources):
            entry = tomlkit.table()
            entry["name"] = f"dtk-vendor-{i + 1}"
            entry["url"] = url
            if fmt:
                entry["format"] = fmt
            table.append(entry)
        for old in doc.get("index", []):
            if not str(old.get("name", "")).startswith("dtk-vendor-"):
                table.append(old)
        doc["index"] = table
    return tomlkit.dumps(doc)


def without_vendor_pins(config: Path, policy: CompiledPolicy) -> str:
    """uv's config ``config`` with no ``constraint-dependencies`` entry on a vendor build of
    ``policy`` (what `_uv_toml` added): the rest, the vendor index included, stays."""
    import tomlkit
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        msg = f"cannot read uv's config {config}: {exc}"
        raise InputError(msg, field="UV_CONFIG_FILE") from exc
    vendor = {canonicalize_name(n) for n in policy.vendor}

    def kept(entry: object) -> bool:
        try:
            return canonicalize_name(Requirement(str(entry)).name) not in vendor
        except InvalidRequirement:
            return True  # not ours: uv judges it

    pins = doc.get("constraint-dependencies")
    if isinstance(pins, list):
        doc["constraint-dependencies"] = [str(p) for p in pins if kept(p)]
    return tomlkit.dumps(doc)


def uv_shim(interp: Interpreter, config: Path | None = None) -> str:
    """``<env>/bin/uv``: every uv command of the environment goes through dtkuv, run by the
    interpreter that runs dtkguard now; dtkuv finds the real uv on PATH, never this file. With
    ``config``, uv reads that file (``UV_CONFIG_FILE``): the vendor pins, for this env only."""
    from dtkguard.guard.uvplan import SHIM_MARKER

    use = f"UV_CONFIG_FILE={shlex.quote(str(config))}; export UV_CONFIG_FILE\n" if config else ""
    return (
        "#!/bin/sh\n"
        f"# {SHIM_MARKER}: uv of this environment runs through dtkuv (`dtkguard guard install "
        "--uv`);\n# `dtkguard guard remove` deletes this file. Non-pip uv commands reach the real "
        "uv unchanged.\n"
        f"{use}"
        f"exec {shlex.quote(sys.executable)} -I -m dtkguard uv --shim-of "
        f'{shlex.quote(str(interp.python))} "$@"\n'
    )


def shim_path(interp: Interpreter) -> Path:
    return (interp.scripts or interp.prefix / "bin") / "uv"


def _marker(policy: CompiledPolicy) -> str:
    pins = ", ".join(f"{n} {v}" for n, v in sorted(policy.vendor.items()) if n == "torch")
    return (
        "[externally-managed]\n"
        f"Error=This Python holds Hygon DCU vendor builds (policy {policy.name}"
        + (f": {pins}" if pins else "")
        + "). Install with `dtkpip install ...` (dtkguard checks the plan first and then installs "
        "for you); `dtkguard policy explain torch` shows the rules.\n"
    )


def planned_layers(
    interp: Interpreter,
    policy: CompiledPolicy,
    originals: dict[str, str | None],
    *,
    uv_config: Path | None = None,
    externally_managed: bool = False,
    uv_shim_too: bool = False,
    baseline: dict[str, JSON] | None = None,
) -> list[Layer]:
    state = interp.state_dir
    constraints = state / "constraints.txt"
    mode = getattr(policy, "on_import", "warn")
    names = baselines.tripwire_modules(baseline) if baseline and mode != "off" else []
    tripwire = interp.state_dir / baselines.TRIPWIRE_FILE
    finder = (
        hook_source(FINDER_MODULE)
        .replace("__POLICY__", repr(str(interp.policy_file)))
        .replace("__VENDOR_MODULES__", repr(tuple(names)))
        .replace("__TRIPWIRE__", repr(str(tripwire)))
    )
    layers = [
        Layer("policy", interp.policy_file, hook_json(policy)),
        Layer("constraints", constraints, constraints_text(policy)),
        Layer(
            "pip.conf",
            interp.prefix / "pip.conf",
            _pip_conf(policy, constraints, originals.get(str(interp.prefix / "pip.conf"))),
        ),
        Layer("hook", interp.purelib / HOOK_MODULE, hook_source(HOOK_MODULE)),
        Layer("decision", interp.purelib / HOOK_DECISION, decision_source()),
        Layer("protected", interp.purelib / HOOK_PROTECTED, decision_source("protected.py")),
        Layer("elf", interp.purelib / HOOK_ELF, decision_source("elf.py")),
        Layer("records", interp.purelib / HOOK_RECORDS, decision_source("records.py")),
        Layer("sitefacts", interp.purelib / HOOK_SITEFACTS, decision_source("sitefacts.py")),
        Layer("buildwatch", interp.purelib / HOOK_BUILDWATCH, decision_source("buildwatch.py")),
        Layer("pipoverride", interp.purelib / HOOK_PIPOVERRIDE, decision_source("pipoverride.py")),
        Layer("finder", interp.purelib / FINDER_MODULE, finder),
        Layer("hook.pth", interp.purelib / HOOK_PTH, hook_source(HOOK_PTH)),
    ]
    layers += _tripwire_layers(interp, policy, baseline)
    es = store.env_store(interp.prefix)
    layers.append(
        Layer("pointer", store.pointer_path(interp.prefix), store.pointer_text(es), 0o444)
    )
    if uv_config is not None:
        layers.append(Layer("uv", uv_config, _uv_toml(policy, originals.get(str(uv_config)))))
    if uv_shim_too:
        layers.append(Layer("uv-shim", shim_path(interp), uv_shim(interp, uv_config), 0o755))
    if externally_managed:
        if interp.in_venv:
            raise InputError(
                f"{interp.python} is a virtual environment: pip and uv ignore "
                "EXTERNALLY-MANAGED inside venvs, use it for base or conda interpreters",
                field="--externally-managed",
            )
        layers.append(Layer("externally-managed", interp.stdlib / MARKER, _marker(policy)))
    return layers


def _tripwire_layers(
    interp: Interpreter, policy: CompiledPolicy, baseline: dict[str, JSON] | None
) -> list[Layer]:
    """The import tripwire: its module and ``tripwire.txt`` (the start-up finder names the
    vendor top-level modules; none with ``on-import = "off"``)."""
    mode = getattr(policy, "on_import", "warn")
    return [
        Layer("tripwire", interp.purelib / TRIPWIRE_MODULE, hook_source(TRIPWIRE_MODULE)),
        Layer(
            "tripwire.txt",
            interp.state_dir / baselines.TRIPWIRE_FILE,
            baselines.tripwire_text(baseline or {}, mode),
        ),
    ]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _read(path: Path) -> str | None:
    """A layer's text; None when there is none, "" when it is not the guard's (a binary, a
    FIFO or a device: read non-blocking, regular files only, capped)."""
    from dtkguard.util.safe_read import NotRegularFile, read_capped

    try:
        return read_capped(path, 64 << 20, what="guard layer").decode("utf-8")
    except NotRegularFile:
        return None if path.is_dir() else ""  # a folder is refused by `require_writable`
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except (UnicodeDecodeError, OSError):
        return ""  # a binary (a real uv where the shim was), too large: never the guard's file


class Manifest:
    """The guard's manifest in the store: {path: {layer, sha256, original}}."""

    def __init__(self, interp: Interpreter, path: Path | None = None) -> None:
        self.path = path or store.env_store(interp.prefix).manifest
        from dtkguard.util.safe_read import read_json

        try:
            data = read_json(self.path, what="manifest")
            self.files: dict[str, dict[str, JSON]] = dict(data.get("files", {}))
            self.options: dict[str, JSON] = dict(data.get("options", {}))
        except (OSError, ValueError, AttributeError, TypeError):
            self.files, self.options = {}, {}

    @property
    def exists(self) -> bool:
        return self.path.is_file()

    def originals(self) -> dict[str, str | None]:
        return {p: e.get("original") for p, e in self.files.items()}

    def save(self) -> None:
        make_dir(self.path.parent)
        data = {"files": self.files, "options": self.options}
        atomic_write_text(self.path, json.dumps(data, indent=1, sort_keys=True) + "\n", FILE_MODE)


def install(
    interp: Interpreter,
    policy: CompiledPolicy,
    *,
    uv_config: Path | None = None,
    externally_managed: bool = False,
    uv_shim_too: bool = False,
    lock: Lock | None = None,
    rebaseline: bool = False,
    record_baseline: bool = True,
) -> list[tuple[str, Path, str]]:
    """Write every layer; returns (layer, path, "written" | "unchanged").
    ``record_baseline=False`` (restore repairing the guard): the store's baseline is kept when
    there is one, and none is recorded when there is not (that would bless the damage).

    The baseline is recorded first (nothing is written when a vendor build does not match
    its RECORD) and kept on later installs unless ``rebaseline``."""
    store.refuse_inside(interp)
    from dtkguard.guard.migrate import migrate

    migrate(interp, rebaseline=rebaseline)
    manifest = Manifest(interp)
    if uv_shim_too:
        _refuse_foreign_shim(interp, manifest)
    base: tuple[str, str] | None = None
    bpath = baseline_path(interp.prefix)
    if record_baseline or (str(bpath) in manifest.files and bpath.is_file()):
        base = _baseline(interp, policy, manifest, lock, rebaseline)
    originals = _originals(interp, manifest, uv_config)
    layers = planned_layers(
        interp,
        policy,
        originals,
        uv_config=uv_config,
        externally_managed=externally_managed,
        uv_shim_too=uv_shim_too,
        baseline=json.loads(base[0]) if base else None,
    )
    options = {
        "policy": policy.name,
        "uv_config": str(uv_config) if uv_config else None,
        "externally_managed": externally_managed,
        "uv_shim": uv_shim_too,
    }

    def finish(written: list[tuple[Path, str | None]]) -> list[tuple[str, Path, str]]:
        """The steps after the layers, inside the same all or nothing: a full disk here
        rolls the layers back too, never leaves them with a manifest that misses them."""
        _list_compiled_hooks(interp, manifest)
        more = _undo_moved_uv(manifest, uv_config) if uv_config is not None else []
        es = store.env_store(interp.prefix)
        written += [(es.record_file, _read(es.record_file)), (es.protected, _read(es.protected))]
        store.record_env(interp, guarded=True)
        refresh_protected(interp)
        manifest.options = options
        manifest.save()
        return more

    return _write_all(interp, manifest, layers, originals, base, finish)


def _write_all(
    interp: Interpreter,
    manifest: Manifest,
    layers: list[Layer],
    originals: dict[str, str | None],
    base: tuple[str, str] | None,
    finish: Callable[[list[tuple[Path, str | None]]], list[tuple[str, Path, str]]],
) -> list[tuple[str, Path, str]]:
    """Write the baseline, every layer and the store's copies, then ``finish`` (given the
    list of written files to add to), or nothing (rolled back)."""
    bpath = baseline_path(interp.prefix)
    es = store.env_store(interp.prefix)
    copies = _store_copies(es, layers)
    # the pointer is read-only: it is replaced by rename, never written through
    paths = [layer.path for layer in layers if layer.name != "pointer"]
    require_writable([manifest.path, bpath, *paths, *(p for p, _ in copies)])
    results = []
    #: (path, content before) of every file written, manifest included: undone on failure
    written: list[tuple[Path, str | None]] = [(manifest.path, _read(manifest.path))]
    try:
        es.create()
        make_dir(interp.state_dir)
        if base is not None:
            results.append(_write_baseline(manifest, bpath, *base, written))
        for layer in layers:
            results.append(_write_layer(manifest, layer, originals, written))
            manifest.save()  # after every file: a crash never leaves an unlisted file behind
        for path, text in copies:
            written.append((path, _read(path)))
            atomic_write_text(path, text, 0o600)
        results += finish(written)
    except (OSError, InputError) as exc:
        left = roll_back(written)
        if isinstance(exc, InputError):
            raise
        raise _install_error(exc, written, results, left) from None
    return results


def _store_copies(es: store.EnvStore, layers: list[Layer]) -> list[tuple[Path, str]]:
    """The store's own copies of what the hook and the tripwire read from their caches in the
    env (restore writes the caches back from them)."""
    by_name = {layer.name: layer.content for layer in layers}
    return [(es.policy, by_name["policy"]), (es.tripwire, by_name["tripwire.txt"])]


def _undo_moved_uv(manifest: Manifest, uv_config: Path) -> list[tuple[str, Path, str]]:
    """A uv config the guard wrote elsewhere before (``/etc/uv/uv.toml``, the default of older
    dtkguards) gets its previous content back, unless edited since: the pins live in
    ``uv_config`` now."""
    results = []
    for path_text, entry in list(manifest.files.items()):
        if entry.get("layer") != "uv" or path_text == str(uv_config):
            continue
        path, current = Path(path_text), _read(Path(path_text))
        if current is not None and _sha(current) != entry.get("sha256"):
            continue  # changed since install: left as it is, and listed for `remove`
        if entry.get("original") is not None:
            atomic_write_text(path, entry["original"])
            results.append(("uv", path, "restored"))
        elif current is not None:
            path.unlink()
            results.append(("uv", path, "removed"))
        del manifest.files[path_text]
    return results


def _refuse_foreign_shim(interp: Interpreter, manifest: Manifest) -> None:
    """Refuse to put the uv shim over a ``uv`` that is not dtkguard's (uv installed there)."""
    shim = shim_path(interp)
    if str(shim) not in manifest.files and (shim.exists() or shim.is_symlink()):
        from dtkguard.guard.uvplan import is_shim

        if not is_shim(shim):
            raise InputError(
                f"{shim} exists and is not dtkguard's shim (uv installed into the environment?): "
                "uninstall it there and use a uv from outside the environment",
                field="--uv",
            )


def _originals(
    interp: Interpreter, manifest: Manifest, uv_config: Path | None
) -> dict[str, str | None]:
    """The content of the edited files before the guard: from the manifest, else as they are."""
    originals = manifest.originals()
    wanted = [uv_config] if uv_config else []
    for path in [interp.prefix / "pip.conf", *wanted]:
        if str(path) not in originals:
            originals[str(path)] = _read(path)
    return originals


def _write_baseline(
    manifest: Manifest,
    bpath: Path,
    text: str,
    state: str,
    written: list[tuple[Path, str | None]],
) -> tuple[str, Path, str]:
    """Write the baseline when it changed and list it in the (saved) manifest."""
    if state == "written":
        written.append((bpath, _read(bpath)))
        atomic_write_text(bpath, text)
    manifest.files[str(bpath)] = {"layer": "baseline", "original": None, "sha256": _sha(text)}
    manifest.save()
    return ("baseline", bpath, state)


def _write_layer(
    manifest: Manifest,
    layer: Layer,
    originals: dict[str, str | None],
    written: list[tuple[Path, str | None]],
) -> tuple[str, Path, str]:
    """Write one layer when its content differs, listing it (and what it replaced) first."""
    if str(layer.path) not in manifest.files:
        original = originals.get(str(layer.path), _read(layer.path))
        if layer.name in _OWN_FILES and original is not None:
            if "dtkguard" not in original:
                raise InputError(f"{layer.path} exists and is not dtkguard's", field=layer.name)
            original = None
        manifest.files[str(layer.path)] = {"layer": layer.name, "original": original}
    current = _read(layer.path)
    if current != layer.content:
        make_dir(layer.path.parent)
        written.append((layer.path, current))
        atomic_write_text(layer.path, layer.content, layer.mode or FILE_MODE)
    elif layer.path.stat().st_mode & 0o022:  # unchanged, but others could write it: not ours
        os.chmod(layer.path, layer.mode or FILE_MODE)
    manifest.files[str(layer.path)]["sha256"] = _sha(layer.content)
    return (layer.name, layer.path, "unchanged" if current == layer.content else "written")


def _install_error(
    exc: OSError,
    written: list[tuple[Path, str | None]],
    results: list[tuple[str, Path, str]],
    left: list[str],
) -> TargetError:
    """The error of a failed install, saying what was rolled back and what could not be."""
    done = sum(1 for _, _, what in results if what == "written")
    undone = f"rolled back the {done} layer(s) written before it"
    if left:
        undone += f"; could not restore {', '.join(left)}"
    where = written[-1][0] if len(written) > 1 else getattr(exc, "filename", None)
    where = where or written[0][0]  # a write without a file name: the manifest's, first
    return TargetError(f"cannot guard: {where}: {exc.strerror or exc}; {undone}")


def _list_compiled_hooks(interp: Interpreter, manifest: Manifest) -> None:
    """Compile the guard's modules and list their ``.pyc`` files with their code's digest, so
    that `remove` takes them and `status` tells a planted one."""
    for module, layer_name in (
        (HOOK_MODULE, "hook.pyc"),
        (HOOK_DECISION, "hook.pyc"),
        (HOOK_PROTECTED, "hook.pyc"),
        (HOOK_ELF, "hook.pyc"),
        (HOOK_RECORDS, "hook.pyc"),
        (HOOK_SITEFACTS, "hook.pyc"),
        (HOOK_BUILDWATCH, "hook.pyc"),
        (HOOK_PIPOVERRIDE, "hook.pyc"),
        (TRIPWIRE_MODULE, "tripwire.pyc"),
        (FINDER_MODULE, "finder.pyc"),
    ):
        pyc = _compile(interp, interp.purelib / module)
        if pyc is not None:  # its code's digest: `status` tells a planted .pyc (it runs instead)
            code = baselines.pyc_body_sha256(pyc)
            manifest.files[str(pyc)] = {"layer": layer_name, "original": None, "sha256": None}
            manifest.files[str(pyc)]["code_sha256"] = code


_OWN_FILES = (
    "hook",
    "decision",
    "protected",
    "elf",
    "records",
    "sitefacts",
    "buildwatch",
    "pipoverride",
    "finder",
    "hook.pth",
    "externally-managed",
    "tripwire",
    "uv-shim",
    "pointer",
)


def _baseline(
    interp: Interpreter,
    policy: CompiledPolicy,
    manifest: Manifest,
    lock: Lock | None,
    rebaseline: bool,
) -> tuple[str, str]:
    """(baseline.json text, "written" | "unchanged"): the recorded baseline is kept as long
    as it is intact (with the size and mtime of files whose bytes are unchanged refreshed);
    a changed one is refused (re-recording would bless the damage)."""
    bpath = baseline_path(interp.prefix)
    entry = manifest.files.get(str(bpath))
    current = _read(bpath)
    if not rebaseline and entry is not None and current is not None:
        if _sha(current) != entry.get("sha256"):
            raise InputError(
                f"{bpath} changed since `guard install`; check the environment "
                "(`dtkguard check`), then record a new baseline with `guard install --rebaseline`",
                field="baseline",
            )
        # same bytes, new mtimes (a reinstall of the same build): the stats follow
        data, _ = baselines.refreshed(json.loads(current))
        if lock is not None:
            data["lock"] = baselines.lock_data(lock)
        text = baselines.dumps(data)
        return (current, "unchanged") if text == current else (text, "written")
    return baselines.dumps(baselines.record(interp, policy, lock)), "written"


def _compile(interp: Interpreter, module: Path) -> Path | None:
    """Byte-compile the hook with the target interpreter so its start-up cost stays tiny.

    Compiled beside its place and moved in only once it reads back whole: on a full disk a
    short write does not raise (py_compile would move a truncated ``.pyc`` in, which breaks
    the import of the hook); then the ``.pyc`` there stays as it was and None is returned."""
    code = (
        "import py_compile,importlib.util as u,marshal,os,sys\n"
        "s=sys.argv[1];c=u.cache_from_source(s);t=c+'.dtkguard-tmp'\n"
        "try:\n"
        " py_compile.compile(s,cfile=t,doraise=True)\n"
        " with open(t,'rb') as f:marshal.loads(f.read()[16:])\n"
        " os.replace(t,c)\n"
        "except BaseException:\n"
        " os.path.exists(t) and os.unlink(t)\n"
        " raise\n"
        "print(c)"
    )
    try:
        out = subprocess.run(
            [interp.python, "-I", "-S", "-c", code, str(module)],
            umask=0o022,  # __pycache__ and the .pyc: no group/other write under umask 000
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out) if out else None


def status(interp: Interpreter, policy: CompiledPolicy) -> list[tuple[str, Path, str]]:
    """(layer, path, state) for every layer against ``policy``: "present"; "absent";
    "tampered" when the file is no longer what `install` wrote (its sha256 in the manifest);
    "stale" when it is, but ``policy`` now asks for other content."""
    manifest = Manifest(interp)
    uv = manifest.options.get("uv_config")
    bpath = baseline_path(interp.prefix)
    text = _read(bpath)
    entry = manifest.files.get(str(bpath)) or {}
    from dtkguard.env.baseline import validate
    from dtkguard.util.text import json_loads

    try:
        baseline = json_loads(text) if text is not None else None
        if baseline is not None and (not isinstance(baseline, dict) or validate(baseline)):
            baseline = None  # not a baseline `guard install` wrote: its layers are "tampered"
    except ValueError:
        baseline = None
    layers = planned_layers(
        interp,
        policy,
        manifest.originals(),
        uv_config=Path(uv) if uv else None,
        externally_managed=bool(manifest.options.get("externally_managed")),
        uv_shim_too=bool(manifest.options.get("uv_shim")),
        baseline=baseline,
    )
    base_state = (
        "absent" if text is None else "present" if entry.get("sha256") == _sha(text) else "tampered"
    )
    out = [("baseline", bpath, base_state)]
    for layer in layers:
        current = _read(layer.path)
        written = manifest.files.get(str(layer.path), {}).get("sha256")
        if current is None:
            state = "absent"
        elif written and _sha(current) != written:
            state = "tampered"
        else:
            state = "present" if current == layer.content else "stale"
        out.append((layer.name, layer.path, state))
    return _unsafe(interp, out + _tampered_byte_code(manifest))


def _unsafe(interp: Interpreter, rows: list[tuple[str, Path, str]]) -> list[tuple[str, Path, str]]:
    """Rows whose file (or the guard's state folder) someone other than the env's owner could
    have written are "unsafe": the pip hook refuses such a policy, baseline or decision copy."""
    from dtkguard.util.trust import env_owner, untrusted

    owner = env_owner(interp.prefix)
    out = [
        (name, path, "unsafe" if state == "present" and untrusted(path, owner) else state)
        for name, path, state in rows
    ]
    if untrusted(interp.state_dir, owner):
        out.append(("state folder", interp.state_dir, "unsafe"))
    return out


def _tampered_byte_code(manifest: Manifest) -> list[tuple[str, Path, str]]:
    """The guard's ``.pyc`` files whose code is not what `install` compiled: Python runs a
    ``.pyc`` whose header matches the source instead of the source. A missing one is no
    finding (Python compiles the source again)."""
    out = []
    for path, entry in sorted(manifest.files.items()):
        code = entry.get("code_sha256")
        if code and os.path.exists(path) and baselines.pyc_body_sha256(path) != code:
            out.append((str(entry.get("layer")), Path(path), "tampered"))
    return out


def remove(interp: Interpreter) -> list[tuple[str, Path, str]]:
    """Undo `install`: delete what it created, restore what it edited (unless edited since).
    Every path is checked writable first: on a read-only file system nothing is removed (a
    guard half removed would guard nothing and could not be removed again)."""
    manifest = Manifest(interp)
    present = [Path(p) for p in manifest.files if os.path.lexists(p)]
    paths = [*present, *([manifest.path] if manifest.exists else [])]
    require_writable(paths, "cannot remove the guard", "nothing was removed")
    results = []
    for path_text, entry in sorted(
        manifest.files.items(), key=lambda kv: kv[1].get("layer") == "policy"
    ):
        path = Path(path_text)
        current = None if str(entry.get("layer")).endswith(".pyc") else _read(path)
        original = entry.get("original")
        if entry.get("sha256") and current is not None and _sha(current) != entry["sha256"]:
            results.append((entry["layer"], path, "kept (changed since install)"))
            continue
        if original is not None:
            atomic_write_text(path, original)
            results.append((entry["layer"], path, "restored"))
        elif path.exists():
            path.unlink()
            results.append((entry["layer"], path, "removed"))
    if manifest.exists:
        manifest.path.unlink()
    es = store.env_store(interp.prefix)
    for copy in (es.policy, es.tripwire):
        copy.unlink(missing_ok=True)
    if es.exists:
        store.record_env(interp, guarded=False)  # the journal and the override log stay
    with contextlib.suppress(OSError):
        interp.state_dir.rmdir()  # only when empty
    return results


def save_baseline(interp: Interpreter, data: dict[str, JSON]) -> Path:
    """Replace the store's baseline of ``interp``'s env with ``data`` and its digest in the
    store's manifest (for a baseline that moves forward on an approved transaction); returns
    its path. Nothing inside the env is written."""
    manifest = Manifest(interp)
    bpath = baseline_path(interp.prefix)
    text = baselines.dumps(data)
    store.env_store(interp.prefix).create()
    atomic_write_text(bpath, text, 0o600)
    manifest.files[str(bpath)] = {"layer": "baseline", "original": None, "sha256": _sha(text)}
    manifest.save()
    return bpath


def refresh_protected(interp: Interpreter) -> None:
    """Record the protected files of ``interp``'s env as they are now (after an approved
    change to them, such as a pip upgrade through dtkpip)."""
    from dtkguard.env import protected_copy
    from dtkguard.guard.protected import protected_paths

    protected_copy.record(store.env_store(interp.prefix), protected_paths(interp))
