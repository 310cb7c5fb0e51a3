"""The compact-header fast path accepts only what the strict parse accepts, with its result.

Every case runs `parse_header` both ways (``fast=True``, the reader's path, and ``fast=False``,
the strict parse alone) and asserts the same header or the same one-line error; the writers'
own headers must take the fast path (else it is dead code and the speed is gone).
"""

from __future__ import annotations

import json
import random

import pytest
from modelkit import safetensors_header, write_safetensors

from dtkguard.modelscan import compact_json
from dtkguard.modelscan.safetensors_header import MAX_INT, HeaderError, parse_header

GOOD = {
    "model.layers.0.mlp.experts.1.down_proj.weight": ("F8_E4M3", [256, 128]),
    "model.layers.0.mlp.experts.1.down_proj.weight_scale_inv": ("F32", [2, 1]),
    "model.layers.0.self_attn.k_scale": ("F32", []),
    "lm_head.weight": ("BF16", [64, 256]),
}


def _outcome(raw: bytes, size: int, fast: bool) -> object:
    try:
        header = parse_header("m.safetensors", raw, size, fast=fast)
    except HeaderError as exc:
        return ("error", str(exc))
    return (header.names, header.dtypes, header.metadata, header.header_len)


def _same(raw: bytes, buffer_len: int) -> object:
    size = 8 + len(raw) + buffer_len
    fast, full = _outcome(raw, size, True), _outcome(raw, size, False)
    assert fast == full, raw[:300]
    return fast


def _vouched(raw: bytes, buffer_len: int) -> bool:
    from dtkguard.modelscan.safetensors_header import _strict_decoder

    text = raw.decode("utf-8")
    return (
        compact_json.header_tensors(raw, text, buffer_len, _strict_decoder(), MAX_INT) is not None
    )


@pytest.mark.parametrize("metadata", [None, {"format": "pt"}, {}, {"k": 'v "quoted" \\ \u00e9'}])
def test_the_writers_headers_take_the_fast_path(tmp_path, metadata):
    raw, buffer_len = safetensors_header(GOOD, metadata)
    assert _vouched(raw, buffer_len)
    assert _same(raw, buffer_len)[0] == list(GOOD)


def test_the_rust_writers_header_takes_the_fast_path(tmp_path):
    """safetensors' own writer (``save_file``): the header every checkpoint on the Hub has."""
    path = write_safetensors(tmp_path / "w.safetensors", GOOD, {"format": "pt"})
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    raw = data[8 : 8 + n]
    assert _vouched(raw, len(data) - 8 - n)
    names, dtypes, meta, _ = _same(raw, len(data) - 8 - n)
    assert sorted(names) == sorted(GOOD) and meta == {"format": "pt"}
    assert dict(zip(names, dtypes, strict=True)) == {k: d for k, (d, _) in GOOD.items()}


def _entry(name: str, body: str) -> str:
    return f'"{name}":{body}'


E = '{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}'
#: headers the fast path must refuse (the strict parse decides: some are valid JSON it accepts
#: its slower way, some are errors), each next to a valid neighbour
HOSTILE = {
    "duplicate name": '{"a":' + E + ',"a":' + E + "}",
    "metadata twice": '{"__metadata__":{},"__metadata__":{}}',
    "metadata as a tensor": '{"__metadata__":' + E + "}",
    "metadata later": '{"a":' + E + ',"__metadata__":{"f":"pt"}}',
    "metadata duplicate key": '{"__metadata__":{"f":"a","f":"b"},"a":' + E + "}",
    "metadata non-string": '{"__metadata__":{"f":1},"a":' + E + "}",
    "metadata not an object": '{"__metadata__":"pt","a":' + E + "}",
    "leading zero": '{"a":{"dtype":"F32","shape":[02],"data_offsets":[0,16]}}',
    "leading zero offset": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[00,16]}}',
    "negative": '{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,16]}}',
    "minus zero": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[-0,16]}}',
    "float": '{"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,16]}}',
    "exponent": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,1e1]}}',
    "bool": '{"a":{"dtype":"F32","shape":[true],"data_offsets":[0,16]}}',
    "null": '{"a":{"dtype":"F32","shape":[null],"data_offsets":[0,16]}}',
    "NaN": '{"a":{"dtype":"F32","shape":[NaN],"data_offsets":[0,16]}}',
    "nested shape": '{"a":{"dtype":"F32","shape":[[2]],"data_offsets":[0,16]}}',
    "empty element": '{"a":{"dtype":"F32","shape":[2,,2],"data_offsets":[0,16]}}',
    "trailing comma": '{"a":{"dtype":"F32","shape":[2,],"data_offsets":[0,16]}}',
    "three offsets": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,16]}}',
    "one offset": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[16]}}',
    "offsets shared across entries": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,1,2]},'
    '"b":{"dtype":"F32","shape":[2],"data_offsets":[3]}}',
    "digit before the bracket": '{"a":{"dtype":"F32","shape":[2],"data_offsets":5[0,16]}}',
    "digit after the brace": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}5,"b":'
    + E
    + "}",
    "end before begin": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[16,0]}}',
    "past the buffer": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,17]}}',
    "49-bit integer": '{"a":{"dtype":"F32","shape":[281474976710656],"data_offsets":[0,16]}}',
    "48-bit integer": '{"a":{"dtype":"F32","shape":[281474976710655],"data_offsets":[0,16]}}',
    "huge integer": '{"a":{"dtype":"F32","shape":[' + "9" * 5000 + '],"data_offsets":[0,16]}}',
    "empty dtype": '{"a":{"dtype":"","shape":[2],"data_offsets":[0,16]}}',
    "dtype not a string": '{"a":{"dtype":8,"shape":[2],"data_offsets":[0,16]}}',
    "key order": '{"a":{"shape":[2],"dtype":"F32","data_offsets":[0,16]}}',
    "extra key": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16],"x":1}}',
    "missing key": '{"a":{"dtype":"F32","data_offsets":[0,16]}}',
    "spaces": '{"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}',
    "space in shape": '{"a":{"dtype":"F32","shape":[ 2 ],"data_offsets":[0,16]}}',
    "space in offsets": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0, 16]}}',
    "newline padding": '{"a":' + E + "}\n\n",
    "tab in a name": '{"a\tb":' + E + "}",
    "newline in a name": '{"a\nb":' + E + "}",
    "escape in a name": '{"a\\u0041":' + E + ',"aA":' + E + "}",
    "escaped quote in a name": '{"a\\"":' + E + "}",
    "quote pieces shifted": '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]},"b":{"dtype"'
    ':"F32","shape":[2],"data_offsets":[0,16]}',
    "unclosed": '{"a":' + E,
    "trailing garbage": '{"a":' + E + "}x",
    "two objects": '{"a":' + E + '}{"b":' + E + "}",
    "no tensors": '{"__metadata__":{"f":"pt"}}',
    "empty": "{}",
    "non-ASCII name": '{"\u00e9t\u00e9":' + E + "}",
    "empty name": '{"":' + E + "}",
    "entry not an object": '{"a":"F32"}',
    "top-level list": '{"a":[' + E + "]}",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_headers_get_the_strict_answer(case):
    raw = HOSTILE[case].encode()
    _same(raw, 16)


@pytest.mark.parametrize(
    "case",
    ["duplicate name", "leading zero", "past the buffer", "digit before the bracket", "spaces"],
)
def test_the_fast_path_refuses_what_it_cannot_vouch_for(case):
    """A text the strict parse rejects, or reads its own way, is never vouched for."""
    assert not _vouched(HOSTILE[case].encode(), 16)


def test_valid_headers_the_fast_path_leaves_to_the_strict_parse_still_read():
    for case in ("spaces", "key order", "extra key", "48-bit integer", "non-ASCII name"):
        got = _same(HOSTILE[case].encode(), 16)
        assert got[0] == ["a"] or case == "non-ASCII name", (case, got)


def test_mutated_headers_get_the_strict_answer():
    """Seeded mutations of a writer's header: every byte inserted, dropped or swapped."""
    raw, buffer_len = safetensors_header(GOOD, {"format": "pt"})
    rng = random.Random(30)
    alphabet = b'{}[],:"\\ 0123456789-.eE\n\tFa_'
    vouched = 0
    for _ in range(3000):
        data = bytearray(raw.rstrip(b" "))
        for _ in range(rng.choice((1, 1, 2, 3))):
            at = rng.randrange(len(data))
            op = rng.randrange(3)
            if op == 0:
                data.insert(at, rng.choice(alphabet))
            elif op == 1:
                del data[at]
            else:
                data[at] = rng.choice(alphabet)
        if not data.startswith(b"{"):
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        result = _same(bytes(data), buffer_len)
        vouched += _vouched(bytes(data), buffer_len)
        assert result[0] != "error" or not _vouched(bytes(data), buffer_len)
    assert vouched > 100  # mutated digits, names and dtypes that stay valid take the fast path


def test_large_headers_agree(tmp_path):
    """A 2,000-tensor header (scalars, ranks 1 to 4) and its one-tensor-off neighbours."""
    rng = random.Random(4)
    tensors = {
        f"model.layers.{i // 8}.t{i}.{rng.choice(['weight', 'weight_scale', 'k_scale'])}": (
            rng.choice(["F8_E4M3", "BF16", "F32", "U8"]),
            [rng.randint(0, 9) for _ in range(rng.randint(0, 4))],
        )
        for i in range(2000)
    }
    raw, buffer_len = safetensors_header(tensors)
    assert _vouched(raw, buffer_len)
    assert _same(raw, buffer_len)[0] == list(tensors)
    assert not _vouched(raw, buffer_len - 1) or buffer_len == 0
    _same(raw, buffer_len - 1)
    text = raw.decode()
    last = text.rindex("data_offsets")
    _same(text[: last + 15].replace("[", "[0", 1).encode() + text[last + 15 :].encode(), 0)
    _same(json.dumps(json.loads(text), indent=1).encode(), buffer_len)
