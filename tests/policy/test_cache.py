"""The compiled-policy cache never serves another file's policy, an old one, or a hostile one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dtkguard.policy.load import _cache_file
from tests.support.policies import compile_policy, load_policy

STRICT = '[policy]\nname = "strict"\n[fp8]\nweights = "deny"\n'
LOOSE = '[policy]\nname = "loose"\n[fp8]\nweights = "allow"\n'  # same length as STRICT


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DTKGUARD_CACHE_DIR", str(tmp_path / "cache"))


def _entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "policies").glob("*.json"))


def test_paths_that_flatten_alike_get_their_own_policy(tmp_path):
    # the old cache name was the path with "/" replaced by "%": these two collided
    one = tmp_path / "a%b.toml"
    (tmp_path / "a").mkdir()
    two = tmp_path / "a" / "b.toml"
    one.write_text(STRICT)
    two.write_text(LOOSE)
    assert load_policy(str(one)).name == "strict"
    assert load_policy(str(two)).name == "loose"
    assert load_policy(str(one)).name == "strict"
    assert len(_entries(tmp_path)) == 2


def test_same_size_and_mtime_rewrite_is_not_served_stale(tmp_path):
    path = tmp_path / "site.toml"
    path.write_text(STRICT)
    os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    assert load_policy(str(path)).fp8.weights == "deny"
    before = path.stat()
    path.write_text(LOOSE)  # as cp -p / rsync / tar do: same size, same mtime
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert load_policy(str(path)).fp8.weights == "allow"


def test_a_parent_in_the_extends_chain_is_validated_too(tmp_path):
    parent = tmp_path / "base.toml"
    parent.write_text(STRICT)
    child = tmp_path / "child.toml"
    child.write_text('[policy]\nname = "child"\nextends = ["base.toml"]\n')
    assert load_policy(str(child)).fp8.weights == "deny"
    st = parent.stat()
    parent.write_text(LOOSE)
    os.utime(parent, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert load_policy(str(child)).fp8.weights == "allow"


def test_an_entry_copied_from_another_path_is_a_miss(tmp_path):
    strict, loose = tmp_path / "strict.toml", tmp_path / "loose.toml"
    strict.write_text(STRICT)
    loose.write_text(LOOSE)
    load_policy(str(strict))
    load_policy(str(loose))
    # a hostile cache: the permissive entry under the strict policy's name
    Path(_cache_file(str(strict.resolve()))).write_bytes(
        Path(_cache_file(str(loose.resolve()))).read_bytes()
    )
    assert load_policy(str(strict)).fp8.weights == "deny"


HOSTILE_ENTRIES = {
    "not-json": b"{\x00garbage",
    "a-list": b"[]",
    "policy-none": None,  # filled from a real entry below
    "vendor-a-list": None,
    "deep": b"[" * 200_000 + b"]" * 200_000,
    "huge-int": b'{"tool": ' + b"9" * 5000 + b"}",
    "files-wrong-shape": None,
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_ENTRIES))
def test_corrupt_or_mistyped_entries_are_misses(tmp_path, kind):
    path = tmp_path / "p.toml"
    path.write_text(STRICT)
    load_policy(str(path))
    entry = Path(_cache_file(str(path.resolve())))
    data = json.loads(entry.read_text())
    raw = HOSTILE_ENTRIES[kind]
    if kind == "policy-none":
        data["policy"] = None
    elif kind == "vendor-a-list":
        data["policy"]["vendor"] = ["torch"]
    elif kind == "files-wrong-shape":
        data["files"] = [[str(path.resolve())]]
    entry.write_bytes(raw if raw is not None else json.dumps(data).encode())
    assert load_policy(str(path)) == compile_policy(path)


def test_a_fifo_as_cache_entry_is_a_miss_not_a_hang(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(STRICT)
    entry = Path(_cache_file(str(path.resolve())))
    entry.parent.mkdir(parents=True)
    os.mkfifo(entry)
    assert load_policy(str(path)).name == "strict"


WRITER = textwrap.dedent(
    """
    import os, sys
    path, a, b, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    for i in range(n):
        tmp = path + ".w"
        with open(tmp, "w") as fh:
            fh.write(a if i % 2 else b)
        os.replace(tmp, path)
    """
)


def test_an_edit_while_another_process_compiles_is_never_cached_as_current(tmp_path):
    """A writer process rewrites the policy while this process loads it through the cache.

    Whatever interleaving happens, once the writer stops the cache must serve what is on disk:
    an entry stamped after compiling would pair the new stamp with the old content.
    """
    path = tmp_path / "race.toml"
    for rounds in (301, 300, 151):  # odd and even: the file ends strict or loose
        path.write_text(STRICT)
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), STRICT, LOOSE, str(rounds)]
        )
        seen = set()
        while writer.poll() is None:
            seen.add(load_policy(str(path)).name)
        assert writer.wait() == 0
        assert seen <= {"strict", "loose"}
        on_disk = compile_policy(path)
        assert load_policy(str(path)) == on_disk
        assert load_policy(str(path)) == on_disk  # and from the cache


def test_every_field_of_a_compiled_policy_reads_back_from_json():
    """A field added to CompiledPolicy must survive the cache and the hook's JSON; a strict
    reader that does not know it would turn every hit into a miss and the guard blind."""
    from dtkguard.policy.compiled import CompiledPolicy
    from dtkguard.policy.locate import bundled_names

    for name in bundled_names():
        policy = load_policy(name, cache=False)
        assert CompiledPolicy.from_json(json.loads(json.dumps(policy.to_json()))) == policy
