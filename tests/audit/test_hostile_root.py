"""A root directory built to attack the reader: nothing outside it is read, nothing blocks,
nothing crashes, memory stays bounded."""

from __future__ import annotations

import base64
import builtins
import hashlib
import io
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from tests.audit.conftest import run_cli

SITE = "usr/lib/python3.10/site-packages"


def where(path: str | os.PathLike[str] | int, dir_fd: int | None = None) -> str:
    """The path a call names, a descriptor or a name relative to ``dir_fd`` included (the
    root is walked one directory descriptor at a time)."""
    if isinstance(path, int):
        return os.readlink(f"/proc/self/fd/{path}")
    path = os.fspath(path)
    if dir_fd is not None and not os.path.isabs(path):
        return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
    return path


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def dist(site: Path, name: str, version: str, files: dict[str, bytes], extra_rows=()) -> Path:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n".encode()
    (info / "METADATA").write_bytes(meta)
    (info / "INSTALLER").write_text("pip\n")
    rows = [f"{info.name}/METADATA,sha256={b64(meta)},{len(meta)}"]
    for rel, data in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        rows.append(f"{rel},sha256={b64(data)},{len(data)}")
    rows += list(extra_rows)
    rows.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return info


@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, Path]:
    """``root/`` with attacks on the reader, and ``outside/`` it must never touch."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    fifo = outside / "fifo"
    os.mkfifo(fifo)  # any reader would block forever
    (outside / "secret").write_text("secret\n")
    site = root / SITE
    site.mkdir(parents=True)
    (root / "etc").mkdir()
    # an ordinary dist with a RECORD that points outside the environment and the root
    dist(
        site,
        "evil",
        "1.0",
        {"evil/__init__.py": b"x = 1\n"},
        [
            f"../../../../etc/passwd,sha256={b64(b'root')},4",
            f"{'../' * 12}{str(fifo).lstrip('/')},sha256={b64(b'')},0",
            f"{fifo},sha256={b64(b'')},0",
            f"{outside / 'secret'},sha256={b64(b'secret')},7",
        ],
    )
    # files of a dist that are symlinks leaving the root, absolute and relative
    info = dist(site, "linky", "1.0", {"linky/__init__.py": b""})
    (site / "linky" / "abs.py").symlink_to(fifo)
    (site / "linky" / "rel.py").symlink_to("../" * 10 + str(fifo).lstrip("/"))
    (site / "linky" / "loop_a.py").symlink_to("loop_b.py")
    (site / "linky" / "loop_b.py").symlink_to("loop_a.py")
    (site / "linky" / "inner_fifo").parent.mkdir(exist_ok=True)
    os.mkfifo(site / "linky" / "inner_fifo")
    with (info / "RECORD").open("a") as f:
        for name in ("abs.py", "rel.py", "loop_a.py", "inner_fifo"):
            f.write(f"linky/{name},sha256={b64(b'')},0\n")
    # dist-info directories that are symlinks to /etc, to .., to the FIFO, and a loop
    (site / "etc-1.0.dist-info").symlink_to("/etc")
    (site / "up-1.0.dist-info").symlink_to("../../../../..")
    (site / "fifo-1.0.dist-info").symlink_to(fifo)
    (site / "loop-1.0.dist-info").symlink_to("loop-1.0.dist-info")
    (site / "outside-1.0.dist-info").symlink_to(outside)
    # the whole lib dir of another interpreter points outside
    (root / "usr/local/lib").mkdir(parents=True)
    (root / "usr/local/lib/python3.11").symlink_to(outside)
    # METADATA of 50 MB (headers first, then a huge body)
    big = site / "big-1.0.dist-info"
    big.mkdir()
    with (big / "METADATA").open("wb") as f:
        f.write(b"Metadata-Version: 2.1\nName: big\nVersion: 1.0\n\n")
        chunk = b"A" * (1 << 20)
        for _ in range(50):
            f.write(chunk)
    (big / "INSTALLER").write_text("pip\n")
    # binary garbage: METADATA and RECORD
    junk = site / "junk-1.0.dist-info"
    junk.mkdir()
    (junk / "METADATA").write_bytes(os.urandom(4096) + b"\0\xff\xfe")
    (junk / "RECORD").write_bytes(os.urandom(8192))
    garbage = site / "garbage-2.0.dist-info"
    garbage.mkdir()
    (garbage / "METADATA").write_bytes(b"Name: garbage\nVersion: 2.0\n\n")
    (garbage / "INSTALLER").write_text("pip\n")
    (garbage / "RECORD").write_bytes(b"\0\0\xff,\n" + os.urandom(20000) + b'\n"unterminated,')
    return {"root": root, "outside": outside, "fifo": fifo}


def test_hostile_root_in_a_subprocess_never_blocks(hostile):
    """A reader that opened the FIFO outside would hang; the timeout turns that into a failure."""
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo), "DTKGUARD_NO_PROGRESS": "1"}
    for fmt in ("json", "sarif", "cyclonedx"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "dtkguard",
                "audit",
                "--root",
                str(hostile["root"]),
                "--verify-files",
                "-f",
                fmt,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert proc.returncode in (0, 1), proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        json.loads(proc.stdout)


def test_nothing_outside_the_root_is_opened(hostile, mocker):
    opened: list[str] = []
    real_os_open, real_open, real_io_open = os.open, builtins.open, io.open

    def spy_os_open(path, *a, **k):
        opened.append(where(path, k.get("dir_fd")))
        return real_os_open(path, *a, **k)

    def spy_open(file, *a, **k):
        if not isinstance(file, int):
            opened.append(os.fspath(file))
        return real_open(file, *a, **k)

    def spy_io_open(file, *a, **k):
        if not isinstance(file, int):
            opened.append(os.fspath(file))
        return real_io_open(file, *a, **k)

    mocker.patch.object(os, "open", spy_os_open)
    mocker.patch.object(builtins, "open", spy_open)
    mocker.patch.object(io, "open", spy_io_open)
    listed: list[str] = []
    real_listdir = os.listdir
    mocker.patch.object(os, "listdir", lambda p=".": listed.append(where(p)) or real_listdir(p))
    result = run_cli("audit", "--root", str(hostile["root"]), "--verify-files", "-f", "json")
    assert result.code == 1, result.err
    mocker.stopall()
    outside = str(hostile["outside"])
    assert opened, "the spy saw nothing: the test would prove nothing"
    assert any(p.startswith(str(hostile["root"])) for p in opened)
    leaked = [p for p in opened + listed if os.path.abspath(p).startswith(outside)]
    assert leaked == []
    # nothing outside the root but below the test's folder either
    tmp = str(hostile["root"].parent)
    stray = [p for p in opened if p.startswith(tmp) and not p.startswith(str(hostile["root"]))]
    assert stray == []
    report = result.json()
    evil = [
        f
        for f in report["findings"]
        if f["subject"] == "evil" and f["evidence"].get("category") == "outside"
    ]
    (finding,) = evil
    assert finding["rule"] == "record-unverifiable" and finding["severity"] == "high"
    rows = {e["path"] for e in finding["evidence"]["files"]}
    assert "../../../../etc/passwd" in rows
    assert str(hostile["fifo"]) in rows
    # symlinked files resolve inside the root: there they are missing, loops are unreadable
    linky = {f["evidence"]["category"]: f for f in report["findings"] if f["subject"] == "linky"}
    assert {"missing", "modified", "unreadable"} <= set(linky)
    assert "not a regular file" in json.dumps(linky["modified"]["evidence"])
    names = {d for d in report["facts"]["sites"]}
    assert names == {"/" + SITE}
    assert any("junk-1.0.dist-info" in w for w in report["warnings"])


def test_bounded_memory_with_a_50mb_metadata(hostile):
    from dtkguard.audit.verify import verify
    from dtkguard.env.environment import from_root

    tracemalloc.start()
    env = from_root(hostile["root"])
    result = verify(env.dists, env.root)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    big = env.get("big")
    assert big is not None and big.version == "1.0"
    assert result.dists == len(env.dists) >= 4
    assert peak < 16 << 20, f"peak {peak / 1e6:.1f} MB"
