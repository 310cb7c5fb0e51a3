"""Empty targets do not pass a gate; metadata cannot inject into reports; size limits say so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.hostile.conftest import one_error_line, run
from tests.support.rss import measure
from tests.support.sitetree import add_dist

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def empty(tmp_path: Path) -> dict[str, list[str]]:
    """A site folder, an image root and an interpreter with no distribution at all."""
    site = tmp_path / "typo-site"
    site.mkdir()
    root = tmp_path / "root"
    (root / "usr/lib/python3.10/site-packages").mkdir(parents=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return {
        "path": ["--path", str(site)],
        "root": ["--root", str(root)],
        "python": ["--python", str(venv / "bin" / "python")],
    }


@pytest.mark.parametrize("command", ["check", "audit"])
@pytest.mark.parametrize("kind", ["path", "root", "python"])
def test_nothing_to_check_is_exit_3_unless_allowed(empty, cache, command, kind):
    proc = run(command, *empty[kind], cache=cache)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert one_error_line(proc).startswith("nothing to check at ")
    allowed = run(command, *empty[kind], "--allow-empty", cache=cache)
    assert allowed.returncode == 0, allowed.stderr


def test_the_docker_gate_stops_on_an_empty_root(empty, cache):
    root = empty["root"][1]
    env = {"DTKGUARD_ROOT": root, "DTKGUARD": f"{sys.executable} -m dtkguard"}
    proc = subprocess.run(
        ["sh", str(REPO / "plugins/docker/gate.sh")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "DTKGUARD_CACHE_DIR": str(cache), **env},
    )
    assert proc.returncode == 3, proc.stderr
    assert "nothing to check at" in proc.stderr


HOSTILE_VERSION = "2.4.1\x1b]0;owned\x07\x1b[31m<img src=x onerror=alert(1)>]]>\x00\x9b"


@pytest.fixture
def injected(tmp_path: Path) -> Path:
    """torch replaced by a build whose version carries ESC, BEL, NUL, markup and CDATA ends."""
    site = tmp_path / "site"
    info = add_dist(site, "torch", "2.4.1")
    meta = info / "METADATA"
    hostile = b"Version: " + HOSTILE_VERSION.encode()
    meta.write_bytes(meta.read_bytes().replace(b"Version: 2.4.1", hostile))
    add_dist(site, "nvidia-cudnn-cu12", "9.1.0.70")
    return site


def test_plain_table_under_no_color_has_no_control_characters(injected, cache):
    proc = run("check", "--path", str(injected), cache=cache)
    assert proc.returncode == 1
    assert "\\x1b" in proc.stdout  # shown, escaped
    assert not any(ch in proc.stdout for ch in "\x1b\x07\x00\x9b")


def test_junit_is_well_formed_xml(injected, cache):
    proc = run("check", "--path", str(injected), "-f", "junit", cache=cache)
    assert proc.returncode == 1
    root = ET.fromstring(proc.stdout.encode())
    assert root.tag == "testsuites"
    assert any("\\x1b" in (c.get("message") or "") for c in root.iter("failure"))


def test_markdown_has_no_raw_html(injected, cache):
    proc = run("check", "--path", str(injected), "-f", "markdown", cache=cache)
    assert proc.returncode == 1
    assert "<img" not in proc.stdout and "&lt;img" in proc.stdout
    assert "\x1b" not in proc.stdout


def test_json_keeps_the_text_exactly(injected, cache):
    proc = run("check", "--path", str(injected), "-f", "json", cache=cache)
    findings = json.loads(proc.stdout)["findings"]
    assert any("onerror" in f["message"] for f in findings)  # json escapes, nothing lost


def test_limits_name_the_limit(tmp_path, cache, injected):
    policy = tmp_path / "big.toml"
    policy.write_text("[policy]\n" + "# padding\n" * 30_000)
    proc = run("check", "--path", str(injected), "--policy", str(policy), cache=cache)
    assert proc.returncode == 2
    assert "policy larger than the limit of 256 KiB" in one_error_line(proc)
    info = next(injected.glob("nvidia_cudnn*.dist-info"))
    with open(info / "RECORD", "a") as fh:  # 17 MiB of rows: past the 16 MiB limit
        row = "nvidia/x.py,sha256=" + "A" * 43 + ",1\n"
        fh.write(row * (17 * (1 << 20) // len(row)))
    proc = run("audit", "--path", str(injected), "--verify-files", "-f", "json", cache=cache)
    assert proc.returncode == 1, proc.stderr
    texts = json.dumps(json.loads(proc.stdout)["findings"])
    assert "RECORD larger than the limit of 16 MiB: not verified" in texts
    assert "malformed" not in texts


def test_a_pickle_holding_a_250_mb_string_stays_under_64_mib(tmp_path):
    """A legacy checkpoint whose first pickle is one 250 MB BINUNICODE: it peaked at 545 MB
    (read, then decoded); the string is refused by its length, never read."""
    import struct

    model = tmp_path / "pytorch_model.bin"
    size = 250_000_000
    with open(model, "wb") as fh:
        fh.write(b"\x80\x02X" + struct.pack("<I", size))
        chunk = b"a" * (1 << 20)
        for _ in range(size >> 20):
            fh.write(chunk)
        fh.write(b"a" * (size % (1 << 20)) + b".")
    code = (
        "import sys\n"
        "from dtkguard.modelscan.pickle_globals import PickleScanError, read_globals\n"
        "try:\n read_globals(sys.argv[1])\nexcept PickleScanError as e:\n print(e)\n"
    )
    # measured by a launcher: a child's own ru_maxrss starts at the size of the process that
    # forked it (a long-running test worker is itself past 256 MiB)
    run = measure(
        [sys.executable, "-c", code, model],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert run.returncode == 0, run.output
    assert run.peak_rss < 64 << 20, f"peak RSS {run.peak_rss >> 20} MiB"
    assert "more than the limit of 16 MiB: not scanned" in run.output


def test_a_pickle_of_millions_of_opcodes_stops_at_the_limit(tmp_path, cache):
    """1-byte MEMOIZE opcodes: walked without a cap, time and the memo table grow with size."""
    model = tmp_path / "pytorch_model.bin"
    model.write_bytes(b"\x80\x02N" + b"\x94" * 1_200_000 + b".")
    proc = run("scan-model", str(model), "-f", "json", cache=cache)
    assert proc.returncode == 2
    assert "more than the limit of 1,000,000 pickle opcodes" in one_error_line(proc)
