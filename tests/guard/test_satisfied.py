"""The "already satisfied" fast path of dtkpip and dtkuv (`dtkguard.guard.satisfied`), held
against real pip and real uv.

The differential matrix: for every case the fast path's answer (satisfied, with the words it
would say; or "don't know") is compared with what pip's ``install --dry-run --report`` and
uv's ``pip install --dry-run`` say in the same real venv. The fast path may say "don't know"
where pip/uv change nothing, never "satisfied" where they would change something; where it
answers, its lines are pip's (uv's) own. Then the commands a user types: an installed package
is answered without any pip or uv run (their pip and uv are made to fail), the env and the
journal unchanged, in an unguarded and in a guarded env.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dtkguard.guard import satisfied
from tests.support.cache import PIP_VERSIONS, uv_binary
from tests.support.cli import dtkguard_in
from tests.support.venvs import Venv, hermetic_env, make_venv, users_env
from tests.support.wheels import build_wheel

#: (name, version, Requires-Dist, Provides-Extra) installed in the venv (``leaf`` at 1.0,
#: while the wheelhouse also has 2.0 that ``mid`` needs)
TREE = [
    ("a", "1.0", ["b>=1", "c", 'd; python_version < "3"', "k"], []),
    ("b", "1.2", ["c==2.0", "f"], []),
    ("c", "2.0", [], []),
    ("d", "1.0", [], []),
    ("e", "1.0", ['g; extra == "x"', "h"], ["x"]),
    ("f", "1.0", ["k<2"], []),
    ("g", "1.0", [], []),
    ("h", "1.0", [], []),
    ("k", "1.5", [], []),
    ("m", "1.0", ['n; sys_platform == "win32"'], []),
    ("p", "1.0", ['q; python_version >= "3"', "r~=1.0"], []),
    ("q", "1.0", [], []),
    ("r", "1.0.5", [], []),
    ("deep", "1.0", ["mid"], []),
    ("mid", "1.0", ["leaf>=2"], []),
    ("leaf", "1.0", [], []),
    ("broken", "1.0", [], []),
]


@pytest.fixture(scope="module")
def tree(pip_version: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Venv, Path]:
    """A venv of ``pip_version`` holding `TREE`, and its wheelhouse (with ``leaf 2.0``,
    ``a 2.0`` and ``n``, which are not installed)."""
    return _tree(pip_version, tmp_path_factory)


@pytest.fixture(scope="module")
def uv_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Venv, Path]:
    """`tree` for uv, whose answers do not depend on the venv's pip: the newest pip only."""
    return _tree(PIP_VERSIONS[-1], tmp_path_factory)


def _tree(pip_version: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Venv, Path]:
    base = tmp_path_factory.mktemp(f"satisfied-{pip_version}")
    wheels = base / "wheels"
    for name, version, requires, extras in TREE:
        build_wheel(wheels, name, version, requires_dist=requires, provides_extra=extras)
    build_wheel(wheels, "leaf", "2.0")
    build_wheel(wheels, "a", "2.0")
    build_wheel(wheels, "n", "1.0")
    venv = make_venv(base / "venv", pip_version=pip_version)
    names = [f"{n}=={v}" for n, v, _, _ in TREE]
    venv.pip("install", "--no-index", "--no-deps", "-f", str(wheels), *names)
    return venv, wheels


@contextlib.contextmanager
def _damaged(venv: Venv, case: str) -> Iterator[None]:
    """``broken`` without its METADATA for the ``no-metadata`` case (pip 22 fails on every
    install then), two dist-info folders of ``c`` for ``duplicate``, ``h`` of an invalid
    version for ``invalid-version``."""
    info = next(venv.site_packages.glob("broken-1.0.dist-info")) / "METADATA"
    twin = venv.site_packages / "c-3.0.dist-info"
    if case == "no-metadata":
        info.rename(info.with_name("METADATA.aside"))
    if case == "duplicate":
        shutil.copytree(next(venv.site_packages.glob("c-2.0.dist-info")), twin)
    h = next(venv.site_packages.glob("h-1.0.dist-info")) / "METADATA"
    kept = h.read_text()
    if case == "invalid-version":
        assert "\nVersion: 1.0\n" in kept
        h.write_text(kept.replace("\nVersion: 1.0\n", "\nVersion: one.zero\n"))
    try:
        yield
    finally:
        if case == "no-metadata":
            info.with_name("METADATA.aside").rename(info)
        shutil.rmtree(twin, ignore_errors=True)
        h.write_text(kept)


def _case_files(tmp: Path) -> dict[str, str]:
    (tmp / "c1.txt").write_text("c==1.0\n")
    (tmp / "c2.txt").write_text("c==2.0\nk>=1.5  # the installed one\n")
    (tmp / "reqs.txt").write_text("a\n")
    (tmp / "upgrade.conf").write_text("[install]\nupgrade = true\n")
    (tmp / "links.conf").write_text(f"[global]\nfind-links = {tmp}\n")
    return {"C1": str(tmp / "c1.txt"), "C2": str(tmp / "c2.txt"), "REQS": str(tmp / "reqs.txt")}


#: (id, arguments after ``install``, does the fast path answer for pip, for uv); ``C1`` ...
#: name the case files of `_case_files`, ``WHEEL`` a wheel's path
CASES = [
    ("plain", ["a"], True, True),
    ("exact", ["a==1.0"], True, True),
    ("range", ["a>=0.5,<2"], True, True),
    ("two", ["h", "a"], True, True),
    ("pinned-first", ["c", "b==1.2"], True, True),
    ("upper-bounds", ["p", "f"], True, True),
    ("no-deps", ["--no-deps", "a", "b"], True, True),
    ("extras", ["e[x]"], False, True),
    ("marker-false-dep", ["m"], True, True),
    ("marker-true-dep", ["p"], True, True),
    ("marker-true-root", ['a; python_version >= "3"'], True, True),
    ("marker-false-root", ['a; python_version < "3"'], False, False),
    ("deep-unsatisfied", ["deep"], False, False),
    ("deep-no-deps", ["--no-deps", "deep"], True, True),
    ("constraint-violated", ["a", "-c", "C1"], False, False),
    ("constraint-kept", ["a", "-c", "C2"], True, True),
    ("upgrade", ["-U", "a"], False, False),
    ("force-reinstall", ["--force-reinstall", "a"], False, False),
    ("ignore-installed", ["--ignore-installed", "a"], False, False),
    ("requirements-file", ["-r", "REQS"], False, False),
    ("a-path", ["WHEEL"], False, False),
    ("newer-asked", ["a==2.0"], False, False),
    ("not-installed", ["n"], False, False),
    ("no-metadata", ["broken"], False, False),
    ("duplicate", ["c"], False, False),
    ("invalid-version", ["h"], False, False),
    ("config-find-links", ["a"], True, True),
    ("quiet", ["-q", "a"], True, True),
    ("unknown-option", ["--user", "a"], False, False),
    # without --no-index (pip): its "Looking in indexes" line, said unless the index is pip's
    # own default (``PYPI``: read from the venv's pip), which no satisfied install asks
    ("index-named", ["-i", "http://127.0.0.1:9/simple", "a"], True, True),
    ("index-default", ["-i", "PYPI", "a"], True, True),
    ("index-extra", ["--extra-index-url", "http://127.0.0.1:9/simple", "a"], True, True),
]


def _args(args: list[str], files: dict[str, str], wheel: str) -> list[str]:
    return [files.get(a, wheel if a == "WHEEL" else a) for a in args]


def _pip_dry_run(
    venv: Venv, args: list[str], env: dict[str, str], cwd: Path
) -> tuple[int, str, list | None, str]:
    report = cwd / "report.json"
    report.unlink(missing_ok=True)
    proc = subprocess.run(
        [str(venv.python), "-m", "pip", "install", "--dry-run", "--report", str(report), *args],
        env=env, cwd=cwd, capture_output=True, text=True,
    )  # fmt: skip
    installs = json.loads(report.read_text())["install"] if report.exists() else None
    said = "".join(ln for ln in proc.stdout.splitlines(keepends=True) if not ln.startswith("Would"))
    return proc.returncode, said, installs, proc.stderr[-2000:]


def _as_pip_runs(monkeypatch: pytest.MonkeyPatch, cwd: Path, env: dict[str, str]) -> None:
    """This process sees what the pip/uv run beside it sees: ``cwd``, and ``env``'s
    ``PIP_*``/``UV_*`` variables only."""
    monkeypatch.chdir(cwd)
    for key in [k for k in os.environ if k.startswith(("PIP_", "UV_"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def _pypi(venv: Venv) -> str:
    """pip's own default index, as the venv's pip says it."""
    code = "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"
    return venv.run("-c", code).stdout.strip()


@pytest.mark.parametrize(
    ("case", "args", "pip_answers", "uv_answers"), CASES, ids=[c[0] for c in CASES]
)
def test_pip_fast_path_never_says_satisfied_where_pip_changes_something(
    tree, tmp_path, monkeypatch, case, args, pip_answers, uv_answers
) -> None:
    venv, wheels = tree
    files = _case_files(tmp_path)
    wheel = str(next(wheels.glob("a-2.0-*.whl")))
    typed = ["--no-index", "-f", str(wheels), *_args(args, files, wheel)]
    env = hermetic_env()
    if case == "upgrade":  # the same answer through the config file
        env["PIP_CONFIG_FILE"] = str(tmp_path / "upgrade.conf")
        typed.remove("-U")
    if case == "config-find-links":  # said in pip's "Looking in links" line
        env["PIP_CONFIG_FILE"] = str(tmp_path / "links.conf")
    if case.startswith("index-"):
        typed.remove("--no-index")
        typed = [_pypi(venv) if a == "PYPI" else a for a in typed]
    _as_pip_runs(monkeypatch, tmp_path, env)
    with _damaged(venv, case):
        answer = satisfied.pip_answer(["--python", str(venv.python), "install", *typed])
        code, said, installs, err = _pip_dry_run(venv, typed, env, tmp_path)
    if answer is not None:
        assert code == 0 and installs == [], (said, installs, err)
        assert answer[1] == ("" if "-q" in args else said)
    assert (answer is not None) == pip_answers, (answer, said, installs)


@pytest.mark.parametrize(
    ("case", "args", "pip_answers", "uv_answers"), CASES, ids=[c[0] for c in CASES]
)
def test_uv_fast_path_never_says_satisfied_where_uv_changes_something(
    uv_tree, tmp_path, monkeypatch, case, args, pip_answers, uv_answers
) -> None:
    venv, wheels = uv_tree
    files = _case_files(tmp_path)
    wheel = str(next(wheels.glob("a-2.0-*.whl")))
    typed = ["--no-index", "-f", str(wheels), *_args(args, files, wheel)]
    if case == "force-reinstall":
        typed[typed.index("--force-reinstall")] = "--reinstall"
    if case == "ignore-installed":
        typed.remove("--ignore-installed")
        typed.append("--exclude-newer=2099-01-01")  # an option the fast path does not know
    env = hermetic_env()
    _as_pip_runs(monkeypatch, tmp_path, env)
    cmd = ["pip", "install", "--python", str(venv.python), *typed]
    with _damaged(venv, case):
        answer = satisfied.uv_answer(cmd, 0.0)
        proc = subprocess.run(
            [uv_binary(), *cmd, "--dry-run"], env=env, cwd=tmp_path, capture_output=True, text=True
        )
    changes = [
        ln
        for ln in proc.stderr.splitlines()
        if ln.startswith(("Would install", "Would uninstall", " + ", " - "))
    ]
    if answer is not None:
        assert proc.returncode == 0 and not changes, proc.stderr
        if "-q" not in args:
            ours = answer[1].splitlines()
            theirs = proc.stderr.splitlines()
            assert ours[0] == theirs[0]  # Using Python ... environment at: ...
            assert re.sub(r" in .*", "", ours[1]) == re.sub(r" in .*", "", theirs[1])
    assert (answer is not None) == uv_answers, (answer, proc.stderr)


# -- through the commands ------------------------------------------------------------------------


@contextlib.contextmanager
def _no_pip(venv: Venv) -> Iterator[None]:
    """``python -m pip`` of ``venv`` fails while this holds: a pip run would show."""
    main = venv.site_packages / "pip" / "__main__.py"
    aside = main.with_name("__main__.aside")
    main.rename(aside)
    try:
        yield
    finally:
        aside.rename(main)


def _files(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_dtkpip_and_dtkuv_answer_an_installed_request_without_pip_or_uv(tree, tmp_path) -> None:
    venv, wheels = tree
    env = hermetic_env(DTKGUARD_UV="/bin/false")  # a uv run fails
    typed = ["install", "--no-index", "-f", str(wheels), "p", "a==1.0"]
    plain = subprocess.run(
        [str(venv.python), "-m", "pip", *typed], env=env, cwd=tmp_path, capture_output=True,
        text=True,
    )  # fmt: skip
    assert plain.returncode == 0 and "already satisfied: a==1.0" in plain.stdout
    before = venv.snapshot()
    with _no_pip(venv):
        pip = dtkguard_in(env, "pip", "--python", str(venv.python), *typed, cwd=tmp_path)
        uv = dtkguard_in(env, "uv", "pip", "install", "--python", str(venv.python), *typed[1:],
                         cwd=tmp_path)  # fmt: skip
        broken = dtkguard_in(env, "pip", "--python", str(venv.python), "install", "-U", "a")
    assert broken.returncode != 0  # the usual path runs pip, which is broken here
    assert pip.returncode == 0, pip.stderr
    assert pip.stdout == plain.stdout
    assert pip.stderr == f"dtkpip: acting on {venv.python}\n"
    assert uv.returncode == 0, uv.stderr
    assert uv.stdout == ""
    assert re.fullmatch(
        rf"dtkuv: acting on {re.escape(str(venv.python))}\n"
        r"Using Python [\d.]+ environment at: \S+\nChecked 2 packages in [\d.]+m?s\n",
        uv.stderr,
    ), uv.stderr
    assert venv.snapshot() == before


def test_guarded_env_answered_without_pip_or_uv_env_and_journal_unchanged(
    guarded, tmp_path
) -> None:
    venv = guarded.venv
    env = users_env(tmp_path, DTKGUARD_UV="/bin/false")  # pip reads the env's pip.conf
    typed = ["install", *guarded.index_args, "torch"]
    plain = guarded.pip(*typed, env=env, module=True)
    assert plain.returncode == 0 and "already satisfied: torch" in plain.stdout, plain.stderr
    before, store = venv.snapshot(), _files(guarded.store.dir)
    with _no_pip(venv):
        pip = guarded.dtkpip(*typed, env=env)
        uv_env = hermetic_env(DTKGUARD_UV="/bin/false")  # uv reads no config file
        uv = guarded.dtkguard("uv", "pip", "install", "--python", str(venv.python), *typed[1:],
                              env=uv_env)  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    assert pip.stdout == plain.stdout
    assert "Looking in links:" in pip.stdout  # the env's pip.conf: its find-links said
    assert uv.returncode == 0, uv.stderr
    assert "Checked 1 package in" in uv.stderr
    assert venv.snapshot() == before
    assert _files(guarded.store.dir) == store  # no journal transaction, no override


def test_the_uv_shim_answers_with_the_env_uv_toml_pins(build_guarded, tmp_path) -> None:
    """The shim of ``guard install --uv`` names the env's ``uv.toml`` (its vendor pins as
    ``constraint-dependencies``): read, and satisfied by the vendor torch, without uv."""
    fresh = build_guarded(tmp_path / "venv")
    py = str(fresh.venv.python)
    env = users_env(tmp_path, UV_CACHE_DIR=str(tmp_path / "uvcache"))
    proc = fresh.dtkguard("guard", "install", "--python", py, "--uv", env=env)
    assert proc.returncode == 0, proc.stderr
    shim = fresh.venv.bin / "uv"
    config = re.search(r"UV_CONFIG_FILE=(\S+);", shim.read_text())
    assert config is not None
    req = ["pip", "install", *fresh.index_args, "torch"]
    real = subprocess.run(
        [uv_binary(), *req, "--python", py, "--dry-run"],
        env={**env, "UV_CONFIG_FILE": config.group(1).strip("'")}, capture_output=True, text=True,
    )  # fmt: skip
    assert real.returncode == 0 and "Would install" not in real.stderr, real.stderr
    before, store = fresh.venv.snapshot(), _files(fresh.store.dir)
    ran = subprocess.run(
        [str(shim), *req], env={**env, "DTKGUARD_UV": "/bin/false"}, capture_output=True,
        text=True,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "Checked 1 package in" in ran.stderr
    assert fresh.venv.snapshot() == before
    assert _files(fresh.store.dir) == store
