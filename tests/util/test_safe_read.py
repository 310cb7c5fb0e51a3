"""util.safe_read and util.text: the one way dtkguard opens files it does not trust."""

from __future__ import annotations

import os

import pytest

from dtkguard.util.safe_read import NotRegularFile, TooLarge, read_capped, read_head
from dtkguard.util.text import Undecodable, decode_utf8, json_loads, position


@pytest.mark.parametrize("kind", ["fifo", "zero", "urandom", "folder"])
def test_non_regular_files_are_refused_without_blocking(tmp_path, kind):
    path = tmp_path / "x"
    if kind == "fifo":
        os.mkfifo(path)  # no writer: a blocking open would never return
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(f"/dev/{kind}")
    with pytest.raises(NotRegularFile, match="not a regular file"):
        read_capped(path, 10)
    with pytest.raises(NotRegularFile):
        read_head(path, 10)


def test_caps_count_bytes_read(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1001)
    assert read_head(path, 10) == b"x" * 10
    assert read_capped(path, 1001) == b"x" * 1001
    with pytest.raises(TooLarge, match="larger than the limit of 1000 bytes") as info:
        read_capped(path, 1000)
    assert info.value.limit == 1000
    big = tmp_path / "big"
    big.write_bytes(b"y" * (2 << 20))
    with pytest.raises(TooLarge, match="the limit of 1 MiB"):
        read_capped(big, 1 << 20, what="policy")


def test_a_final_symlink_is_refused_when_not_followed(tmp_path):
    (tmp_path / "real").write_text("ok")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert read_capped(tmp_path / "link", 10) == b"ok"
    with pytest.raises(OSError):
        read_capped(tmp_path / "link", 10, follow=False)


def test_decode_positions_point_at_the_bad_byte():
    data = b"line one\nline two caf\xe9\n"
    with pytest.raises(Undecodable) as info:
        decode_utf8(data)
    assert (info.value.line, info.value.col) == (2, 13)
    assert position("ab\ncd", 4) == (2, 2)


@pytest.mark.parametrize(
    "text", ["9" * 5000, "[" * 200_000 + "]" * 200_000, '{"a": NaN}', "-" + "1" * 65]
)
def test_json_that_would_hurt_is_a_value_error(text):
    with pytest.raises(ValueError):
        json_loads(text)
    assert json_loads('{"n": ' + "1" * 64 + "}")["n"] > 0
