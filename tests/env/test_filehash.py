"""Hashing an installed file: the fast paths give what the general ones give."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from dtkguard.env import filehash
from dtkguard.env.filehash import CHUNK, SMALL, hash_file

SIZES = [0, 1, 2047, 4096, SMALL - 1, SMALL, SMALL + 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7]


@pytest.mark.parametrize("size", SIZES)
def test_hash_file_every_size(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    path = tmp_path / "f"
    path.write_bytes(data)
    status, digest, total, head = hash_file(str(path), "sha256", False)
    assert (status, digest, total, head) == ("ok", hashlib.sha256(data).digest(), size, b"")


def test_hash_file_reuses_one_buffer_and_keeps_the_shebang(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"\xff" * (CHUNK + 5))
    script = b"#!/usr/bin/python\nprint(1)\n"
    (tmp_path / "s").write_bytes(script)
    hash_file(str(tmp_path / "big"), "sha256", False)
    first = filehash._buffer()
    status, digest, _, head = hash_file(str(tmp_path / "s"), "sha256", False)
    assert filehash._buffer() is first
    assert (status, digest, head) == ("ok", hashlib.sha256(script).digest(), script)
    (tmp_path / "t").write_bytes(b"#")  # one byte: the stale "!" left in the buffer is no shebang
    assert hash_file(str(tmp_path / "t"), "sha256", False)[3] == b""


@pytest.mark.parametrize("told", [0, 10, 5000, SMALL - 1])
def test_a_small_file_fstat_misjudged_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, told: int
) -> None:
    """A file that grew or shrank after fstat: the small-file read goes on to its end."""
    data = os.urandom(5000 + CHUNK)
    (tmp_path / "f").write_bytes(data)
    real = os.fstat

    def fstat(fd: int) -> os.stat_result:
        st = real(fd)
        return os.stat_result((*st[:6], told, *st[7:10]))

    monkeypatch.setattr(filehash.os, "fstat", fstat)
    status, digest, total, _ = hash_file(str(tmp_path / "f"), "sha256", False)
    assert (status, digest, total) == ("ok", hashlib.sha256(data).digest(), len(data))


def test_hash_file_other_algorithms(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"data")
    for algo in ("sha384", "sha512", "blake2b", "sha3_256"):
        assert hash_file(str(tmp_path / "f"), algo, False)[1] == hashlib.new(algo, b"data").digest()


def test_hash_file_refuses_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p")
    assert hash_file(str(tmp_path / "p"), "sha256", False)[0] == "notfile"
