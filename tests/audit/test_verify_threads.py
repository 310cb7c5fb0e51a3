"""The hashing threads of `verify`: every batch comes back once, and a worker's error reaches
the caller (not a hang, not a silently short result)."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from dtkguard.audit.verify import _on_threads


def _files(tmp_path: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        path = tmp_path / f"f{i}.bin"
        path.write_bytes(bytes([i % 256]) * (i * 997 + 1))
        out.append(path)
    return out


@pytest.mark.parametrize("workers", [2, 3, 8])
@pytest.mark.parametrize("order", [None, [7, 0, 6, 1, 5, 2, 4, 3]])
def test_every_batch_comes_back_once_with_its_digests(
    tmp_path: Path, workers: int, order: list[int] | None
) -> None:
    """In batch order, or in an order that even workers take from its front, odd from its back."""
    files = _files(tmp_path, 30)
    batches = [[(str(p), "sha256", "") for p in files[i : i + 4]] for i in range(0, 30, 4)]
    got = dict(_on_threads(batches, workers, order))
    assert sorted(got) == list(range(len(batches)))
    for k, batch in enumerate(batches):
        wanted = [hashlib.sha256(Path(host).read_bytes()).digest() for host, _, _ in batch]
        assert [digest for _, digest, _, _ in got[k]] == wanted
    assert not [t for t in threading.enumerate() if t.name.startswith("dtkguard-hash-")]


def test_a_workers_error_is_raised_after_the_others_stop(tmp_path: Path) -> None:
    files = _files(tmp_path, 12)
    batches = [[(str(p), "sha256", "")] for p in files]
    batches[5] = [(str(files[5]), "no-such-hash", "")]  # hashlib raises ValueError
    with pytest.raises(ValueError):
        list(_on_threads(batches, 2))
    assert not [t for t in threading.enumerate() if t.name.startswith("dtkguard-hash-")]


def test_the_caller_stopping_early_stops_the_threads(tmp_path: Path) -> None:
    files = _files(tmp_path, 20)
    batches = [[(str(p), "sha256", "")] for p in files]
    results = _on_threads(batches, 2)
    next(results)
    results.close()  # the caller's judge raised: the generator is closed
    assert not [t for t in threading.enumerate() if t.name.startswith("dtkguard-hash-")]
