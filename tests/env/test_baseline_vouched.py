"""The store's baseline is vouched for by its manifest; the answer is kept only while neither
file changed (the guard replaces both whole: another inode)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from dtkguard.env import baseline


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _write(folder: Path, data: bytes, vouched: bytes) -> Path:
    path = folder / "baseline.json"
    _replace(path, data)
    digest = hashlib.sha256(vouched).hexdigest()
    listed = json.dumps({"files": {str(path): {"sha256": digest}}}).encode()
    _replace(folder / "manifest.json", listed)
    return path


def test_kept_while_unchanged_and_asked_again_after_any_change(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": 1}', b'{"a": 1}')
    assert baseline._vouched(path) == b'{"a": 1}'
    assert baseline._vouched(path) == b'{"a": 1}'
    _replace(path, b'{"a": 2}')  # bytes the manifest does not vouch for, the same size
    assert baseline._vouched(path) is None
    _write(tmp_path, b'{"a": 3}', b'{"a": 3}')  # both replaced, the manifest vouching again
    assert baseline._vouched(path) == b'{"a": 3}'
    _write(tmp_path, b'{"a": 3}', b'{"a": 4}')  # only the manifest changed
    assert baseline._vouched(path) is None
    _write(tmp_path, b'{"a": 5}', b'{"a": 5}')
    assert baseline._vouched(path) == b'{"a": 5}'
    (tmp_path / "manifest.json").unlink()
    assert baseline._vouched(path) is None
