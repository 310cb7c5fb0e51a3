"""The hook judges by effect: where pip writes and removes files (whatever option or variable
chose the place) and which files a wheel holds (whatever it is called). Every refusal leaves
the venv byte-identical; what lands elsewhere and harms nothing goes through. Real pip."""

from __future__ import annotations

import contextlib
import json
import marshal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, changed
from tests.support.venvs import hermetic_env
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache
REPO = Path(__file__).resolve().parents[2]


def _community_torch(community: Path, version: str = "2.6.0") -> Path:
    return next(community.glob(f"torch-{version}-*.whl"))


def _site(g: Guarded) -> Path:
    return g.venv.site_packages


def _evil_wheels(g: Guarded, dest: Path) -> dict[str, Path]:
    """Wheels whose names say nothing of what they overwrite."""
    py = f"python{g.venv.site_packages.parent.name.removeprefix('python')}"
    lib = f"lib/{py}/site-packages"
    return {
        "ships-torch-version": build_wheel(
            dest, "innocent-helper", "1.0", files={"torch/version.py": "cuda = '12.4'\n"}
        ),
        "ships-whole-torch": build_wheel(
            dest, "torch-extras", "1.0", files={"torch/__init__.py": "", "torch/cuda.py": ""}
        ),
        "data-scheme-into-torch": build_wheel(
            dest,
            "data-trick",
            "1.0",
            files={f"data_trick-1.0.data/data/{lib}/torch/version.py": "cuda = '12.4'\n"},
        ),
        "pth-removes-hook": build_wheel(
            dest,
            "speedup",
            "1.0",
            files={
                "speedup.pth": "import sys; sys.meta_path[:] = [f for f in sys.meta_path "
                "if not getattr(f, '_dtkguard', 0)]\n",
                "speedup/__init__.py": "",
            },
        ),
        "sitecustomize": build_wheel(
            dest, "site-tweaks", "1.0", files={"sitecustomize.py": "import os\n"}
        ),
        "overwrites-hook": build_wheel(
            dest, "hook-patch", "1.0", files={"_dtkguard_pip_hook.py": "def find_spec(*a): pass\n"}
        ),
        "overwrites-decision": build_wheel(
            dest, "decision-patch", "1.0", files={"_dtkguard_decision.py": "decide = None\n"}
        ),
        "overwrites-records": build_wheel(
            dest, "records-patch", "1.0", files={"_dtkguard_records.py": "paths_of = list\n"}
        ),
        "overwrites-sitefacts": build_wheel(
            dest, "facts-patch", "1.0", files={"_dtkguard_sitefacts.py": "roots = list\n"}
        ),
        "overwrites-finder-pyc": build_wheel(
            dest,
            "finder-patch",
            "1.0",
            files={f"__pycache__/_dtkguard_finder.{sys.implementation.cache_tag}.pyc": "x"},
        ),
        "overwrites-policy-json": build_wheel(
            dest,
            "policy-patch",
            "1.0",
            files={"policy_patch-1.0.data/data/dtkguard/policy.json": '{"vendor": {}, "deny": []}'},
        ),
    }


FILE_CASES = {
    "ships-torch-version": "file-conflict",
    "ships-whole-torch": "files of the vendor build torch",
    "data-scheme-into-torch": "files of the vendor build torch",
    "pth-removes-hook": "startup-code",
    "sitecustomize": "startup-code",
    "overwrites-hook": "a file of the dtkguard guard itself",
    "overwrites-decision": "a file of the dtkguard guard itself",
    "overwrites-records": "a file of the dtkguard guard itself",
    "overwrites-sitefacts": "a file of the dtkguard guard itself",
    "overwrites-finder-pyc": "a file of the dtkguard guard itself",
    "overwrites-policy-json": "a file of the dtkguard guard itself",
}


@pytest.mark.parametrize("case", sorted(FILE_CASES))
def test_wheel_files_are_judged(case: str, guarded: Guarded, tmp_path: Path) -> None:
    wheel = _evil_wheels(guarded, tmp_path / "evil")[case]
    before = guarded.venv.snapshot()
    proc = guarded.pip("install", "--no-deps", "--no-index", str(wheel))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "dtkguard: refusing" in proc.stderr
    expected = FILE_CASES[case]
    assert expected in proc.stderr or expected.replace(" ", "-") in proc.stderr, proc.stderr
    assert changed(before, guarded.venv.snapshot()) == []
    assert guarded.venv.installed()["torch"] == TORCH


def _destination_cases(g: Guarded, community: Path, tmp: Path):
    """(pip arguments, extra environment) of installs that reach this venv's files."""
    wheel = str(_community_torch(community))
    site = str(_site(g))
    env = str(g.venv.path)
    return {
        "--prefix <env>": (["install", "--no-deps", "--prefix", env, wheel], {}),
        "--root /": (["install", "--no-deps", "--root", "/", wheel], {}),
        "--target <site-packages> --upgrade": (
            ["install", "--no-deps", "--target", site, "--upgrade", wheel],
            {},
        ),
        "PIP_PREFIX=<env>": (["install", "--no-deps", wheel], {"PIP_PREFIX": env}),
        "PIP_TARGET=<site-packages>": (
            ["install", "--no-deps", "--upgrade", wheel],
            {"PIP_TARGET": site},
        ),
        "--prefix elsewhere uninstalls the vendor build": (
            ["install", "--no-deps", "--prefix", str(tmp / "elsewhere"), wheel],
            {},
        ),
        "--root elsewhere uninstalls the vendor build": (
            ["install", "--no-deps", "--root", str(tmp / "chroot"), wheel],
            {},
        ),
    }


DESTINATIONS = [
    "--prefix <env>",
    "--root /",
    "--target <site-packages> --upgrade",
    "PIP_PREFIX=<env>",
    "PIP_TARGET=<site-packages>",
    "--prefix elsewhere uninstalls the vendor build",
    "--root elsewhere uninstalls the vendor build",
]


@pytest.mark.parametrize("case", DESTINATIONS)
def test_destination_decides(
    case: str, guarded: Guarded, community_wheelhouse: Path, tmp_path: Path
) -> None:
    args, extra = _destination_cases(guarded, community_wheelhouse, tmp_path)[case]
    before = guarded.venv.snapshot()
    proc = guarded.pip(*args, env=hermetic_env(**extra))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "dtkguard: refusing" in proc.stderr, proc.stderr
    assert "vendor build torch" in proc.stderr or "vendor build" in proc.stderr
    assert changed(before, guarded.venv.snapshot()) == []
    assert guarded.venv.installed()["torch"] == TORCH
    for place in ("elsewhere", "chroot"):
        assert not (tmp_path / place).exists() or not any((tmp_path / place).rglob("*.py"))


def test_elsewhere_and_harmless_goes_through(fresh: Guarded, tmp_path: Path) -> None:
    g = fresh
    before = g.venv.snapshot()
    # --prefix / --target / PIP_TARGET elsewhere, nothing removed from the venv: not judged
    proc = g.pip("install", "--no-deps", "--prefix", str(tmp_path / "p"), *g.index_args, "idna")
    assert proc.returncode == 0, proc.stderr
    proc = g.pip("install", "--no-deps", *g.index_args, "idna", "torch==2.6.0", "--target",
                 str(tmp_path / "t"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "t" / "torch").is_dir()
    assert changed(before, g.venv.snapshot()) == []
    # start-up code the policy allows: setuptools' own .pth
    proc = g.pip("install", "--no-deps", "--force-reinstall", *g.index_args, "setuptools")
    assert proc.returncode == 0, proc.stderr
    # a PEP 660 editable install writes __editable__.*.pth: allowed
    proj = tmp_path / "proj"
    (proj / "proj").mkdir(parents=True)
    (proj / "proj" / "__init__.py").write_text("")
    (proj / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "proj"\nversion = "0.1"\n'
    )
    proc = g.pip("install", *g.index_args, "-e", str(proj))
    assert proc.returncode == 0, proc.stderr
    assert any(p.name.startswith("__editable__") for p in _site(g).glob("*.pth"))


def test_removal_that_deletes_vendor_files_is_refused(fresh: Guarded, tmp_path: Path) -> None:
    """A dist installed past the guard that shares files with torch cannot be uninstalled
    without deleting vendor files: the hook refuses the removal."""
    g = fresh
    wheel = _evil_wheels(g, tmp_path / "evil")["ships-torch-version"]
    env = hermetic_env(DTKGUARD_OVERRIDE="test: install a file-sharing dist")
    assert g.pip("install", "--no-deps", "--no-index", str(wheel), env=env).returncode == 0
    before = g.venv.snapshot()
    proc = g.pip("uninstall", "-y", "innocent-helper")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "files of the vendor build torch" in proc.stderr
    assert changed(before, g.venv.snapshot()) == []


def _break_pip(g: Guarded, module: str, old: str, new: str) -> None:
    """Rename an internal inside the venv's own pip (as a future pip might)."""
    path = _site(g) / "pip" / "_internal" / module
    text = path.read_text()
    assert old in text, f"{old} not in {path}"
    path.write_text(text.replace(old, new))
    for pyc in (path.parent / "__pycache__").glob(path.stem + ".*.pyc"):
        pyc.unlink()


def test_pip_without_the_wrapped_internals_fails_closed(fresh: Guarded) -> None:
    g = fresh
    # install_given_reqs renamed everywhere pip uses it: pip still works, the hook has no target
    _break_pip(g, "req/__init__.py", "def install_given_reqs(", "def install_given_requirements(")
    _break_pip(g, "req/__init__.py", '"install_given_reqs"', '"install_given_requirements"')
    _break_pip(g, "commands/install.py", "install_given_reqs", "install_given_requirements")
    _break_pip(g, "req/req_uninstall.py", "def from_dist(", "def from_distribution(")
    for caller in ("req/req_install.py", "commands/uninstall.py"):
        path = _site(g) / "pip" / "_internal" / caller
        if "UninstallPathSet.from_dist(" in path.read_text():
            _break_pip(
                g, caller, "UninstallPathSet.from_dist(", "UninstallPathSet.from_distribution("
            )
    before = g.venv.snapshot()
    proc = g.pip("install", *g.index_args, "--no-deps", "idna")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "lacks what the guard wraps" in proc.stderr and "install_given_reqs" in proc.stderr
    proc = g.pip("uninstall", "-y", "idna", "torch")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "UninstallPathSet.from_dist" in proc.stderr
    assert changed(before, g.venv.snapshot()) == []
    assert g.pip("list").returncode == 0


@contextlib.contextmanager
def _without(g: Guarded, module: str) -> Iterator[None]:
    """The guard's ``module`` and its byte code deleted for the block, then put back."""
    source = _site(g) / f"{module}.py"
    pycache = list((_site(g) / "__pycache__").glob(f"{module}.*"))
    assert pycache, "guard install byte-compiles the guard's modules"
    saved = {p: p.read_bytes() for p in [source, *pycache]}
    try:
        for p in saved:
            p.unlink()
        yield
    finally:
        for p, data in saved.items():
            p.write_bytes(data)


def test_missing_decision_copy_fails_closed(guarded: Guarded) -> None:
    with _without(guarded, "_dtkguard_decision"):
        before = guarded.venv.snapshot()
        proc = guarded.pip("install", *guarded.index_args, "--no-deps", "idna")
        assert proc.returncode == 1
        assert "decision module" in proc.stderr and "dtkguard guard install" in proc.stderr
        proc = guarded.pip("uninstall", "-y", "torch")
        assert proc.returncode == 1 and "decision module" in proc.stderr
        assert changed(before, guarded.venv.snapshot()) == []
        status = guarded.dtkguard("guard", "status", "--python", str(guarded.venv.python))
        assert status.returncode == 1 and "absent" in status.stdout


#: the stdlib modules of dtkguard copied beside the hook: (layer, what the hook calls it)
COPIES = {
    "records": "RECORD module",
    "sitefacts": "site-facts module",
    "buildwatch": "build-journal module",
    "pipoverride": "override-log module",
}


@pytest.mark.parametrize("layer", sorted(COPIES))
def test_a_copy_is_the_module_and_its_absence_fails_closed(guarded: Guarded, layer: str) -> None:
    """The hook reads RECORD through its copy of ``dtkguard/records.py``, the interpreter's
    facts through ``dtkguard/sitefacts.py``, keeps its build journal with ``buildwatch.py`` and
    records overrides with ``pipoverride.py``: byte for byte the module, listed as a layer;
    without it pip can neither install nor uninstall."""
    copy = _site(guarded) / f"_dtkguard_{layer}.py"
    assert copy.read_bytes() == (REPO / "dtkguard" / f"{layer}.py").read_bytes()
    py = str(guarded.venv.python)
    with _without(guarded, f"_dtkguard_{layer}"):
        before = guarded.venv.snapshot()
        proc = guarded.pip("install", *guarded.index_args, "--no-deps", "idna")
        assert proc.returncode == 1
        assert COPIES[layer] in proc.stderr and "dtkguard guard install" in proc.stderr
        proc = guarded.pip("uninstall", "-y", "torch")
        assert proc.returncode == 1 and COPIES[layer] in proc.stderr, proc.stderr
        assert changed(before, guarded.venv.snapshot()) == []
        status = guarded.dtkguard("guard", "status", "--python", py)
        rows = {line.split()[1]: line.split()[0] for line in status.stdout.splitlines()}
        assert status.returncode == 1 and rows[layer] == "absent", status.stdout
    status = guarded.dtkguard("guard", "status", "--python", py)
    rows = {line.split()[1]: line.split()[0] for line in status.stdout.splitlines()}
    assert rows[layer] == "present", status.stdout


def test_without_the_override_copy_no_override_is_honoured(guarded: Guarded) -> None:
    """An override the hook cannot record is none: without its copy of
    ``dtkguard/pipoverride.py`` a ``DTKGUARD_OVERRIDE`` install is refused as any other, and
    the override log is left as it was."""
    log = guarded.store.dir / "overrides.jsonl"
    had = log.read_bytes() if log.exists() else None
    with _without(guarded, "_dtkguard_pipoverride"):
        before = guarded.venv.snapshot()
        env = hermetic_env(DTKGUARD_OVERRIDE="test: past a missing copy")
        proc = guarded.pip("install", *guarded.index_args, "--no-deps", "idna", env=env)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "override-log module" in proc.stderr and "refusing" in proc.stderr, proc.stderr
        assert changed(before, guarded.venv.snapshot()) == []
    assert (log.read_bytes() if log.exists() else None) == had


def test_missing_start_up_finder_fails_closed(guarded: Guarded) -> None:
    """The .pth line blocks pip's uninstall module until the finder takes the block away:
    without the finder pip can neither install nor uninstall, and every start says why."""
    with _without(guarded, "_dtkguard_finder"):
        before = guarded.venv.snapshot()
        proc = guarded.pip("install", *guarded.index_args, "--no-deps", "idna")
        assert proc.returncode != 0, proc.stdout + proc.stderr
        assert "_dtkguard_finder" in proc.stderr and "dtkguard-pip-hook.pth" in proc.stderr
        proc = guarded.pip("uninstall", "-y", "torch")
        assert proc.returncode != 0, proc.stdout + proc.stderr
        assert changed(before, guarded.venv.snapshot()) == []
        status = guarded.dtkguard("guard", "status", "--python", str(guarded.venv.python))
        assert status.returncode == 1
        rows = {line.split()[1]: line.split()[0] for line in status.stdout.splitlines()}
        assert rows["finder"] == "absent", status.stdout
    # with the finder back, a start (which reads the .pth twice in a venv) leaves pip importable
    code = (
        "import sys, pip._internal.req.req_uninstall;"
        "print(sum(getattr(f, '_dtkguard', 0) for f in sys.meta_path))"
    )
    proc = subprocess.run(
        [str(guarded.venv.python), "-c", code], env=hermetic_env(), capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "1", proc.stderr


def test_tampered_guard_files_show_in_status(fresh: Guarded) -> None:
    g = fresh
    py = str(g.venv.python)
    before = g.venv.snapshot()
    hook = _site(g) / "_dtkguard_pip_hook.py"
    hook.write_text(hook.read_text() + "\n# edited\n")
    policy = g.venv.path / "dtkguard" / "policy.json"
    policy.write_text(policy.read_text().replace('"deny"', '"deny_"', 1))
    # a planted .pyc with the source's header runs instead of the source at every start
    tripwire_pyc = next((_site(g) / "__pycache__").glob("_dtkguard_tripwire.*.pyc"))
    planted = compile("import sys\n", str(tripwire_pyc), "exec")
    tripwire_pyc.write_bytes(tripwire_pyc.read_bytes()[:16] + marshal.dumps(planted))
    status = g.dtkguard("guard", "status", "--python", py)
    rows = {line.split()[1]: line.split()[0] for line in status.stdout.splitlines()}
    assert status.returncode == 1 and rows["tripwire.pyc"] == "tampered", status.stdout
    assert rows["finder"] == "present" and "finder.pyc" not in rows, status.stdout
    finder = _site(g) / "_dtkguard_finder.py"
    finder.write_text(finder.read_text().replace("VENDOR_MODULES = ", "VENDOR_MODULES = ()#"))
    status = g.dtkguard("guard", "status", "--python", py)
    assert status.returncode == 1
    rows = {line.split()[1]: line.split()[0] for line in status.stdout.splitlines()}
    assert rows["hook"] == "tampered" and rows["policy"] == "tampered", status.stdout
    assert rows["finder"] == "tampered", status.stdout
    assert rows["decision"] == rows["records"] == "present", status.stdout
    records = _site(g) / "_dtkguard_records.py"
    records.write_text(records.read_text() + "\n# edited\n")
    status = g.dtkguard("guard", "status", "--python", py)
    rows = {line.split()[1]: line.split()[0] for line in status.stdout.splitlines()}
    assert status.returncode == 1 and rows["records"] == "tampered", status.stdout
    # remove keeps what was changed since install, and restores the rest exactly
    removed = g.dtkguard("guard", "remove", "--python", py)
    assert removed.returncode == 0 and "kept (changed since install)" in removed.stdout
    assert not (_site(g) / "_dtkguard_decision.py").exists()
    hook.unlink()
    policy.unlink()
    finder.unlink()
    records.unlink()
    after = g.venv.snapshot()
    gone = {k for k in before if "dtkguard" in k or "pip.conf" in k}
    assert {k for k in changed(before, after)} == gone
    assert subprocess.run([py, "-c", "import sys"], env=hermetic_env()).returncode == 0


def test_relabelled_community_torch_is_refused(
    guarded: Guarded, public_dir: Path, vendor_wheelhouse: Path, tmp_path: Path
) -> None:
    """A community torch renamed ``torch-2.4.1+das.opt1.dtk25041``: the label is the vendor's,
    the files are not the ones the baseline of `guard install` recorded."""
    import zipfile

    community = next(public_dir.glob("torch-2.4.1-*.whl"))
    with zipfile.ZipFile(community) as zf:
        files = {n: zf.read(n) for n in zf.namelist() if not n.startswith("torch-")}
    forged = build_wheel(tmp_path / "forged", "torch", TORCH, files=files)
    before = guarded.venv.snapshot()
    proc = guarded.pip("install", "--no-deps", "--force-reinstall", str(forged))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "vendor-not-baseline" in proc.stderr and "not the vendor build" in proc.stderr
    assert changed(before, guarded.venv.snapshot()) == []
    # the real vendor build of the same name and label still reinstalls
    proc = guarded.pip(
        "install", "--no-deps", "--force-reinstall", "--no-index", "-f", str(vendor_wheelhouse),
        f"torch=={TORCH}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert guarded.venv.installed()["torch"] == TORCH


@pytest.mark.parametrize("damage", ["unreadable", "absent"])
def test_a_bad_baseline_refuses_a_vendor_reinstall(
    guarded: Guarded, vendor_wheelhouse: Path, damage: str
) -> None:
    """Unreadable, or gone while the store's manifest lists it as written by install: a vendor
    build cannot be told from a relabelled one, so its reinstall is refused (a guard that never
    had a baseline, as after `restore --to LOCK`, is not refused: tests/guard/test_restore.py)."""
    baseline = guarded.store.baseline
    assert str(baseline) in json.loads(guarded.store.manifest.read_text())["files"]
    saved = baseline.read_bytes()
    try:
        if damage == "absent":
            baseline.unlink()
        else:
            baseline.write_text("{broken")
        before = guarded.venv.snapshot()
        proc = guarded.pip(
            "install", "--no-deps", "--force-reinstall", "--no-index", "-f",
            str(vendor_wheelhouse), f"torch=={TORCH}",
        )  # fmt: skip
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "baseline" in proc.stderr and damage in proc.stderr
        assert changed(before, guarded.venv.snapshot()) == []
    finally:
        baseline.write_bytes(saved)
