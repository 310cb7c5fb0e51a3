"""Heavy libraries stay off the paths that run most: a cached `check`, a `dtkpip` plan, `--help`.

dtkguard lives in crowded environments and runs before every guarded pip command, so pydantic and
tomlkit (only when a policy's TOML is parsed), rich (only on a terminal), resolvelib (only `lock`
and an explanation) and pip-api must not be imported by these commands. Each case runs the real
command line in a subprocess and reads the modules it loaded when it exited.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dtkguard.guard import dtkuv
from tests.support.cli import REPO
from tests.support.sitetree import add_dist
from tests.support.venvs import Venv, hermetic_env, make_venv
from tests.support.wheels import build_wheel

HEAVY = ("pydantic", "pydantic_core", "tomlkit", "rich", "resolvelib", "pip_api")

#: run the CLI, then print the names of the loaded modules on the last line of stderr
_PROBE = (
    "import atexit, json, runpy, sys\n"
    "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules))))\n"
    "sys.argv = ['dtkguard', *sys.argv[1:]]\n"
    "runpy.run_module('dtkguard', run_name='__main__', alter_sys=True)\n"
)


def _loaded(*args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        env={**env, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    marker = proc.stderr.rpartition("\nMODULES ")[2]
    assert proc.stderr.count("MODULES ") == 1, proc.stderr
    return proc, set(json.loads(marker))


#: what pathlib imports (`re` too, which the check's patterns need anyway), and json: a cached
#: check imports none of them, its paths are text (`dtkguard.util.purepath`) and its JSON is
#: read and written by `dtkguard.util.text`
_PATHLIB = ("pathlib", "urllib", "urllib.parse", "ipaddress", "fnmatch", "ntpath")
_NOT_ON_CHECK = (*_PATHLIB, "json", "json.decoder", "json.encoder", "json.scanner")
_COUNTED_PROBE = (
    "import atexit, runpy, sys\n"
    "before = sorted(sys.modules)\n"
    "after = lambda: repr([before, sorted(sys.modules)])\n"
    "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + after()))\n"
    "sys.argv = ['dtkguard', *sys.argv[1:]]\n"
    "runpy.run_module('dtkguard', run_name='__main__', alter_sys=True)\n"
)


def _loaded_bare(
    *args: str, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`_loaded` without ``site`` (the development venv's editable finder imports pathlib
    before any line of dtkguard), its site-packages on the path; the probe is checked to
    have loaded none of `_NOT_ON_CHECK` itself."""
    import ast

    sites = [p for p in sys.path if p.endswith("site-packages")]
    proc = subprocess.run(
        [sys.executable, "-S", "-c", _COUNTED_PROBE, *args],
        env={**env, "PYTHONPATH": os.pathsep.join([str(REPO), *sites]), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.stderr.count("MODULES ") == 1, proc.stderr
    before, after = ast.literal_eval(proc.stderr.rpartition("\nMODULES ")[2])
    assert sorted(set(_NOT_ON_CHECK) & set(before)) == [], "the probe itself imported them"
    return proc, set(after)


def _heavy(modules: set[str]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(HEAVY))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A hermetic environment with its own policy cache (so the first run is a miss)."""
    return hermetic_env(
        XDG_CACHE_HOME=str(tmp_path / "cache"), DTKGUARD_CACHE_DIR=str(tmp_path / "cache" / "d")
    )


def test_help_loads_no_heavy_module(env: dict[str, str]) -> None:
    proc, modules = _loaded("--help", env=env)
    assert proc.returncode == 0, proc.stderr
    assert _heavy(modules) == []
    assert len(modules) < 132, len(modules)  # 125: argparse's width without shutil


def test_cached_check_loads_no_heavy_module(env: dict[str, str], tmp_path: Path) -> None:
    site = tmp_path / "site"
    add_dist(site, "six", "1.17.0", files={"six.py": "x = 1\n"})
    # a site policy (the bundled default is shipped compiled: it never needs pydantic)
    policy = tmp_path / "site-policy.toml"
    policy.write_text('[policy]\nname = "site"\nextends = ["dtk-25.04.1"]\n')
    args = ("check", "--policy", str(policy), "--path", str(site), "--format", "json")
    first, cold = _loaded(*args, env=env)
    assert first.returncode in (0, 1), first.stderr
    assert "pydantic" in cold, "the first run compiles the policy (a cache miss)"
    again, modules = _loaded(*args, env=env)
    assert again.returncode == first.returncode, again.stderr
    assert json.loads(again.stdout)["findings"] == json.loads(first.stdout)["findings"]
    assert _heavy(modules) == []
    assert len(modules) < 155, len(modules)  # 147: was 215 before typing, shutil, csv, ... left
    for command in (
        args,
        ("check", "--path", str(site)),
        ("check", "--path", str(site), "--format", "markdown"),
    ):
        bare, bare_modules = _loaded_bare(*command, env=env)
        assert bare.returncode == first.returncode, bare.stderr
        assert sorted(set(_NOT_ON_CHECK) & bare_modules) == [], command
    light = ("importlib.resources", "shutil", "typing", "csv", "threading", "tempfile")
    # dataclasses imports inspect (ast, dis, tokenize): the check path's models are records
    # argparse (with gettext and locale): check's command line is read by `quick_args`
    for name in (*light, "dataclasses", "inspect", "ast", "argparse", "gettext"):
        assert name not in modules, f"{name}: milliseconds a check does not need"


def test_a_repeated_guarded_check_hashes_no_layer(env: dict[str, str], tmp_path: Path) -> None:
    """The guard's layers are hashed by the first check, then trusted by their inode, ctime
    and size (the store's layer stat cache): the next check loads no file hasher at all."""
    venv = make_venv(tmp_path / "venv")
    proc, _ = _loaded("guard", "install", "--python", str(venv.python), env=env)
    assert proc.returncode == 0, proc.stderr
    args = ("check", "--python", str(venv.python), "--format", "json")
    first, cold = _loaded(*args, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "dtkguard.env.filehash" in cold, "the first check hashes the layers"
    again, modules = _loaded(*args, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["findings"] == json.loads(first.stdout)["findings"] == []
    assert _heavy(modules) == []
    for name in ("dtkguard.env.filehash", "threading"):
        assert name not in modules, f"{name}: a repeated guarded check hashed a layer"
    # its few small digests (the baseline's, the store's chains) need no OpenSSL (util.sha)
    assert "_hashlib" not in modules
    for fmt in ("json", "table"):  # no pathlib, urllib, ipaddress, fnmatch, json
        bare, modules = _loaded_bare(
            "check", "--python", str(venv.python), "--format", fmt, env=env
        )
        assert bare.returncode == 0, bare.stdout + bare.stderr
        assert sorted(set(_NOT_ON_CHECK) & modules) == [], fmt


@pytest.mark.wheel_cache
def test_dtkpip_plan_loads_no_heavy_module(env: dict[str, str], tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tiny-lib", "1.0")
    args = ["pip", "--python", str(venv.python), "install", "--no-index", "-f", str(wheels)]
    _loaded(*args, "--dry-run", "tiny-lib", env=env)  # fills the policy cache
    proc, modules = _loaded(*args, "tiny-lib", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (venv.site_packages / "tiny_lib-1.0.dist-info").is_dir()
    assert _heavy(modules) == []
    assert len(modules) < 260, len(modules)


@pytest.mark.wheel_cache
def test_dtkpip_one_run_loads_no_guard_install_module(env: dict[str, str], tmp_path: Path) -> None:
    """An install dtkpip runs as the one run of the guarded env's pip (its hook present) reads
    the hook's files without the machinery of `guard install` (`guard/layers.py`, with
    `dataclasses` and `importlib.resources`)."""
    venv = make_venv(tmp_path / "venv")
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tiny-lib", "1.0")
    env = {**env, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc, _ = _loaded("guard", "install", "--python", str(venv.python), env=env)
    assert proc.returncode == 0, proc.stderr
    args = ["pip", "--python", str(venv.python), "install", "--no-index", "-f", str(wheels)]
    proc, modules = _loaded(*args, "tiny-lib", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "dtkguard.guard.pip_channel" in modules  # the one run, not a dry run first
    assert _heavy(modules) == []
    assert "dtkguard.guard.layers" not in modules
    proc, modules = _loaded(*args, "tiny-lib", env=env)  # already satisfied: no pip run
    assert proc.returncode == 0, proc.stderr
    assert "Requirement already satisfied: tiny-lib" in proc.stdout
    for name in ("dtkguard.guard.pip_channel", "dtkguard.guard.layers", "dataclasses"):
        assert name not in modules, name
    assert "importlib.resources" not in modules


#: what an already satisfied ``dtkpip install``/``dtkuv pip install`` (`guard/satisfied.py`)
#: loads for nothing: the front-ends and the flow, the installers' runner, packaging's parsers
#: (its requirement parser costs more than the whole answer), argparse, dataclasses
_SATISFIED_UNNEEDED = (
    "dtkguard.guard.dtkpip", "dtkguard.guard.dtkuv", "dtkguard.guard.flow", "subprocess",
    "packaging", "packaging.requirements", "argparse", "dataclasses", "typing", "tempfile",
)  # fmt: skip


@pytest.mark.wheel_cache
def test_satisfied_dtkpip_and_dtkuv_load_no_unneeded_module(
    env: dict[str, str], tmp_path: Path
) -> None:
    venv = make_venv(tmp_path / "venv")
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tiny-lib", "1.0", requires_dist=["tiny-dep>=1"])
    build_wheel(wheels, "tiny-dep", "1.0")
    env = {**env, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc, _ = _loaded("guard", "install", "--python", str(venv.python), env=env)
    assert proc.returncode == 0, proc.stderr
    args = ["--python", str(venv.python), "install", "--no-index", "-f", str(wheels), "tiny-lib"]
    proc, _ = _loaded("pip", *args, env=env)  # installs (and fills the interpreter cache)
    assert proc.returncode == 0, proc.stderr
    for command in (["pip", *args], ["uv", "pip", *args[2:3], *args[:2], *args[3:]]):
        proc, modules = _loaded(*command, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "already satisfied: tiny-dep>=1" in proc.stdout or "Checked 1 package" in proc.stderr
        assert sorted(set(_SATISFIED_UNNEEDED) & modules) == [] and _heavy(modules) == []


def _uv_install_of(
    tmp_path: Path, env: dict[str, str], *names: str
) -> tuple[Venv, list[str], dict[str, str]]:
    """(a new venv, a ``uv pip install`` command line into it from a folder of wheels of
    ``names``, its environment with uv's own cache)."""
    venv = make_venv(tmp_path / "venv")
    wheels = tmp_path / "wheels"
    for name in names:
        build_wheel(wheels, name, "1.0")
    uv = {**env, "UV_CACHE_DIR": str(tmp_path / "uv-cache")}
    args = ["uv", "pip", "install", "--python", str(venv.python), "--no-index", "-f", str(wheels)]
    return venv, args, uv


#: what dtkuv's routes load for nothing: argparse (its command line is uv's, `cli._passthrough`);
#: on a satisfied install also OpenSSL (`dtkguard.util.sha`) and the environment readers (an
#: interpreter-cache hit asks nothing)
_UV_UNNEEDED = ("argparse",)


@pytest.mark.wheel_cache
def test_dtkuv_satisfied_and_judged_installs_load_no_unneeded_module(
    env: dict[str, str], tmp_path: Path
) -> None:
    venv, args, uv = _uv_install_of(tmp_path, env, "tiny-lib")
    proc, modules = _loaded(*args, "tiny-lib", env=uv)  # judged: a real install
    assert proc.returncode == 0, proc.stderr
    assert (venv.site_packages / "tiny_lib-1.0.dist-info").is_dir()
    assert "dtkguard.guard.verdict" in modules  # it was judged
    assert sorted(set(_UV_UNNEEDED) & modules) == []
    proc, modules = _loaded(*args, "tiny-lib", env=uv)  # satisfied: no uv run (guard/satisfied)
    assert proc.returncode == 0, proc.stderr
    assert "dtkguard.guard.verdict" not in modules
    unneeded = {*_UV_UNNEEDED, "_hashlib", "dtkguard.guard.dtkuv", "subprocess"}
    assert sorted(unneeded & modules) == [] and _heavy(modules) == []


#: what a judged ``dtkuv pip install`` into a guarded env loads for nothing when nothing has to
#: be put back: the date of the decision is `time`'s (`guard/baseline.refused`), and the override
#: record's reader (`pipoverride`: getpass, with termios) waits until an override is recorded
_JUDGED_UNNEEDED = ("argparse", "datetime", "getpass", "termios")


@pytest.mark.wheel_cache
def test_a_judged_dtkuv_install_into_a_guarded_env_loads_no_unneeded_module(
    env: dict[str, str], tmp_path: Path
) -> None:
    env = {**env, "XDG_STATE_HOME": str(tmp_path / "state")}
    venv, args, uv = _uv_install_of(tmp_path, env, "tiny-lib", "tiny-first")
    proc, _ = _loaded("guard", "install", "--python", str(venv.python), env=env)
    assert proc.returncode == 0, proc.stderr
    proc, _ = _loaded(*args, "tiny-first", env=uv)  # the first run fills dtkguard's caches
    assert proc.returncode == 0, proc.stderr
    proc, modules = _loaded(*args, "tiny-lib", env=uv)
    assert proc.returncode == 0, proc.stderr
    assert (venv.site_packages / "tiny_lib-1.0.dist-info").is_dir()
    assert {"dtkguard.guard.verdict", "dtkguard.guard.baseline"} <= modules  # judged, followed
    assert sorted(set(_JUDGED_UNNEEDED) & modules) == []


#: what a satisfied ``dtkuv pip install`` answer imports none of: pathlib (with `re`,
#: `urllib.parse`, `ipaddress`, `fnmatch`), `json` (its decoder compiles patterns: the C scanner
#: reads the caches), `enum` (the findings' severities), the store's module (its paths as text);
#: run without ``site`` (the development venv's editable finder imports pathlib and re before
#: any line of dtkguard), so only dtkguard's own imports count (the probe's `runpy` imports
#: `contextlib` and `importlib`)
_LEAN_UNNEEDED = (
    "pathlib", "re", "json", "urllib.parse", "ipaddress", "fnmatch", "enum",
    "dtkguard.findings", "dtkguard.env.store",
)  # fmt: skip
_BARE_PROBE = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules))))\n"
    "sys.argv = ['dtkguard', *sys.argv[1:]]\n"
    "runpy.run_module('dtkguard', run_name='__main__', alter_sys=True)\n"
)


@pytest.mark.wheel_cache
def test_satisfied_dtkuv_imports_no_pathlib_re_or_json(env: dict[str, str], tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tiny-lib", "1.0", requires_dist=["tiny-dep>=1"])
    build_wheel(wheels, "tiny-dep", "1.0")
    env = {**env, "XDG_STATE_HOME": str(tmp_path / "state"), "UV_CACHE_DIR": str(tmp_path / "uv")}
    proc, _ = _loaded("guard", "install", "--python", str(venv.python), env=env)
    assert proc.returncode == 0, proc.stderr
    args = ["uv", "pip", "install", "--python", str(venv.python), "--no-index", "-f", str(wheels)]
    proc, _ = _loaded(*args, "tiny-lib", env=env)  # judged: installs, fills the caches
    assert proc.returncode == 0, proc.stderr
    bare = subprocess.run(
        [sys.executable, "-S", "-c", _BARE_PROBE, *args, "tiny-lib"],
        env={**env, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bare.returncode == 0, bare.stderr
    assert "Checked 1 package" in bare.stderr  # answered here: no uv run
    modules = set(bare.stderr.rpartition("\nMODULES ")[2].split())
    assert "dtkguard.guard.satisfied" in modules and "dtkguard.guard.dtkuv" not in modules
    assert sorted(set(_LEAN_UNNEEDED) & modules) == []


@pytest.mark.parametrize("module", ["dtkguard.guard.verdict", *dtkuv._AFTER_THE_PLAN])
def test_what_a_judged_install_imports_loads_no_dataclasses_or_typing(module: str) -> None:
    """dataclasses imports inspect, ast, dis and tokenize, and typing costs milliseconds too:
    the verdict of every judged install, the wheels' listing and what dtkuv imports while uv
    plans are `lightclass` records (packaging's requirement parser, on a memo miss, still
    loads both)."""
    code = f"import sys, {module}; print(sorted({{'dataclasses', 'typing'}} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**hermetic_env(), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "[]"


def test_probe_sees_a_heavy_import(env: dict[str, str]) -> None:
    """The probe itself works: a command that does parse TOML is seen loading pydantic."""
    policy = REPO / "policies" / "dtk-25.04.1.toml"
    proc, modules = _loaded("policy", "check", str(policy), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "pydantic" in _heavy(modules)
