"""The facts of one interpreter the pip hook judges with: its roots, a destination scheme, a
wheel's files, who owns a file, the installed dists, the baseline.

Standard library only, no dtkguard imports: ``guard install`` copies it beside the pip hook as
``_dtkguard_sitefacts.py`` (checked by ``guard status`` as ``decision.py`` is). Each fact is a
function of the data it is given (paths, directory listings, file texts, readers passed in);
the hook gathers that data from the interpreter and from pip and keeps what it computed, so
these functions hold no state and run without pip.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs start-up time, inside pip too; annotations are lazy
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any, cast

    #: parsed JSON whose shape its writer owns (the baseline of `guard install`)
    JSON = Any
    #: `installed`: {canonical name: (version, metadata folder)}
    Dists = Mapping[str, tuple[str, str]]
    #: `vendor_rows`: {vendor name: (site folder, [RECORD paths relative to it])}
    Rows = Mapping[str, tuple[str, Sequence[str]]]
else:

    def cast(_type: object, value: object) -> object:
        """`typing.cast` without importing typing: the value, unchanged."""
        return value


# -- paths ---------------------------------------------------------------------------------


def real(path: str | None) -> str | None:
    """``path`` resolved (symlinks followed, normalised); None for an empty path."""
    return os.path.normpath(os.path.realpath(path)) if path else None


def real_in(path: str, cache: dict[str, str]) -> str:
    """``path`` with its folder resolved (``cache``: {folder: resolved}) and its last part kept:
    where pip writes or deletes (pip replaces a symlink at the last part, it does not follow
    it)."""
    head, tail = os.path.split(os.path.normpath(path))
    resolved = cache.get(head)
    if resolved is None:
        # the folder of a normalised absolute path (what pip writes) is never empty: a str
        resolved = cache[head] = cast("str", real(head))
    return os.path.join(resolved, tail) if tail else resolved


def roots(
    paths: Mapping[str, str],
    here: str,
    site_packages: Iterable[str] = (),
    user_site: str | None = None,
) -> tuple[list[str], list[str]]:
    """(sites, roots) of an interpreter, resolved and sorted: its site folders (``paths``:
    ``sysconfig.get_paths()``; ``here``: the hook's folder; ``site.getsitepackages()``; the
    user site when it is enabled), and those plus its stdlib and scripts folders."""
    found = [paths.get("purelib"), paths.get("platlib"), here, *site_packages]
    if user_site:
        found.append(user_site)
    others = [paths.get(k) for k in ("stdlib", "platstdlib", "scripts")]
    # `real` is None only for an empty path, and empty paths are left out here
    sites = sorted({cast("str", real(p)) for p in found if p})
    return sites, sorted(set(sites) | {cast("str", real(p)) for p in others if p})


def touches(path: str | None, dirs: Iterable[str]) -> bool:
    """Is ``path`` one of ``dirs``, inside one, or a parent of one?"""
    if not path:
        return False
    for root in dirs:
        if path == root or path.startswith(root + "/") or root.startswith(path.rstrip("/") + "/"):
            return True
    return False


def guard_files(policy_path: str | None, here: str) -> list[str]:
    """The guard's state beside the policy (a folder) and the site ``pip.conf``."""
    state = os.path.dirname(real(policy_path) or here)
    return [state, os.path.join(os.path.dirname(state), "pip.conf")]


# -- where an install writes ---------------------------------------------------------------

SCHEME_KEYS = ("purelib", "platlib", "headers", "scripts", "data")


def scheme(
    paths: Mapping[str, str], home: str | None = None, target: str | None = None
) -> dict[str, str | None]:
    """pip's destination (``paths``: {scheme key: path}, from pip's ``get_scheme``) as {key:
    resolved path}. With ``home`` (``--target``: pip installs into a temporary home, then
    moves it into ``target``) what lands in the home is where it ends up in ``target``; with
    no known ``target`` those keys are None (judged as if they were this interpreter)."""
    out = {k: real(paths.get(k)) for k in SCHEME_KEYS}
    if home is None:
        return out
    # pip's scheme of a home names every folder: none of these is None
    bases = cast("tuple[str, str, str]", (out["purelib"], out["platlib"], real(home)))
    target = real(target) if target else None
    for key, path in cast("list[tuple[str, str]]", list(out.items())):
        for base in bases:
            if target and (path == base or path.startswith(base + "/")):
                out[key] = target + path[len(base) :]
                break
        else:
            if not target:
                out[key] = None
    return out


def root_is_purelib(wheel_text: str) -> bool:
    """Does a wheel's ``WHEEL`` file put its root into purelib?"""
    return "root-is-purelib: true" in wheel_text.lower()


def wheel_destination(
    name: str, scheme: Mapping[str, str | None], purelib: bool, cache: dict[str, str]
) -> str | None:
    """Where pip writes the wheel member ``name`` under ``scheme`` (resolved), or None."""
    top, _, rest = name.partition("/")
    if top.endswith(".data") and rest:
        key, _, sub = rest.partition("/")
        base = scheme.get(key)
        return real_in(os.path.join(base, sub), cache) if base and sub else None
    lib = scheme["purelib"] if purelib else scheme["platlib"]
    return real_in(os.path.join(lib, name), cache) if lib else None


def script_files(
    scripts_dir: str, script: str, version_info: Sequence[int], cache: dict[str, str]
) -> list[str]:
    """The files pip generates for a console script (pip adds ``pipX``/``pipX.Y`` for pip)."""
    names = [script]
    if script in ("pip", "easy_install"):
        major, minor = version_info[:2]
        names += [f"{script}{major}", f"{script}{major}.{minor}"]
    return [real_in(os.path.join(scripts_dir, n), cache) for n in names]


def site_member(dest: str, sites: Iterable[str]) -> tuple[str, bool] | None:
    """(top-level import name, is it a site-level ``.pth`` file) of the destination ``dest``
    inside one of ``sites``; None elsewhere."""
    for site in sites:
        if dest.startswith(site + "/"):
            top = dest[len(site) + 1 :].split("/", 1)[0]
            name = top[:-3] if top.endswith(".py") else top
            return name, dest.endswith(".pth") and os.path.dirname(dest) == site
    return None


def wheel_file_name(filename: str) -> tuple[str, str] | None:
    """(dist, version) of a wheel's file name, or None when it is not one."""
    parts = filename[:-4].split("-") if filename.endswith(".whl") else []
    return (parts[0], parts[1]) if len(parts) >= 5 else None


# -- what is installed, and who owns what --------------------------------------------------


def listings(sites: Iterable[str]) -> list[tuple[str, list[str]]]:
    """[(site, sorted entries)] of the site folders that can be listed."""
    out: list[tuple[str, list[str]]] = []
    for site in sites:
        try:
            out.append((site, sorted(os.listdir(site))))
        except OSError:
            continue
    return out


def installed(
    listed: Iterable[tuple[str, Iterable[str]]], canonical: Callable[[str], str]
) -> dict[str, tuple[str, str]]:
    """{canonical name: (version, metadata folder)} of the dists in ``listed`` (`listings`):
    ``.dist-info`` first, then ``.egg-info``, the first site first."""
    out: dict[str, tuple[str, str]] = {}
    for suffix in (".dist-info", ".egg-info"):
        for site, names in listed:
            for entry in names:
                if entry.endswith(suffix):
                    name, _, version = entry[: -len(suffix)].partition("-")
                    version = version.split("-py", 1)[0]
                    out.setdefault(canonical(name), (version, os.path.join(site, entry)))
    return out


def vendor_rows(
    dists: Dists, vendor: Mapping[str, str], rows_of: Callable[[str], list[str]]
) -> dict[str, tuple[str, list[str]]]:
    """{vendor name: (site folder, [RECORD paths relative to it])} of the vendor builds among
    ``dists`` (`installed`); ``rows_of(info)``: the RECORD paths of a dist-info folder."""
    return {
        key: (os.path.dirname(info), rows_of(info))
        for key, (_, info) in dists.items()
        if key in vendor and info.endswith(".dist-info")
    }


def vendor_files(rows: Rows) -> dict[str, list[str]]:
    """{vendor name: the absolute files of its RECORD} (``rows``: `vendor_rows`): the site
    folder is resolved already, so plain joins (``..`` rows normalised) are the files pip
    would remove."""
    return {
        key: [
            os.path.normpath(f"{site}/{r}") if ".." in r or "./" in r else f"{site}/{r}"
            for r in paths
        ]
        for key, (site, paths) in rows.items()
    }


def vendor_tops(rows: Rows) -> dict[str, list[str]]:
    """{vendor name: its site-level entries (and their ``__pycache__`` files)}: all the
    decision needs to know which import names a vendor build provides."""
    out: dict[str, list[str]] = {}
    for key, (site, paths) in rows.items():
        tops: set[str] = set()
        for rel in paths:
            first, _, rest = rel.partition("/")
            if first == "__pycache__":
                first += "/" + rest.split("/", 1)[0]
            tops.add(f"{site}/{first}")
        out[key] = sorted(tops)
    return out


def owner_of(path: str, rows: Rows) -> tuple[str, str] | None:
    """(vendor name, path relative to its site) of the vendor build whose RECORD lists
    ``path`` (``rows``: `vendor_rows`), or None."""
    for key, (site, paths) in rows.items():
        if path.startswith(site + "/") and path[len(site) + 1 :] in paths:
            return key, path[len(site) + 1 :]
    return None


def requires_dist(metadata: str) -> list[str]:
    """The ``Requires-Dist`` values of a METADATA text (its headers only)."""
    head = metadata.split("\n\n", 1)[0]
    return [
        line.split(":", 1)[1].strip()
        for line in head.splitlines()
        if line.lower().startswith("requires-dist:")
    ]


def vendor_requires(
    dists: Dists,
    pins: Mapping[str, str],
    same_version: Callable[[str | None, str | None], bool],
    read_metadata: Callable[[str], str],
) -> dict[str, list[str]]:
    """{vendor name: its Requires-Dist} of the vendor builds among ``dists`` (`installed`)
    installed at their pin (a community build of that name is not it); ``read_metadata(info)``
    returns a METADATA text or raises `OSError`."""
    out: dict[str, list[str]] = {}
    for key, (version, info) in dists.items():
        if not same_version(version, pins.get(key)) or not info.endswith(".dist-info"):
            continue
        try:
            out[key] = requires_dist(read_metadata(info))
        except OSError:
            continue
    return out


def removal_files(paths: Iterable[str]) -> list[str]:
    """Every file a removal of ``paths`` (pip's paths and the ``.pth`` files it edits)
    deletes, resolved, with folders expanded (a RECORD row that is a folder, an egg-info's
    ``top_level.txt``)."""
    out: list[str] = []
    for path in paths:
        resolved = cast("str", real(path))  # pip's paths are never empty: a str
        out.append(resolved)
        if os.path.isdir(resolved) and not os.path.islink(path):
            for folder, dirs, names in os.walk(resolved):
                out += [os.path.join(folder, n) for n in dirs + names]
    return out


# -- the guard's state ---------------------------------------------------------------------

#: the baseline's file in the store's env folder (or beside the policy), and the pointer to
#: that folder in ``<prefix>/dtkguard/`` (``dtkguard.env.store`` names them by these)
BASELINE_FILE = "baseline.json"
POINTER_FILE = "store.json"


def pointer_store(data: object) -> str | None:
    """The store folder a ``store.json`` pointer (parsed JSON) names, or None."""
    store = data.get("store") if isinstance(data, dict) else None
    return store if isinstance(store, str) else None


def baseline_file(
    here: str, store: str | None, pointer_exists: bool
) -> tuple[str, None] | tuple[None, str]:
    """(path of the baseline to read, None), or (None, why there is none to trust): the store's
    copy (the reference) when the env points to a trusted store, else the one beside the
    policy (``here``); a pointer to no trusted store is an error, not "no baseline"."""
    if store is None and pointer_exists:
        pointer = os.path.join(here, POINTER_FILE)
        return None, f"the guard's store pointer {pointer} names no trusted store folder"
    return os.path.join(store or here, BASELINE_FILE), None


def baseline_data(
    path: str, read: Callable[[str], object], unsafe: str | None = None, written: bool = False
) -> tuple[dict[str, JSON], str | None]:
    """(baseline, error) of the file ``path``: ``read(path)`` returns its JSON or raises
    `OSError`/`ValueError`; ``unsafe``: why it cannot be trusted; ``written``: the store's
    manifest says `guard install` wrote it (then an absent one is unknown, not clean)."""
    if unsafe:
        return {}, f"the guard's baseline {path} cannot be trusted: {unsafe}"
    try:
        data = read(path)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        return {}, (f"the guard's baseline {path} is absent" if written else None)
    except (OSError, ValueError) as exc:
        return {}, f"the guard's baseline {path} is unreadable ({exc})"
    return data, None


def baseline_versions(baseline: Mapping[str, JSON]) -> dict[str, str] | None:
    """{name: version} of the dists the baseline recorded; None when it records none."""
    recorded = baseline.get("dists")
    if not isinstance(recorded, dict) or not recorded:
        return None
    return {k: str(d.get("version")) for k, d in recorded.items() if isinstance(d, dict)}
