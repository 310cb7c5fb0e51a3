"""`dtkguard.util.stat_cache`: what is kept is served only for the same file stat and the same
code (the command-level attacks on each cache are in tests/env/test_scan_cache.py and
tests/guard/test_uv_watch_caches.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dtkguard.util import stat_cache


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTKGUARD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(stat_cache, "RACY_NS", 0)  # every read is settled: kept at once
    return tmp_path / "cache"


def _kept(file: Path, answer: str, code: Path, reads: list[str]) -> str:
    def read(path: str) -> str:
        reads.append(answer)
        return answer

    def check(value: object) -> str | None:
        return value if isinstance(value, str) else None

    found = stat_cache.kept("test", [str(file.parent)], [str(file)], read, check, [str(code)])
    return found[str(file)]


def test_an_answer_of_other_code_is_never_served(tmp_path: Path, cache: Path) -> None:
    """The same file, read by code whose source changed (another release, an edited checkout),
    is read again: a fix to the reading code takes effect although the file did not change."""
    record, code = tmp_path / "RECORD", tmp_path / "reader.py"
    record.write_text("rows\n")
    code.write_text("v = 1\n")
    reads: list[str] = []
    assert _kept(record, "old", code, reads) == "old"
    assert _kept(record, "new", code, reads) == "old" and reads == ["old"]  # kept
    code.write_text("v = 22\n")  # the reader's code changed
    assert _kept(record, "new", code, reads) == "new" and reads == ["old", "new"]


def test_a_changed_file_is_read_again(tmp_path: Path, cache: Path) -> None:
    record, code = tmp_path / "RECORD", tmp_path / "reader.py"
    record.write_text("rows\n")
    code.write_text("v = 1\n")
    reads: list[str] = []
    assert _kept(record, "old", code, reads) == "old"
    record.write_text("rowz\n")  # same size: the ctime and mtime move
    assert _kept(record, "new", code, reads) == "new"
