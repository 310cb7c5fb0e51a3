"""The usual RECORD row's short planning makes the jobs and issues the full planning makes.

Each RECORD below (the rows pip and uv write, and their hostile neighbours) is planned by
`record_jobs` twice, with the short path and without it; both must agree row for row, and
``audit --verify-files`` must report the same either way.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from dtkguard.audit import verify
from dtkguard.env.environment import from_paths
from tests.support.cli import run_in_process


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _site(tmp_path: Path, rows: list[str]) -> Path:
    site = tmp_path / "v" / "lib" / "python3.11" / "site-packages"
    info = site / "demo-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
    (info / "INSTALLER").write_text("pip\n")
    (site / "demo").mkdir()
    (site / "demo" / "a.py").write_bytes(b"a = 1\n")
    (info / "RECORD").write_text("\n".join(rows) + "\ndemo-1.0.dist-info/RECORD,,\n")
    return site


GOOD = _b64(b"a = 1\n")
ROWS = [
    f"demo/a.py,sha256={GOOD},6",  # the usual row
    f"demo/a.py,sha256={GOOD},",  # no size
    f"demo/a.py,sha256={GOOD},\u00b2",  # a digit int() refuses
    f"demo/a.py,sha256={GOOD},\u0661",  # an Arabic-Indic digit int() reads
    f"demo/a.py,SHA256={GOOD},6",  # the algorithm in capitals
    f"demo/a.py,sha256={hashlib.sha256(b'a = 1').hexdigest()},6",  # hex (nonconforming)
    f"demo/a.py,sha256={GOOD[:-1]}!,6",  # not base64
    f"demo/a.py,sha256={GOOD[:-1]}\u00e9,6",  # not ASCII
    f"demo/a.py,sha256={GOOD}x,6",  # 44 characters
    f"demo/a.py,sha512={GOOD},6",
    f"./demo/a.py,sha256={GOOD},6",
    f"demo//a.py,sha256={GOOD},6",
    f"demo/../demo/a.py,sha256={GOOD},6",
    f"/etc/passwd,sha256={GOOD},6",
    f"../../../bin/tool,sha256={GOOD},6",
    f"demo-1.0.dist-info/RECORD.jws,sha256={GOOD},6",
    f"demo/gone.py,sha256={GOOD},6",
    f'"demo/a.py",sha256={GOOD},6',  # quoted CSV
    f"demo/a.py,sha256={GOOD},6,extra",
    "demo/a.py",
    "demo/__pycache__/a.cpython-311.pyc,,",
]


def _plan(site: Path, short: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list]:
    with monkeypatch.context() as m:
        if not short:
            m.setattr(verify, "_sha256_row", lambda *a: lambda row: None)
        env = from_paths([site])
        (dist,) = env.dists
        return verify.record_jobs(dist, env.root)


@pytest.mark.parametrize("row", ROWS)
def test_each_row_is_planned_alike(tmp_path, monkeypatch, row):
    site = _site(tmp_path, [row])
    try:
        full = _plan(site, False, monkeypatch)
    except ValueError as exc:  # "²": a digit that int() refuses
        pytest.fail(f"the full planning crashed: {exc}")
    assert _plan(site, True, monkeypatch) == full


def test_the_usual_row_takes_the_short_path(tmp_path, monkeypatch):
    site = _site(tmp_path, [ROWS[0]])
    taken = []
    real = verify._sha256_row

    def counting(*args):
        job = real(*args)
        return lambda row: taken.append(job(row)) or taken[-1]

    monkeypatch.setattr(verify, "_sha256_row", counting)
    jobs, issues = _plan(site, True, monkeypatch)
    assert len(jobs) == 1 and taken[0] == jobs[0] and not issues


def test_the_cli_reports_the_same_without_the_short_path(tmp_path, monkeypatch):
    site = _site(tmp_path, ROWS)
    args = ("audit", "--path", str(site), "--verify-files", "-f", "json")
    fast = run_in_process(*args)
    monkeypatch.setattr(verify, "_sha256_row", lambda *a: lambda row: None)
    slow = run_in_process(*args)
    assert fast.code == slow.code == 1
    drop = ("created", "seconds")
    strip = lambda r: {k: v for k, v in r.json().items() if k not in drop}  # noqa: E731
    a, b = strip(fast), strip(slow)
    a["facts"]["verification"].pop("seconds"), b["facts"]["verification"].pop("seconds")
    assert a == b
    assert {f["rule"] for f in a["findings"]} >= {"file-modified", "file-missing"}
