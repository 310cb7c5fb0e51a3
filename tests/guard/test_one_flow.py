"""One guarded-install flow (`dtkguard.guard.flow`) behind pip's and uv's front-ends.

dtkpip and dtkuv had their own copies of the flow, and they had drifted. Each drift is decided
once in the shared flow and held here through both commands, with real pip and real uv in
real venvs: every case runs for ``pip`` and for ``uv``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.guard.conftest import changed
from tests.support.cli import dtkguard_in, run_in_process
from tests.support.venvs import Venv, hermetic_env, make_venv
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.wheel_cache

INSTALLERS = ["pip", "uv"]
#: pip's and uv's words when a request cannot be resolved
CONFLICT_WORDS = ("conflicting dependencies", "ResolutionImpossible", "No solution found")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("flow-wheels")
    build_wheel(dest, "torch", "2.7.0", files={"torch/__init__.py": ""})
    build_wheel(dest, "plain-thing", "1.0", files={"plain_thing/__init__.py": ""})
    build_wheel(dest, "clash-a", "1.0", requires_dist=["clash-b==1.0"])
    build_wheel(dest, "clash-b", "1.0")
    build_wheel(dest, "clash-b", "2.0")
    build_wheel(dest, "nvidia-cublas-cu12", "12.4.5.8")
    build_wheel(dest, "vendorish", "1.0+das.dtk25041", requires_dist=["helper-thing"])
    build_wheel(dest, "helper-thing", "1.0", files={"helper_thing/__init__.py": ""})
    return dest


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled policy (torch pinned to its vendor build) and one more vendor build."""
    path = tmp_path_factory.mktemp("flow-policy") / "flow.toml"
    path.write_text(
        '[policy]\nname = "flow-test"\nextends = ["dtk-25.04.1"]\n\n'
        '[vendor]\nvendorish = "1.0+das.dtk25041"\n'
    )
    return path


@pytest.fixture(scope="module")
def drifted(tmp_path_factory: pytest.TempPathFactory, wheels: Path) -> Venv:
    """A venv whose torch is a community build already (the vendor pin cannot hold), with a
    vendor build that needs helper-thing. Shared by the cases that change nothing."""
    venv = make_venv(tmp_path_factory.mktemp("flow-drifted") / "venv")
    venv.pip("install", "--no-index", "-f", str(wheels), "torch==2.7.0", "vendorish")
    return venv


@pytest.fixture(scope="module")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("flow-uv-cache")


def guarded_run(
    installer: str,
    venv: Venv,
    policy: Path,
    cache: Path,
    *args: str,
    globals_: tuple[str, ...] = (),
    override: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``dtkpip|dtkuv --python PY --policy P [--override R] [GLOBALS] [pip] ARGS``."""
    own = ["--python", str(venv.python), "--policy", str(policy)]
    own += ["--override", override] if override else []
    sub = ["pip"] if installer == "uv" else []
    env = hermetic_env(UV_CACHE_DIR=str(cache))
    return dtkguard_in(env, installer, *own, *globals_, *sub, *args)


def source(wheels: Path) -> list[str]:
    return ["--no-index", "-f", str(wheels)]


@pytest.mark.parametrize("installer", INSTALLERS)
def test_a_pins_conflict_with_nothing_to_install_shows_the_conflict(
    installer: str, drifted: Venv, policy: Path, wheels: Path, uv_cache: Path
) -> None:
    """With the pins the request cannot resolve; without them there is nothing to install and
    nothing is refused: exit 1 with the installer's words of the conflict (dtkpip used to show
    those of the plan without the pins), nothing changed."""
    before = drifted.snapshot()
    proc = guarded_run(installer, drifted, policy, uv_cache, "install", *source(wheels), "torch")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert any(w in proc.stderr for w in CONFLICT_WORDS), proc.stderr
    assert "Traceback" not in proc.stderr
    assert changed(before, drifted.snapshot()) == []


@pytest.mark.parametrize("installer", INSTALLERS)
def test_a_request_nothing_resolves_does_not_blame_the_pins(
    installer: str, drifted: Venv, policy: Path, wheels: Path, uv_cache: Path
) -> None:
    """A request that conflicts with or without the pins: the installer's words and dtkguard's
    one sentence that says so (dtkpip said nothing of its own, dtkuv blamed the vendor builds)."""
    before = drifted.snapshot()
    req = ["install", *source(wheels), "clash-a==1.0", "clash-b==2.0"]
    proc = guarded_run(installer, drifted, policy, uv_cache, *req)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert any(w in proc.stderr for w in CONFLICT_WORDS), proc.stderr
    tool = f"dtk{installer}"
    assert f"{tool}: stopped `{installer} " in proc.stderr
    assert "with or without the vendor builds of policy flow-test" in proc.stderr
    assert "while keeping the vendor builds" not in proc.stderr
    assert changed(before, drifted.snapshot()) == []


@pytest.mark.parametrize("installer", INSTALLERS)
def test_removing_what_a_vendor_build_needs_is_refused(
    installer: str, drifted: Venv, policy: Path, uv_cache: Path
) -> None:
    """The environment after an uninstall is judged like one after an install, by both (dtkpip
    judged only whether a vendor build itself was named)."""
    before = drifted.snapshot()
    args = ["uninstall", "helper-thing"] + (["-y"] if installer == "pip" else [])
    proc = guarded_run(installer, drifted, policy, uv_cache, *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "vendor-deps-broken" in proc.stderr and "vendorish" in proc.stderr
    assert f"dtk{installer}: stopped `{installer} " in proc.stderr
    assert changed(before, drifted.snapshot()) == []
    assert "helper-thing" in drifted.installed()


@pytest.mark.parametrize("installer", INSTALLERS)
@pytest.mark.parametrize("flag", ["-q", "-v"])
@pytest.mark.parametrize("where", ["global", "after"])
def test_quiet_or_verbose_plans_the_same(
    installer: str, flag: str, where: str, tmp_path: Path, policy: Path, wheels: Path,
    uv_cache: Path,
) -> None:  # fmt: skip
    """``-q``/``-v`` change what the installer says, never the plan: a denied package is still
    refused and an allowed one still installed (dtkuv read uv's words, which -q silences, as an
    empty plan: nothing was installed and it exited 0)."""
    venv = make_venv(tmp_path / "venv")
    globals_ = (flag,) if where == "global" else ()
    tail = (flag,) if where == "after" else ()
    before = venv.snapshot()
    denied = ["install", *source(wheels), *tail, "nvidia-cublas-cu12"]
    proc = guarded_run(installer, venv, policy, uv_cache, *denied, globals_=globals_)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "denied-package" in proc.stderr
    assert changed(before, venv.snapshot()) == []
    allowed = ["install", *source(wheels), *tail, "plain-thing"]
    proc = guarded_run(installer, venv, policy, uv_cache, *allowed, globals_=globals_)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert venv.installed().get("plain-thing") == "1.0", proc.stdout + proc.stderr


@pytest.mark.parametrize("installer", INSTALLERS)
def test_an_override_records_the_command_as_typed(
    installer: str, tmp_path: Path, policy: Path, wheels: Path, uv_cache: Path
) -> None:
    """One record per override, naming the command as the user typed it, the installer's global
    options included (dtkuv dropped uv's), and said once on stderr."""
    from dtkguard.env.store import env_store

    venv = make_venv(tmp_path / "venv")
    globals_ = ("--no-color",) if installer == "pip" else ("--offline",)
    args = ["install", *source(wheels), "nvidia-cublas-cu12"]
    proc = guarded_run(
        installer, venv, policy, uv_cache, *args, globals_=globals_, override="flow test"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr.count("override recorded in") == 1, proc.stderr
    assert venv.installed().get("nvidia-cublas-cu12") == "12.4.5.8"
    log = env_store(venv.path).overrides
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    [entry] = entries
    sub = ["pip"] if installer == "uv" else []
    assert entry["argv"] == [installer, *globals_, *sub, *args]
    assert entry["tool"] == f"dtk{installer}" and entry["reason"] == "flow test"
    assert any(a.startswith("denied-package") for a in entry["allowed"])
    history = run_in_process("history", "--python", str(venv.python))
    assert history.code == 0, history.err
    assert "note: override: flow test" in history.out, history.out


@pytest.mark.parametrize(
    "argv",
    [
        ["pip", "download", "-r", ""],
        ["pip", "wheel", "--find-links="],
        ["uv", "pip", "compile", "-r", ""],
        ["uv", "pip", "freeze", "--index-url", ""],
    ],
    ids=" ".join,
)
def test_an_empty_place_is_refused_on_every_pip_command(argv: list[str], tmp_path) -> None:
    """Both refuse an empty place or source on every command of pip's interface they pass on,
    judged or not (dtkuv passed ``uv pip compile -r ''`` to uv)."""
    python = str(tmp_path / "no-such-python")  # refused before any interpreter is asked
    res = run_in_process(argv[0], "--python", python, *argv[1:])
    assert res.code == 2, (res.code, res.out, res.err)
    assert "empty value" in res.err and "Traceback" not in res.err


def _base_interpreter(dest: Path) -> Path:
    """A base interpreter (no venv) of its own: the running Python's binary copied, its
    standard library linked entry by entry, its own site-packages with pip unpacked in it.
    pip and uv honour PEP 668 only outside a venv."""
    import shutil
    import sys
    import sysconfig
    import zipfile

    from tests.support.cache import find_wheel

    name = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    stdlib = Path(sysconfig.get_path("stdlib"))
    binary = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    if stdlib.name != name or not (stdlib / "os.py").is_file():
        pytest.skip(f"an interpreter laid out as <prefix>/lib/{name} is needed")
    (dest / "bin").mkdir(parents=True)
    shutil.copy2(binary, dest / "bin" / name)
    (dest / "bin" / "python").symlink_to(name)
    shared = sysconfig.get_config_var("INSTSONAME")
    libdir = Path(sysconfig.get_config_var("LIBDIR") or stdlib.parent)
    if sysconfig.get_config_var("Py_ENABLE_SHARED") and shared and (libdir / shared).exists():
        (dest / "lib").mkdir()
        (dest / "lib" / shared).symlink_to(libdir / shared)
    lib = dest / "lib" / name
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "EXTERNALLY-MANAGED"):
            (lib / entry.name).symlink_to(entry)
    site = lib / "site-packages"
    with zipfile.ZipFile(find_wheel("pip")) as whl:
        whl.extractall(site)
    return dest / "bin" / "python"


@pytest.fixture(scope="module")
def marked(tmp_path_factory: pytest.TempPathFactory, policy: Path, module_store: Path) -> Venv:
    """A base interpreter guarded with ``--externally-managed``: the PEP 668 marker is ours."""
    from tests.support.stores import store_env
    from tests.support.venvs import _venv_paths

    python = _base_interpreter(tmp_path_factory.mktemp("flow-base") / "base")
    with store_env(module_store):
        proc = dtkguard_in(
            hermetic_env(), "guard", "install", "--python", str(python), "--policy",
            str(policy), "--externally-managed",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return _venv_paths(python.parent.parent)


@pytest.mark.parametrize("installer", INSTALLERS)
def test_an_interpreter_we_marked_externally_managed_takes_guarded_installs(
    installer: str, marked: Venv, policy: Path, wheels: Path, uv_cache: Path
) -> None:
    """The marker dtkguard wrote stops plain pip and uv; dtkpip and dtkuv pass
    ``--break-system-packages`` on every run that checks it, install and uninstall (dtkuv
    never did, dtkpip not for an uninstall nor for a ``--dry-run``)."""
    plain = marked.pip("install", *source(wheels), "plain-thing", check=False)
    assert plain.returncode != 0 and "externally" in (plain.stdout + plain.stderr).lower()
    dry = guarded_run(installer, marked, policy, uv_cache, "install", "--dry-run",
                      *source(wheels), "plain-thing")  # fmt: skip
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "plain-thing" not in marked.installed()
    args = ["install", *source(wheels), "plain-thing"]
    proc = guarded_run(installer, marked, policy, uv_cache, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert marked.installed().get("plain-thing") == "1.0"
    args = ["uninstall", "plain-thing"] + (["-y"] if installer == "pip" else [])
    proc = guarded_run(installer, marked, policy, uv_cache, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "plain-thing" not in marked.installed()
