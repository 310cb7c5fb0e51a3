"""The target of every report, byte for byte as the untyped target dict printed it.

The goldens in tests/data/golden/targets were rendered before the target became a dataclass:
per target kind and command, the whole json report of a fixed image (a venv's target part
only) and the target-bearing part of every other format. ``DTKGUARD_WRITE_GOLDEN=1`` rewrites
them (only for a deliberate change of the output).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from tests.audit.conftest import VENDOR_TORCH, run_cli
from tests.audit.test_targets import fake_runtime
from tests.support.sitetree import add_dist

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "golden" / "targets"
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _line(word: str):
    return lambda out: next(line for line in out.splitlines() if word in line)


def _json_target(out: str) -> str:
    start = out.index('  "target"')
    return out[start : out.index('  "policy"', start)]


def _sarif(out: str) -> str:
    return json.dumps(json.loads(out)["runs"][0]["originalUriBaseIds"], indent=2)


def _cyclonedx(out: str) -> str:
    return json.dumps(json.loads(out)["metadata"]["component"], indent=2)


#: format -> the part of its output that carries the target (junit carries none)
PARTS = {
    "json": _json_target,
    "sarif": _sarif,
    "cyclonedx": _cyclonedx,
    "markdown": _line("Target:"),
    "table": _line("target="),
}


def _normalise(text: str, subs: dict[str, str]) -> str:
    """The text without what changes from run to run: paths, pids, times, serials, host."""
    for old, new in sorted(subs.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(old, new)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "<CREATED>", text)
    text = re.sub(r'"elapsed": [0-9.]+', '"elapsed": <TIME>', text)
    text = text.replace(os.uname().nodename, "<HOST>")
    from dtkguard import __version__

    return text.replace(f'"{__version__}"', '"<VERSION>"')


def _compare(name: str, args: list[str], subs: dict[str, str], whole_json: bool) -> None:
    """``name``'s golden against the reports of ``args`` in every format."""
    sections = []
    for fmt, part in PARTS.items():
        result = run_cli(*args, "-f", fmt)
        assert result.code in (0, 1), result.err
        text = result.out if fmt == "json" and whole_json else part(result.out)
        sections.append(f"## {fmt}\n{_normalise(text, subs).rstrip()}\n")
    got = "".join(sections)
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("DTKGUARD_WRITE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8"), f"{path.name} differs"


def _image(top: Path, *pythons: str) -> Path:
    """An image root with a vendor torch and numpy under each ``usr/lib/pythonX.Y`` (or an
    ``opt/conda`` one for the second)."""
    for n, version in enumerate(pythons):
        lib = "usr/lib" if n == 0 else "opt/conda/lib"
        site = top / lib / f"python{version}" / "site-packages"
        add_dist(site, "torch", VENDOR_TORCH, files={"torch/__init__.py": "x = 1\n"})
        add_dist(site, "numpy", "1.26.4")
    return top


@pytest.mark.parametrize("command", ["check", "audit"])
def test_path_and_root_reports_are_unchanged(tmp_path, command):
    one = _image(tmp_path / "one", "3.9")
    two = _image(tmp_path / "two", "3.9", "3.12")
    subs = {str(tmp_path): "<TMP>"}
    site = str(one / "usr/lib/python3.9/site-packages")
    _compare(f"path.{command}", [command, "--path", site], subs, True)
    _compare(f"root.{command}", [command, "--root", str(one)], subs, True)
    _compare(f"root-two-pythons.{command}", [command, "--root", str(two)], subs, True)


@pytest.mark.parametrize("command", ["check", "audit"])
def test_python_pid_and_container_reports_are_unchanged(
    tmp_path, venv, sleeper, monkeypatch, command
):
    subs = {
        str(venv.path): "<VENV>",
        f"/proc/{sleeper.pid}/": "/proc/<PID>/",
        f'"pid": {sleeper.pid}': '"pid": <PID>',
        f'"value": "{sleeper.pid}"': '"value": "<PID>"',
        f"pid={sleeper.pid}": "pid=<PID>",
        f'"{HERE}"': '"<PY>"',
        f"={HERE}": "=<PY>",
    }
    _compare(f"python.{command}", [command, "--python", str(venv.python)], subs, False)
    _compare(f"pid.{command}", [command, "--pid", str(sleeper.pid)], subs, False)
    fake_runtime(tmp_path / "bin", "docker", sleeper.pid)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    _compare(f"container.{command}", [command, "--container", "vllm-0"], subs, False)
