"""dtkguard's import tripwire: warn when a vendor build changed since the guard recorded it
(`guard install`, or a restore, undo or approved install that left it matching).

Installed by ``dtkguard guard install`` beside the pip hook. Standard library only, and only
``os`` and ``sys`` (already loaded at start-up). The hook's one ``.pth`` line inserts a tiny
meta-path finder that also knows the vendor top-level module names (``torch``, ``vllm``, ...)
inline; this module is imported only when one of them is first imported. It then reads
``tripwire.txt`` beside the guard's baseline and compares the size and mtime of the build's
RECORD and a few key files with the baseline (``os.stat`` only, no hashing), and checks that
``import`` would load the vendor build's file (not an egg in front of it): ``warn`` prints what
changed and the restore command on stderr, ``error`` raises ImportError, ``off`` names no
module in the ``.pth`` line. `dtkguard check` confirms by hashing.
"""

import os
import sys

#: the snapshot once read (``data``), and the modules already compared (``done``)
_state: dict = {"data": None, "done": set()}
#: the snapshot is a few KiB (a handful of files per vendor build); past this it is not read
MAX_BYTES = 4 << 20


def _text(path):
    """The snapshot's text: a regular file (a FIFO there never blocks the import, a device is
    never read), at most `MAX_BYTES`, UTF-8; None otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if (os.fstat(fd).st_mode & 0o170000) != 0o100000:  # S_IFREG, without importing stat
            return None
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_BYTES:
            return None
        return b"".join(chunks).decode("utf-8")
    except ValueError:  # not UTF-8
        return None
    finally:
        os.close(fd)


def _read(path):
    """{"mode", "restore", "dists": {key: label}, "stats": {key: [(size, mtime, path)]},
    "modules": {top: [key]}}; None when unreadable (not a regular file, over `MAX_BYTES`, not
    UTF-8): then every import it watches warns, the mode unknown."""
    data = {"mode": "warn", "restore": "", "dists": {}, "stats": {}, "modules": {}, "origin": {}}
    try:
        text = _text(path)
    except OSError:
        return None
    if text is None:
        return None
    lines = text.splitlines()
    for line in lines:
        parts = line.split("\t")
        kind = parts[0]
        if kind in ("mode", "restore") and len(parts) == 2:
            data[kind] = parts[1]
        elif kind == "dist" and len(parts) == 3:
            data["dists"][parts[1]] = parts[2]
        elif kind == "stat" and len(parts) == 5:
            data["stats"].setdefault(parts[1], []).append((parts[2], parts[3], parts[4]))
        elif kind == "module" and len(parts) == 3:
            data["modules"].setdefault(parts[1], []).append(parts[2])
        elif kind == "origin" and len(parts) == 3:
            data["origin"][parts[1]] = parts[2]
    return data


def changes(name, path):
    """[(label, [(file, what)])] of the vendor builds that provide top-level module ``name``."""
    data = _state["data"]
    if data is None:
        data = _state["data"] = _read(path) or {}
    if not data:
        return [("the guard's baseline", [(path, "missing or unreadable")])]
    out = []
    shadow = _shadowed(name, data["origin"].get(name))
    if shadow:
        keys = data["modules"].get(name) or [name]
        out.append((data["dists"].get(keys[0], name), [(shadow, "imported instead")]))
    for key in data["modules"].get(name, ()):
        changed = []
        for size, mtime, file in data["stats"].get(key, ()):
            try:
                st = os.stat(file)
            except OSError:
                changed.append((file, "missing"))
                continue
            if str(st.st_size) != size or str(st.st_mtime_ns) != mtime:
                changed.append((file, "modified"))
        if changed:
            out.append((data["dists"].get(key, key), changed))
    return out


def _shadowed(name, expected):
    """The file ``import name`` would load when it is not the vendor build's (an egg or another
    sys.path entry in front of it); None when it is, or when nothing is expected."""
    if not expected:
        return None
    for finder in sys.meta_path:
        if getattr(finder, "__name__", "") == "PathFinder":
            spec = finder.find_spec(name, None)
            origin = getattr(spec, "origin", None) if spec is not None else None
            if origin is None or os.path.normpath(origin) == expected:
                return None
            if os.path.realpath(origin) == os.path.realpath(expected):
                return None
            return origin
    return None


def _message(found, restore):
    parts = []
    for label, files in found:
        gone = [f for f, what in files if what == "missing"]
        if files[0][1] == "imported instead":
            parts.append(f"`import` loads {files[0][0]}, not the vendor build {label}")
            continue
        if gone and gone[0].endswith("/RECORD"):
            parts.append(f"{label} is gone (its {os.path.dirname(gone[0])} was removed)")
            continue
        shown = ", ".join(
            f"{os.path.basename(os.path.dirname(f))}/{os.path.basename(f)} ({w})"
            for f, w in files[:4]
        )
        parts.append(f"{label} changed since the guard recorded it: {shown}")
    text = "dtkguard: " + "; ".join(parts) + "."
    if restore:
        text += f" Restore it with: {restore}"
    return text + " (`dtkguard check` shows the details)"


def tripwire(name, path):
    """Called by the .pth finder on the first import of a vendor top-level module."""
    if name in _state["done"]:
        return None
    _state["done"].add(name)
    try:
        found = changes(name, path)
        data = _state["data"] or {}
        mode = data.get("mode", "warn") if data else "warn"
    except Exception as exc:  # never break an import over the tripwire itself
        found, mode, data = [("the guard's tripwire", [(path, repr(exc))])], "warn", {}
    if not found or mode == "off":
        return None
    text = _message(found, data.get("restore", "") if data else "")
    if mode == "error":
        _state["done"].discard(name)  # every attempt is refused, not only the first
        raise ImportError(text, name=name)
    sys.stderr.write(text + "\n")
    return None
