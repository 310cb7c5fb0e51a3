"""Find model folders and their files: plain folders, Hugging Face cache repos and snapshots.

Symlinks are followed with ``stat`` (HF snapshots link into ``blobs/``); a symlink loop, a
directory seen twice, or anything that is not a regular file is reported, never read.
"""

from __future__ import annotations

import errno
import os
import stat

from dtkguard.lightclass import field, record

#: weight file format -> its file name suffixes: the one list (`dtkguard.modelscan.scan` reads each
#: format with its reader)
WEIGHT_FORMATS: dict[str, tuple[str, ...]] = {
    "safetensors": (".safetensors",),
    "pickle": (".bin", ".pt", ".pth", ".ckpt"),
    "gguf": (".gguf",),
}
WEIGHT_SUFFIXES = tuple(s for suffixes in WEIGHT_FORMATS.values() for s in suffixes)
#: config files and sidecars: gpt-oss's ``original/dtypes.json`` names each tensor's real dtype
CONFIG_NAMES = ("config.json", "hf_quant_config.json", "quantization_config.json", "dtypes.json")
INDEX_SUFFIX = ".safetensors.index.json"
MAX_FILES = 10_000
MAX_MODELS = 1_000
#: how deep a model folder is walked (``original/`` and the like), and how deep we look for one
FILE_DEPTH = 2
SEARCH_DEPTH = 3


def weight_format(path: str) -> str | None:
    """The `WEIGHT_FORMATS` key of a weight file's name, None for other files."""
    return next((f for f, suffixes in WEIGHT_FORMATS.items() if path.endswith(suffixes)), None)


@record
class ModelSource:
    """One model: a folder (or a single file) and the files worth reading in it."""

    path: str
    name: str
    files: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


def _stat(path: str) -> os.stat_result:
    return os.stat(path)


def _describe(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    return exc.strerror or str(exc)


def _is_model_file(name: str) -> bool:
    return name.endswith(WEIGHT_SUFFIXES) or name in CONFIG_NAMES or name.endswith(INDEX_SUFFIX)


def _hf_name(repo_dir: str, rev: str | None) -> str:
    base = os.path.basename(os.path.normpath(repo_dir))
    parts = base.split("--")[1:]
    name = "/".join(parts) or base
    return f"{name}@{rev[:12]}" if rev else name


def _snapshot(repo_dir: str) -> tuple[str | None, str | None]:
    """The snapshot folder of a ``models--org--name`` cache repo: refs/main, else the newest."""
    snaps = os.path.join(repo_dir, "snapshots")
    try:
        from dtkguard.util.safe_read import read_head

        # non-blocking, regular files only: a FIFO there must not hang scan-model or exec
        ref = read_head(os.path.join(repo_dir, "refs", "main"), 100)
        rev = ref.decode("utf-8", "replace").strip()
        if rev and "/" not in rev and os.path.isdir(os.path.join(snaps, rev)):
            return os.path.join(snaps, rev), rev
    except OSError:
        pass
    try:
        revs = [e for e in os.scandir(snaps) if e.is_dir()]
    except OSError:
        return None, None
    if not revs:
        return None, None
    newest = max(revs, key=lambda e: e.stat().st_mtime)
    return newest.path, newest.name


def _walk(root: str, src: ModelSource, depth: int, seen: set[tuple[int, int]]) -> None:
    try:
        st = _stat(root)
    except OSError as exc:
        src.problems.append((root, _describe(exc)))
        return
    key = (st.st_dev, st.st_ino)
    if key in seen:
        src.problems.append((root, "symlink loop (folder already visited)"))
        return
    seen.add(key)
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        src.problems.append((root, _describe(exc)))
        return
    for entry in entries:
        if len(src.files) >= MAX_FILES:
            src.problems.append((root, f"more than {MAX_FILES} files; the rest not read"))
            return
        try:
            st = entry.stat()
        except OSError as exc:
            if _is_model_file(entry.name) or entry.is_symlink():
                src.problems.append((entry.path, _describe(exc)))
            continue
        if stat.S_ISDIR(st.st_mode):
            if depth < FILE_DEPTH and not entry.name.startswith("."):
                _walk(entry.path, src, depth + 1, seen)
        elif stat.S_ISREG(st.st_mode) and _is_model_file(entry.name):
            src.files.append(entry.path)


def _looks_like_model(path: str) -> bool:
    try:
        return any(_is_model_file(e.name) for e in os.scandir(path))
    except OSError:
        return False


def find_models(path: str) -> list[ModelSource]:
    """Every model found at ``path`` (a file, a model folder, an HF cache, or a parent folder)."""
    try:
        st = _stat(path)
    except OSError as exc:
        return [ModelSource(path=path, name=path, problems=[(path, _describe(exc))])]
    if stat.S_ISREG(st.st_mode):
        return [ModelSource(path=path, name=os.path.basename(path), files=[path])]
    if not stat.S_ISDIR(st.st_mode):
        return [ModelSource(path=path, name=path, problems=[(path, "not a file or folder")])]
    return _find_in_dir(path, 0)


def _find_in_dir(path: str, depth: int) -> list[ModelSource]:
    norm = os.path.normpath(path)
    base = os.path.basename(norm)
    parent = os.path.dirname(norm)
    if base.startswith("models--") and os.path.isdir(os.path.join(norm, "snapshots")):
        snap, rev = _snapshot(norm)
        if snap is None:
            return [ModelSource(path, _hf_name(norm, None), problems=[(path, "no snapshot")])]
        return [_source(snap, _hf_name(norm, rev))]
    if os.path.basename(parent) == "snapshots" and os.path.basename(
        os.path.dirname(parent)
    ).startswith("models--"):
        return [_source(path, _hf_name(os.path.dirname(parent), base))]
    if _looks_like_model(path):
        return [_source(path, base or path)]
    out: list[ModelSource] = []
    if depth >= SEARCH_DEPTH:
        return out
    try:
        subdirs = sorted(e.path for e in os.scandir(path) if e.is_dir() and e.name[:1] != ".")
    except OSError as exc:
        return [ModelSource(path, path, problems=[(path, _describe(exc))])]
    for sub in subdirs:
        if len(out) >= MAX_MODELS:
            break
        out.extend(_find_in_dir(sub, depth + 1))
    return out


def _source(path: str, name: str) -> ModelSource:
    src = ModelSource(path=path, name=name)
    _walk(path, src, 0, set())
    return src
