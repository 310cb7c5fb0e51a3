"""The facts the pip hook judges with (`dtkguard.sitefacts`), fed plain data: no pip, no venv.

The hook gathers the data (``sysconfig``, pip's ``get_scheme``, directory listings, RECORD and
METADATA texts) and these functions turn it into what the decision core is given; each case
here is one the hook meets inside pip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dtkguard import sitefacts as sf
from dtkguard.decision import canonical, same_version


def test_roots_are_resolved_sites_plus_stdlib_and_scripts(tmp_path: Path) -> None:
    lib = tmp_path / "lib" / "site-packages"
    lib.mkdir(parents=True)
    (tmp_path / "lib64").symlink_to(tmp_path / "lib")
    paths = {
        "purelib": str(lib),
        "platlib": str(tmp_path / "lib64" / "site-packages"),  # the same folder, aliased
        "stdlib": str(tmp_path / "stdlib"),
        "scripts": str(tmp_path / "bin"),
    }
    user = str(tmp_path / "user-site")
    sites, roots = sf.roots(paths, str(lib), [str(lib)], user)
    assert sites == sorted({str(lib), user})
    assert roots == sorted({str(lib), user, str(tmp_path / "stdlib"), str(tmp_path / "bin")})
    assert sf.roots(paths, str(lib))[0] == [str(lib)]  # no user site when it is off


@pytest.mark.parametrize(
    ("path", "touches"),
    [
        ("/env/lib/site", True),
        ("/env/lib/site/x", True),
        ("/env/lib", True),  # a parent of a root: pip writes into it
        ("/env/lib/", True),
        ("/env/lib/site-other", False),  # a neighbour sharing the prefix
        ("/elsewhere", False),
        (None, False),
        ("", False),
    ],
)
def test_touches_is_inside_equal_or_parent(path: str | None, touches: bool) -> None:
    assert sf.touches(path, ["/env/bin", "/env/lib/site"]) is touches


def test_scheme_of_a_plain_install_is_pips_own_resolved(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    paths = {k: str(tmp_path / "alias" / k) for k in sf.SCHEME_KEYS}
    assert sf.scheme(paths) == {k: str(tmp_path / "real" / k) for k in sf.SCHEME_KEYS}


def test_scheme_of_a_target_install_maps_the_temporary_home_into_the_target() -> None:
    home = "/tmp/pip-target-x"
    paths = {
        "purelib": f"{home}/lib/python",
        "platlib": f"{home}/lib/python",
        "headers": f"{home}/include/site/python3/demo",
        "scripts": f"{home}/bin",
        "data": home,
    }
    out = sf.scheme(paths, home, "/dest")
    assert out["purelib"] == out["platlib"] == "/dest"
    assert out["scripts"] == "/dest/bin" and out["data"] == "/dest"
    # an unknown target: every key is None (judged as if it were this interpreter)
    assert set(sf.scheme(paths, home, None).values()) == {None}


def test_wheel_members_land_where_pip_writes_them() -> None:
    scheme = {
        "purelib": "/s/pure",
        "platlib": "/s/plat",
        "scripts": "/s/bin",
        "data": "/s",
        "headers": None,
    }
    cache: dict[str, str] = {}
    assert sf.wheel_destination("demo/a.py", scheme, True, cache) == "/s/pure/demo/a.py"
    assert sf.wheel_destination("demo/a.py", scheme, False, cache) == "/s/plat/demo/a.py"
    data = "demo-1.data/scripts/run"
    assert sf.wheel_destination(data, scheme, True, cache) == "/s/bin/run"
    assert sf.wheel_destination("demo-1.data/headers/x.h", scheme, True, cache) is None
    assert sf.wheel_destination("demo-1.data/scripts", scheme, True, cache) is None
    assert sf.root_is_purelib("Wheel-Version: 1.0\nRoot-Is-Purelib: TRUE\n")
    assert not sf.root_is_purelib("Wheel-Version: 1.0\nRoot-Is-Purelib: false\n")


def test_console_scripts_and_the_names_pip_adds_for_itself() -> None:
    assert sf.script_files("/b", "demo", (3, 11), {}) == ["/b/demo"]
    assert sf.script_files("/b", "pip", (3, 11), {}) == ["/b/pip", "/b/pip3", "/b/pip3.11"]


def test_site_member_names_the_import_and_site_level_pth() -> None:
    sites = ["/s"]
    assert sf.site_member("/s/demo/a.py", sites) == ("demo", False)
    assert sf.site_member("/s/sitecustomize.py", sites) == ("sitecustomize", False)
    assert sf.site_member("/s/evil.pth", sites) == ("evil.pth", True)
    assert sf.site_member("/s/demo/inner.pth", sites) == ("demo", False)
    assert sf.site_member("/elsewhere/a.py", sites) is None


def test_wheel_file_names() -> None:
    assert sf.wheel_file_name("torch-2.4.1+das.dtk2504-cp311-cp311-linux_x86_64.whl") == (
        "torch",
        "2.4.1+das.dtk2504",
    )
    assert sf.wheel_file_name("torch-2.4.1.tar.gz") is None
    assert sf.wheel_file_name("short-1.whl") is None


LISTED = [
    ("/a", ["Torch-2.4.1+das.dtk2504.dist-info", "torch", "old_pkg-1.0-py3.11.egg-info"]),
    ("/b", ["torch-9.9.dist-info", "Old.Pkg-2.0.dist-info"]),
]


def test_installed_takes_dist_info_first_then_the_first_site() -> None:
    out = sf.installed(LISTED, canonical)
    assert out["torch"] == ("2.4.1+das.dtk2504", "/a/Torch-2.4.1+das.dtk2504.dist-info")
    # a dist-info anywhere wins over an egg-info
    assert out["old-pkg"] == ("2.0", "/b/Old.Pkg-2.0.dist-info")


def test_listings_skip_what_cannot_be_listed(tmp_path: Path) -> None:
    (tmp_path / "b").touch()
    (tmp_path / "a").touch()
    assert sf.listings([str(tmp_path), str(tmp_path / "gone")]) == [(str(tmp_path), ["a", "b"])]


def test_owners_of_vendor_files() -> None:
    dists = sf.installed(LISTED, canonical)
    rows = sf.vendor_rows(dists, {"torch": "2.4.1+das.dtk2504"}, lambda info: RECORD[info])
    assert rows == {"torch": ("/a", RECORD["/a/Torch-2.4.1+das.dtk2504.dist-info"])}
    files = sf.vendor_files(rows)["torch"]
    assert files == ["/a/torch/__init__.py", "/a/__pycache__/x.pyc", "/bin/torchrun"]
    assert sf.vendor_tops(rows)["torch"] == [
        "/a/..",  # a row outside the site: its first part, as RECORD spells it
        "/a/__pycache__/x.pyc",
        "/a/torch",
    ]
    assert sf.owner_of("/a/torch/__init__.py", rows) == ("torch", "torch/__init__.py")
    assert sf.owner_of("/a/torch/other.py", rows) is None
    assert sf.owner_of("/b/torch/__init__.py", rows) is None


RECORD = {
    "/a/Torch-2.4.1+das.dtk2504.dist-info": [
        "torch/__init__.py",
        "__pycache__/x.pyc",
        "../../bin/torchrun",
    ]
}

METADATA = (
    "Metadata-Version: 2.1\nName: torch\nRequires-Dist: numpy>=1.22\n"
    "requires-dist: triton==3.0 ; python_version < '4'\n\nRequires-Dist: not-a-header\n"
)


def test_vendor_requires_reads_only_the_vendor_builds_headers() -> None:
    assert sf.requires_dist(METADATA) == ["numpy>=1.22", "triton==3.0 ; python_version < '4'"]
    dists = sf.installed(LISTED, canonical)
    pins = {"torch": "2.4.1+das.dtk2504", "old-pkg": "2.0"}
    texts = {"/a/Torch-2.4.1+das.dtk2504.dist-info": METADATA}

    def read(info: str) -> str:
        if info not in texts:
            raise FileNotFoundError(info)
        return texts[info]

    # old-pkg has no METADATA here: skipped, as an unreadable one is
    assert sf.vendor_requires(dists, pins, same_version, read) == {
        "torch": sf.requires_dist(METADATA)
    }
    # a community build of the vendor's name is not the vendor build
    assert sf.vendor_requires(dists, {"torch": "2.4.1"}, same_version, read) == {}


def test_removal_files_expand_folders_and_resolve(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "m.py").touch()
    (tmp_path / "link").symlink_to(pkg)
    out = sf.removal_files([str(pkg), str(tmp_path / "link"), str(tmp_path / "gone.py")])
    assert out == [
        str(pkg),
        str(pkg / "sub"),
        str(pkg / "sub" / "m.py"),
        str(pkg),  # the link resolves to the folder but is not walked (pip unlinks it)
        str(tmp_path / "gone.py"),
    ]


def test_guard_files_and_the_store_pointer(tmp_path: Path) -> None:
    policy = tmp_path / "dtkguard" / "policy.json"
    assert sf.guard_files(str(policy), "/here") == [
        str(tmp_path / "dtkguard"),
        str(tmp_path / "pip.conf"),
    ]
    assert sf.pointer_store({"store": "/s/envs/x"}) == "/s/envs/x"
    for bad in ({"store": 3}, [], None, {}):
        assert sf.pointer_store(bad) is None


def test_the_baseline_is_the_stores_else_beside_the_policy() -> None:
    assert sf.baseline_file("/p", "/store", True) == ("/store/baseline.json", None)
    assert sf.baseline_file("/p", None, False) == ("/p/baseline.json", None)
    path, error = sf.baseline_file("/p", None, True)
    assert path is None and "/p/store.json names no trusted store folder" in error


def _reader(value: object):
    def read(path: str) -> object:
        if isinstance(value, BaseException):
            raise value
        return value

    return read


@pytest.mark.parametrize(
    ("value", "unsafe", "written", "error"),
    [
        ({"vendor": {}}, None, False, None),
        ({"vendor": {}}, "group-writable", False, "cannot be trusted: group-writable"),
        (FileNotFoundError(), None, False, None),  # never recorded: clean
        (FileNotFoundError(), None, True, "is absent"),  # recorded, now gone: unknown
        (ValueError("nested too deeply"), None, False, "unreadable (nested too deeply)"),
        (PermissionError("denied"), None, False, "unreadable (denied)"),
        ([1, 2], None, False, "unreadable (not a JSON object)"),
    ],
)
def test_baseline_data_says_why_it_cannot_be_used(
    value: object, unsafe: str | None, written: bool, error: str | None
) -> None:
    data, why = sf.baseline_data("/s/baseline.json", _reader(value), unsafe, written)
    if error is None:
        assert why is None and data == (value if isinstance(value, dict) else {})
    else:
        assert data == {} and why is not None and error in why and "/s/baseline.json" in why


def test_baseline_versions() -> None:
    base = {"dists": {"torch": {"version": "2.4.1"}, "bad": 3}}
    assert sf.baseline_versions(base) == {"torch": "2.4.1"}
    assert sf.baseline_versions({"dists": {}}) is None
    assert sf.baseline_versions({}) is None


def test_the_copy_is_the_module_and_imports_nothing_of_dtkguard() -> None:
    """The hook loads it by path inside pip: standard library only."""
    source = Path(sf.__file__).read_text(encoding="utf-8")
    imports = [ln for ln in source.splitlines() if ln.startswith(("import ", "from "))]
    assert imports == ["from __future__ import annotations", "import os"], imports
    assert json.loads(json.dumps(sf.SCHEME_KEYS)) == list(sf.SCHEME_KEYS)
    assert os.path.basename(sf.__file__) == "sitefacts.py"


@pytest.mark.parametrize("module", ["sitefacts.py", "decision.py"])
def test_the_copies_import_no_typing_at_run_time(module: str) -> None:
    """Their annotations are lazy and their typing-only imports sit under ``TYPE_CHECKING``:
    loaded by path as the hook loads them, they import no `typing` (start-up time inside pip)."""
    source = Path(sf.__file__).with_name(module)
    probe = (
        "import importlib.util, sys\n"
        "print('typing' in sys.modules)\n"
        f"spec = importlib.util.spec_from_file_location('_dtkguard_copy', {str(source)!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "print('typing' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"], proc.stdout  # not before, not after
