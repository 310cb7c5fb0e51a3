"""RECORD rows, digests and wheel layout (`dtkguard.records`): the fast paths give what the
standard library's general ones give."""

from __future__ import annotations

import base64
import csv
import hashlib

import pytest

from dtkguard import records
from dtkguard.records import decode_digest, encode_digest, hash_field, rows_of

LINES = [
    "pkg/__init__.py,sha256=abc,12",
    "pkg/a b.py,,",
    "../../bin/tool,sha256=xyz,100",
    "pkg/x.py,sha256=abc,12,extra",
    "plain",
    ",,",
    '"pkg/with,comma.py",sha256=abc,3',
    " spaced , x ,1",
]


def test_rows_of_matches_csv_line_by_line() -> None:
    got = list(rows_of("\n".join(LINES) + "\n\n"))
    assert got == [next(csv.reader([line])) for line in LINES]


def test_rows_of_drops_nul_and_marks_a_line_that_is_not_csv() -> None:
    assert list(rows_of('a\0.py,,\n"x"y"z,,\n')) == [["a.py", "", ""], ['xy"z', "", ""]]
    assert list(rows_of('"a,b\n')) == [["a,b"]]
    assert records.paths_of(',,\npkg/a.py,sha256=x,1\n\n"q,r.py",,\n') == ["pkg/a.py", "q,r.py"]


def test_decode_digest_as_urlsafe_b64decode() -> None:
    raw = bytes(range(200, 232))
    value = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    assert "-" in value or "_" in value
    assert decode_digest("sha256", value) == (raw, False)
    assert decode_digest("sha256", raw.hex()) == (raw, True)
    assert decode_digest("sha256", "é" * 43) is None
    assert decode_digest("sha256", "abc") is None


def test_encode_digest_as_urlsafe_b64encode_without_padding() -> None:
    for raw in (b"", b"\xfb\xff", bytes(range(200, 232)), hashlib.sha512(b"x").digest()):
        assert encode_digest(raw) == base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        assert decode_digest("sha256", encode_digest(raw)) in (None, (raw, False))
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"data").digest()).rstrip(b"=")
    assert hash_field(b"data") == "sha256=" + digest.decode()


def test_a_written_record_reads_back() -> None:
    files = [("pkg/a.py", b"a = 1\n"), ("pkg-1.0.dist-info/METADATA", b"Name: pkg\n")]
    text = records.record_bytes("pkg-1.0.dist-info", files).decode()
    assert text.endswith("\npkg-1.0.dist-info/RECORD,,\n")
    rows = list(rows_of(text))
    assert [r[0] for r in rows] == [*(arc for arc, _ in files), "pkg-1.0.dist-info/RECORD"]
    for (_, data), (_, field, size) in zip(files, rows[:-1], strict=True):
        assert decode_digest("sha256", field[7:]) == (hashlib.sha256(data).digest(), False)
        assert int(size) == len(data)


def test_dist_info_names_and_members() -> None:
    assert records.split_dist_info("torch-2.4.1+das.dtk25041.dist-info") == (
        "torch",
        "2.4.1+das.dtk25041",
    )
    assert records.split_dist_info("odd.dist-info") == ("odd", "")
    assert records.split_dist_info("torch-2.4.1.egg-info") is None
    assert records.is_info_member("a-1.dist-info/RECORD", "RECORD")
    assert not records.is_info_member("x/a-1.dist-info/RECORD", "RECORD")
    assert not records.is_info_member("a-1.dist-info/RECORD.jws", "RECORD")
    one = ["a/__init__.py", "a-1.dist-info/RECORD", "a-1.dist-info/WHEEL"]
    assert records.info_member(one, "RECORD") == "a-1.dist-info/RECORD"
    assert records.info_member([*one, "b-1.dist-info/RECORD"], "RECORD") is None
    assert records.info_member(one, "METADATA") is None


#: (RECORD text, its paths, its (path, hash field) rows with a hash and a size)
HOSTILE = {
    "5000-digit size": (
        "native/_c.so,sha256=AAAA," + "9" * 5000 + "\n",
        ["native/_c.so"],
        {("native/_c.so", "sha256=AAAA")},
    ),
    "superscript size": (
        "demo/a.py,sha256=AAAA,\u00b2\n",
        ["demo/a.py"],
        {("demo/a.py", "sha256=AAAA")},
    ),
    "quotes": (
        '"demo/a,b.py",sha256=AAAA,6\n"demo/c.py",,\n',
        ["demo/a,b.py", "demo/c.py"],
        {("demo/a,b.py", "sha256=AAAA")},
    ),
    "NUL": (
        "demo/a\0.py,sha256=AAAA,6\n\0\0\xff,\n",
        ["demo/a.py", "\xff"],
        {("demo/a.py", "sha256=AAAA")},
    ),
    "unterminated quote": ('x.py,,\n"unterminated,\n', ["x.py", "unterminated,"], set()),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_every_reader_reads_hostile_rows_as_check_does(case: str) -> None:
    """lock --from-env, restore's repacking and its plan, dtkuv's effects and the hook read
    RECORD through `records`: the paths check and audit see, hash fields as written."""
    from dtkguard.lock.build import _record_entries
    from dtkguard.recover.repack import _record_rows

    text, paths, hashed = HOSTILE[case]
    assert records.paths_of(text) == paths
    assert [p for p, _ in _record_rows(text)] == paths
    assert _record_entries(text) == hashed


@pytest.mark.parametrize(
    "text",
    [
        "\n".join(LINES[:5]) + "\n",  # no quote: the first-field fast path
        "\n".join(LINES) + "\n",  # a quoted row: csv's path
        "a,b\n\n   \n ,x\n,y\nz\r\nq\0r,1\n",
        "",
    ],
    ids=["plain", "quoted", "blank-and-empty-first-fields", "empty"],
)
def test_paths_of_is_rows_of_first_fields_and_its_memo_hands_out_copies(text: str) -> None:
    want = [row[0] for row in rows_of(text) if row and row[0]]
    records._PATHS.clear()
    first = records.paths_of(text)
    assert first == want
    first.append("changed by a caller")
    assert records.paths_of(text) == want  # the remembered paths are not the caller's list
    assert records.paths_of(text + "extra,,\n") == [*want, "extra"]  # other bytes: parsed again
