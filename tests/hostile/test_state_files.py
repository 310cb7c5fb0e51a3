"""The guard's state files are input too: a baseline or an override log that is huge, deeply
nested, mistyped or not a file is a finding (`baseline-tampered`, `override-log-unreadable`),
never silence or a traceback; the override log is read whole, line by line, at any size."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.hostile.conftest import run
from tests.support.sitetree import vendor_site


def _prefix(tmp_path: Path) -> tuple[Path, Path]:
    """(prefix, its state folder) of an env tree whose site-packages holds the vendor builds."""
    prefix = tmp_path / "env"
    vendor_site(prefix / "lib" / "python3.10" / "site-packages")
    state = prefix / "dtkguard"
    state.mkdir()
    return prefix, state


def _check(prefix: Path, cache: Path) -> tuple[int, list[dict], str]:
    site = prefix / "lib" / "python3.10" / "site-packages"
    proc = run("check", "--path", str(site), "-f", "json", "--fail-on", "critical", cache=cache)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"], proc.stderr


RECORD = {"time": "2026-01-01T00:00:00Z", "user": "u", "reason": "r", "argv": [], "allowed": []}


def test_an_override_log_past_16_mib_is_read_whole(tmp_path: Path, cache: Path) -> None:
    prefix, state = _prefix(tmp_path)
    filler = json.dumps({**RECORD, "reason": "x" * 1000}) + "\n"
    with open(state / "overrides.jsonl", "w") as fh:
        fh.write(json.dumps({**RECORD, "reason": "first"}) + "\n")
        fh.write(filler * (17 * 1024))  # 17 MiB of records
        fh.write(json.dumps({**RECORD, "reason": "last one"}) + "\n")
    _, findings, _ = _check(prefix, cache)
    used = [f for f in findings if f["rule"] == "override-used"]
    assert len(used) == 17 * 1024 + 2
    assert "last one" in used[-1]["message"]


@pytest.mark.parametrize("kind", ["fifo", "overlong-line", "binary"])
def test_an_unreadable_override_log_is_a_finding(tmp_path: Path, cache: Path, kind: str) -> None:
    prefix, state = _prefix(tmp_path)
    log = state / "overrides.jsonl"
    if kind == "fifo":
        os.mkfifo(log)
    elif kind == "overlong-line":
        log.write_text(
            "{" + '"a":' * 0 + '"reason": "' + "y" * (1 << 20) + '"}\n' + json.dumps(RECORD) + "\n"
        )
    else:
        log.write_bytes(os.urandom(4096) + b"\n" + json.dumps(RECORD).encode() + b"\n")
    _, findings, _ = _check(prefix, cache)
    rules = [f["rule"] for f in findings]
    if kind == "fifo":
        assert "override-log-unreadable" in rules
    else:  # the bad line is one unreadable record, the good one after it still counts
        used = [f for f in findings if f["rule"] == "override-used"]
        assert any("unreadable override record" in f["message"] for f in used)
        assert any("u overrode the guard" in f["message"] for f in used)


def _deep(n: int) -> str:
    return "[" * n + "]" * n


BAD_BASELINES = {
    "wrong-types": json.dumps(
        {"format": "dtkguard-baseline/1", "dists": {}, "vendor": {"torch": {"name": 1}}}
    ),
    "files-not-a-table": json.dumps(
        {
            "format": "dtkguard-baseline/1",
            "dists": {},
            "vendor": {
                "torch": {
                    "name": "torch",
                    "version": "2.4.1",
                    "site": "/x",
                    "dist_info": "t.dist-info",
                    "record": {"sha256": "0", "size": "big"},
                    "files": [],
                }
            },
        }
    ),
    "dists-list": json.dumps({"format": "dtkguard-baseline/1", "dists": [], "vendor": {}}),
    "deep": '{"format": "dtkguard-baseline/1", "dists": {}, "vendor": {}, "x": '
    + _deep(100_000)
    + "}",
    "huge-int": '{"format": "dtkguard-baseline/1", "dists": {}, "vendor": {}, "x": '
    + "9" * 5000
    + "}",
    "not-utf8": b"\xff\xfe{}",
}


@pytest.mark.parametrize("kind", sorted([*BAD_BASELINES, "fifo", "huge"]))
def test_a_bad_baseline_is_baseline_tampered(tmp_path: Path, cache: Path, kind: str) -> None:
    prefix, state = _prefix(tmp_path)
    path = state / "baseline.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "huge":  # 300 MB, sparse: never read whole
        with open(path, "wb") as fh:
            fh.write(b'{"format": "dtkguard-baseline/1", "dists": {}, "vendor": {}, "x": "')
            fh.truncate(300 << 20)
    else:
        data = BAD_BASELINES[kind]
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    code, findings, _ = _check(prefix, cache)
    tampered = [f for f in findings if f["rule"] == "baseline-tampered"]
    assert tampered, findings
    assert code == 0  # high: below --fail-on critical; the run itself did not fail


@pytest.mark.parametrize("kind", ["deep", "huge", "fifo", "folder"])
def test_a_bad_guarded_list_is_empty_never_a_traceback_or_a_hang(tmp_path: Path, kind: str):
    """``guarded.json`` (which interpreter dtkpip picks when none is active): nesting 100,000
    deep was a RecursionError, a FIFO blocked dtkpip; each is now an empty list."""
    import subprocess
    import sys

    from tests.hostile.conftest import HANG

    path = tmp_path / "guarded.json"
    if kind == "deep":
        path.write_text('{"interpreters": ' + "[" * 100_000 + "]" * 100_000 + "}")
    elif kind == "huge":
        entries = {f"/v{i}/bin/python": f"/v{i}" for i in range(150_000)}
        path.write_text(json.dumps({"interpreters": entries}))
        assert path.stat().st_size > 4 << 20
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    code = "import pathlib, sys; from dtkguard.guard.registry import _load; "
    code += "print(_load(pathlib.Path(sys.argv[1])))"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=HANG,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout == "{}\n", proc.stderr
