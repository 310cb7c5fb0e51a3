"""dtkguard's commands are plain scripts (``scripts/``, setuptools' ``script-files``), not
console-script entry points: the script pip writes for an entry point imports `re` before any
line of dtkguard. pip and uv install them from the wheel pointed at the environment's
interpreter, executable and in the RECORD, and each relays its command's exit status."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cache import uv_binary
from tests.support.venvs import hermetic_env, make_venv

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = ("dtkguard", "dtkpip", "dtkuv")


def test_each_script_imports_only_its_function_of_the_cli() -> None:
    for name in SCRIPTS:
        text = (REPO / "scripts" / name).read_text()
        assert text.startswith("#!python\n")
        tree = ast.parse(text)
        imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
        assert len(imports) == 1 and isinstance(imports[0], ast.ImportFrom), name
        assert imports[0].module == "dtkguard.cli", name


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dtkguard's wheel, built offline from a copy of its inputs (the checkout stays clean)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    for name in ("dtkguard", "policies", "plugins", "scripts"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    cmd = [os.sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    cmd += ["--no-index", "-q", "-w", str(tmp / "dist"), str(src)]
    subprocess.run(cmd, env=hermetic_env(), check=True, capture_output=True)
    return next((tmp / "dist").glob("dtkguard-*.whl"))


@pytest.mark.wheel_cache
@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_pip_and_uv_install_the_scripts_that_relay_the_exit_status(
    tmp_path: Path, wheel: Path, installer: str
) -> None:
    venv = make_venv(tmp_path / "venv")
    env = hermetic_env(DTKGUARD_UV=uv_binary(), XDG_STATE_HOME=str(tmp_path / "state"))
    if installer == "pip":
        venv.pip("install", "--no-deps", "--no-index", str(wheel))
    else:
        cmd = [uv_binary(), "pip", "install", "--python", str(venv.python), "--no-deps"]
        subprocess.run([*cmd, "--offline", str(wheel)], env=env, check=True, capture_output=True)
    record = next(venv.site_packages.glob("dtkguard-*.dist-info")).joinpath("RECORD").read_text()
    for name in SCRIPTS:
        script = venv.path / "bin" / name
        assert script.read_text().splitlines()[0] in (f"#!{venv.python}", f"#!{venv.python}3")
        assert os.access(script, os.X_OK)
        assert f"../../../bin/{name}," in record  # uninstalled with the dist
    run = [str(venv.path / "bin" / "dtkguard"), "--version"]
    done = subprocess.run(run, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("dtkguard "), done.stderr
    missing = str(tmp_path / "missing")
    for argv in (["dtkpip", "install"], ["dtkuv", "pip", "install"]):
        run = [str(venv.path / "bin" / argv[0]), *argv[1:], "--python", missing, "x"]
        done = subprocess.run(run, env=env, capture_output=True, text=True)
        assert done.returncode == 2, done.stderr  # the command's own code, not the script's
        assert "name the interpreter to act on as a path" in done.stderr
