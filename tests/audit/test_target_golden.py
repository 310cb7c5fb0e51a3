"""The target of every report, byte for byte as the untyped target dict printed it.

The goldens in tests/data/golden/targets were rendered before the target became a dataclass;
``DTKGUARD_WRITE_GOLDEN=1`` rewrites them (only for a deliberate change of the output).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tests.audit.conftest import VENDOR_TORCH, run_cli
from tests.audit.test_targets import fake_runtime
from tests.support.sitetree import add_dist

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "golden" / "targets"
FORMATS = ("json", "sarif", "junit", "markdown", "cyclonedx", "table")
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _normalise(text: str, subs: dict[str, str]) -> str:
    """The text without what changes from run to run: paths, pids, times, serials, host."""
    for old, new in sorted(subs.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(old, new)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "<CREATED>", text)
    text = re.sub(r'(time|"elapsed")(=|: )"?[0-9.]+"?', r"\1\2<TIME>", text)
    text = re.sub(r"urn:uuid:[0-9a-f-]{36}", "urn:uuid:<UUID>", text)
    text = text.replace(os.uname().nodename, "<HOST>")
    from dtkguard import __version__

    return text.replace(__version__, "<VERSION>")


def _image(top: Path, *pythons: str) -> Path:
    """An image root with a vendor torch and numpy under each ``usr/lib/pythonX.Y`` (or an
    ``opt/conda`` one for the second)."""
    for n, version in enumerate(pythons):
        lib = "usr/lib" if n == 0 else "opt/conda/lib"
        site = top / lib / f"python{version}" / "site-packages"
        add_dist(site, "torch", VENDOR_TORCH, files={"torch/__init__.py": "x = 1\n"})
        add_dist(site, "numpy", "1.26.4")
    return top


def _check(name: str, command: str, args: list[str], subs: dict[str, str]) -> None:
    for fmt in FORMATS:
        result = run_cli(command, *args, "-f", fmt)
        assert result.code in (0, 1), result.err
        got = _normalise(result.out, subs)
        path = GOLDEN / f"{name}.{command}.{fmt}"
        if os.environ.get("DTKGUARD_WRITE_GOLDEN"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(got, encoding="utf-8")
        assert got == path.read_text(encoding="utf-8"), f"{path.name} differs"


@pytest.mark.parametrize("command", ["check", "audit"])
def test_path_and_root_reports_are_unchanged(tmp_path, command):
    one = _image(tmp_path / "one", "3.9")
    two = _image(tmp_path / "two", "3.9", "3.12")
    subs = {str(tmp_path): "<TMP>"}
    _check("path", command, ["--path", str(one / "usr/lib/python3.9/site-packages")], subs)
    _check("root", command, ["--root", str(one)], subs)
    _check("root-two-pythons", command, ["--root", str(two)], subs)


@pytest.mark.parametrize("command", ["check", "audit"])
def test_python_pid_and_container_reports_are_unchanged(
    tmp_path, venv, sleeper, monkeypatch, command
):
    subs = {
        str(venv.path): "<VENV>",
        f"/proc/{sleeper.pid}/": "/proc/<PID>/",
        f'"pid": {sleeper.pid}': '"pid": <PID>',
        f"pid={sleeper.pid}": "pid=<PID>",
        f"python{HERE}": "python<PY>",
        f'"{HERE}"': '"<PY>"',
        f"={HERE}": "=<PY>",
        f">{HERE}<": "><PY><",
    }
    for name, args in (
        ("python", ["--python", str(venv.python)]),
        ("pid", ["--pid", str(sleeper.pid)]),
    ):
        for fmt in ("json", "markdown", "table"):
            result = run_cli(command, *args, "-f", fmt)
            assert result.code in (0, 1), result.err
            _compare_target(f"{name}.{command}.{fmt}", result.out, subs)
    fake_runtime(tmp_path / "bin", "docker", sleeper.pid)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    for fmt in ("json", "markdown", "table"):
        result = run_cli(command, "--container", "vllm-0", "-f", fmt)
        assert result.code in (0, 1), result.err
        _compare_target(f"container.{command}.{fmt}", result.out, subs)


def _compare_target(name: str, out: str, subs: dict[str, str]) -> None:
    """The target part of a report over a venv (whose contents are the venv fixture's)."""
    if name.endswith(".json"):
        start = out.index('  "target"')
        part = out[start : out.index('  "policy"', start)]
    else:
        part = next(line for line in out.splitlines() if "target" in line.lower())
    got = _normalise(part, subs)
    path = GOLDEN / name
    if os.environ.get("DTKGUARD_WRITE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8"), f"{path.name} differs"
