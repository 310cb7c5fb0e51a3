from __future__ import annotations

import json
import resource
import struct
import tracemalloc

import pytest
from modelkit import safetensors_header, write_raw, write_safetensors

from dtkguard.modelscan.dtypes import family
from dtkguard.modelscan.safetensors_header import HeaderError, read_header


def test_reads_every_dtype_and_only_the_header(tmp_path):
    tensors = {
        f"t.{d}": (d, [4, 4])
        for d in (
            "F8_E4M3",
            "F8_E5M2",
            "F8_E8M0",
            "F8_E4M3FNUZ",
            "F4",
            "F6_E2M3",
            "BF16",
            "U8",
            "F8_E3M4",
            "F4_E2M1X",
        )
    }
    path = write_safetensors(tmp_path / "m.safetensors", tensors)
    header = read_header(path)
    assert set(header.dtypes) == {d for d, _ in tensors.values()}
    assert header.names == list(tensors)
    assert header.metadata == {"format": "pt"}
    assert header.bytes_read == 8 + header.header_len < path.stat().st_size
    assert family("F8_E3M4") == "fp8" and family("F4_E2M1X") == "fp4"
    assert family("F8_E8M0") == "e8m0" and family("BF16") == "other"


def test_header_length_2_63_is_refused_without_allocating(tmp_path):
    path = write_raw(tmp_path / "big.safetensors", 1 << 63, b"{}")
    tracemalloc.start()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(HeaderError, match="exceeds the cap"):
        read_header(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1_000_000
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB


def test_length_past_end_of_file(tmp_path):
    path = write_raw(tmp_path / "short.safetensors", 5000, b'{"a":1}')
    with pytest.raises(HeaderError, match="past the end"):
        read_header(path)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"not json at all!", "does not start"),
        (b"{not json}      ", "not JSON"),
        (b'{"a": NaN}      ', "non-standard|not JSON"),
        (b"{\xff\xfe}      ", "UTF-8"),
        (b"[1,2,3]         ", "does not start"),
    ],
)
def test_header_not_json(tmp_path, body, match):
    path = write_raw(tmp_path / "bad.safetensors", len(body), body, total=8 + len(body))
    with pytest.raises(HeaderError, match=match):
        read_header(path)


def test_duplicate_keys_rejected(tmp_path):
    entry = '{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}'
    body = ('{"w":' + entry + ',"w":' + entry + "}").encode()
    path = write_raw(tmp_path / "dup.safetensors", len(body), body, total=8 + len(body) + 1)
    with pytest.raises(HeaderError, match="duplicate key 'w'"):
        read_header(path)


def test_offsets_past_the_end(tmp_path):
    raw, _ = safetensors_header({"w": ("F8_E4M3", [1024])})
    path = write_raw(tmp_path / "off.safetensors", len(raw), raw, total=8 + len(raw) + 10)
    with pytest.raises(HeaderError, match="outside the 10-byte buffer"):
        read_header(path)


@pytest.mark.parametrize(
    "entry",
    [
        {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]},
        {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]},
        {"dtype": "F32", "shape": [1], "data_offsets": [0]},
        {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]},
        {"shape": [1], "data_offsets": [0, 4]},
        "F32",
    ],
)
def test_malformed_entries(tmp_path, entry):
    body = json.dumps({"w": entry}).encode()
    path = write_raw(tmp_path / "e.safetensors", len(body), body, total=8 + len(body) + 4)
    with pytest.raises(HeaderError):
        read_header(path)


def test_metadata_must_be_strings(tmp_path):
    body = json.dumps({"__metadata__": {"format": 1}}).encode()
    path = write_raw(tmp_path / "m.safetensors", len(body), body, total=8 + len(body))
    with pytest.raises(HeaderError, match="__metadata__"):
        read_header(path)


def test_truncated_file(tmp_path):
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", 100)[:5])
    with pytest.raises(HeaderError, match="truncated"):
        read_header(path)
    path.write_bytes(b"")
    with pytest.raises(HeaderError, match="truncated"):
        read_header(path)


@pytest.mark.parametrize("digits", [16, 70, 5000])
def test_integers_beyond_48_bits_are_refused_on_the_fast_int_path(tmp_path, digits):
    """The header's integers are parsed by the C int parser (the interpreter bounds the
    digits it converts) and bounded to 48 bits after: a long one is still a one-line error."""
    body = ('{"w":{"dtype":"F32","shape":[' + "9" * digits + '],"data_offsets":[0,4]}}').encode()
    path = write_raw(tmp_path / "i.safetensors", len(body), body, total=8 + len(body) + 4)
    with pytest.raises(HeaderError, match=r"non-negative integers|not usable JSON"):
        read_header(path)


def test_int_parser_falls_back_when_the_interpreter_limit_is_off(monkeypatch):
    import sys

    from dtkguard.util import text

    monkeypatch.setattr(sys, "get_int_max_str_digits", lambda: 0, raising=False)
    assert text.parse_int_checked_after() is text._parse_int
    monkeypatch.setattr(sys, "get_int_max_str_digits", lambda: 4300, raising=False)
    assert text.parse_int_checked_after() is int


def test_every_error_names_the_first_bad_tensor(tmp_path):
    good = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
    body = json.dumps(
        {"a": good, "b": {**good, "data_offsets": [0, 400]}, "c": {**good, "shape": [-1]}}
    ).encode()
    path = write_raw(tmp_path / "o.safetensors", len(body), body, total=8 + len(body) + 4)
    with pytest.raises(HeaderError, match="tensor 'c': shape and data_offsets"):
        read_header(path)  # integers are checked before offsets, as before
    body = json.dumps({"a": good, "b": {**good, "data_offsets": [0, 400]}}).encode()
    path = write_raw(tmp_path / "p.safetensors", len(body), body, total=8 + len(body) + 4)
    with pytest.raises(HeaderError, match=r"tensor 'b': data_offsets \[0, 400\] outside"):
        read_header(path)
