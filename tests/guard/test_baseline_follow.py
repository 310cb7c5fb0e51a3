"""The baseline follows a dtkpip or dtkuv change without encoding or comparing its vendor
builds again when the change touched none of them (issue 30), and still compares, refreshes
and quiets the tripwire when it did; `load` parses a baseline once per process and never
serves the data of other bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded
from tests.guard.test_baseline import check, import_torch
from tests.support.venvs import hermetic_env

pytestmark = pytest.mark.wheel_cache


def _lines(path: Path) -> dict[str, str]:
    """{top-level key: its line} of a baseline file (one line per table)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:-1]:
        key, _, _ = line.partition(": ")
        out[json.loads(key)] = line.rstrip(",")
    return out


@pytest.mark.parametrize("tool", ["dtkpip", "dtkuv"])
def test_an_unrelated_install_moves_the_dists_and_keeps_the_vendor_table(
    fresh: Guarded, tool: str, tmp_path: Path
) -> None:
    g = fresh
    before = _lines(g.store.baseline)
    if tool == "dtkpip":
        proc = g.dtkpip("install", *g.index_args, "accelerate==1.6.0")
    else:
        env = hermetic_env(UV_CACHE_DIR=str(tmp_path / "uv-cache"))
        args = ["uv", "--python", str(g.venv.python), "pip", "install", *g.index_args]
        proc = g.dtkguard(*args, "accelerate==1.6.0", env=env)
    assert proc.returncode == 0, proc.stderr
    after = _lines(g.store.baseline)
    assert after["vendor"] == before["vendor"]  # the same text: not encoded again
    assert json.loads(after["dists"].partition(": ")[2])["accelerate"]["version"] == "1.6.0"
    assert "guard_install" in after and "accelerate" not in after["guard_install"]
    proc = check(g)  # the manifest vouches for the new text; nothing reported
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert import_torch(g).stderr == ""


def test_a_reinstall_of_the_vendor_build_by_dtkpip_refreshes_the_tripwire(
    fresh: Guarded, vendor_wheelhouse: Path
) -> None:
    """The same build reinstalled (same version: the transaction changes no version) touches
    the vendor build: the baseline compares it and takes in its new stat, so the tripwire is
    quiet after it (it would warn of the new RECORD otherwise)."""
    g = fresh
    wheel = vendor_wheelhouse / f"torch-{TORCH}-py3-none-any.whl"
    proc = g.dtkpip("install", "--no-index", "--no-deps", "--force-reinstall", str(wheel))
    assert proc.returncode == 0, proc.stderr
    imported = import_torch(g)
    assert imported.returncode == 0 and imported.stderr == "", imported.stderr
    assert check(g).returncode == 0


def test_load_parses_once_and_never_serves_other_bytes(fresh: Guarded, tmp_path: Path) -> None:
    from dtkguard.env.baseline import load
    from dtkguard.errors import InputError

    text = fresh.store.baseline.read_text(encoding="utf-8")
    path = tmp_path / "baseline.json"
    path.write_text(text, encoding="utf-8")
    first = load(path)
    assert first is not None and load(path) is first  # the same bytes: parsed once
    copy = tmp_path / "copy.json"
    copy.write_text(text, encoding="utf-8")
    assert load(copy) is first  # by content, not by name
    key = next(iter(first["vendor"]["torch"]["files"]))
    size = first["vendor"]["torch"]["files"][key]["size"]
    field = f'"size": {size}'
    assert field in text
    path.write_text(text.replace(field, f'"size": {size + 1}', 1), encoding="utf-8")
    other = load(path)  # other bytes: parsed again
    assert other is not None and other != first
    path.write_text(text.replace(field, '"size": "big"', 1), encoding="utf-8")
    with pytest.raises(InputError, match="not a int"):
        load(path)
    path.write_text(text, encoding="utf-8")
    again = load(path)
    assert again == first


def test_the_dists_line_alone_only_for_bytes_the_manifest_vouches_for(
    fresh: Guarded, tmp_path: Path
) -> None:
    """`load_dists` reads the store's baseline by its ``dists`` line; a copy no manifest
    vouches for, or a store baseline whose bytes changed, is read (and refused) whole."""
    from dtkguard.env.baseline import load, load_dists
    from dtkguard.errors import InputError

    stored = fresh.store.baseline
    data = load(stored)
    assert data is not None and load_dists(stored) == data["dists"]
    text = stored.read_text(encoding="utf-8")
    copy = tmp_path / "baseline.json"
    copy.write_text(text.replace('"format": "dtkguard-baseline/1"', '"format": "other"'))
    with pytest.raises(InputError, match="format"):
        load_dists(copy)  # no manifest: the whole file, refused by its format
    original = stored.read_bytes()
    try:
        stored.write_text(text.replace('"size": ', '"size": "x", "y": ', 1), encoding="utf-8")
        with pytest.raises(InputError):
            load_dists(stored)  # the manifest no longer vouches: validated whole, refused
    finally:
        stored.write_bytes(original)
    assert load_dists(stored) == data["dists"]


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ('{\n"a": 1,\n"b": {"x": [1]}\n}\n', ["a", "b"]),
        ('{\n"b": 1,\n"a": 2\n}\n', []),  # not sorted: not what dumps writes
        ('{\n"a": 1,\n"a": 2\n}\n', []),  # a key twice (json would keep the last one)
        ('{\n  "a": 1\n}\n', []),  # indented
        ('{\n"a": 1, "b": 2\n}\n', ["a"]),  # a line of two tables: its value is no JSON
        ('{"a": 1}', []),
        ("{\n" + "[" * 100_000 + "\n}\n", []),  # nested past the recursion limit
    ],
)
def test_table_lines_takes_only_the_layout_dumps_writes(text: str, keys: list[str]) -> None:
    from dtkguard.env.baseline import table_lines

    assert sorted(table_lines(text)) == keys


def test_dumps_keeps_a_line_only_where_the_text_has_one_per_table() -> None:
    from dtkguard.guard.baseline import dumps

    data = {"a": 1, "b": {"x": 2}}
    assert dumps({**data, "a": 3}, (data, '{\n"a": 1,\n"b": {"x":   2}\n}\n')) == (
        '{\n"a": 3,\n"b": {"x":   2}\n}\n'  # b is the same object: its line is kept
    )
    one_line = '{\n"a": 1, "b": {"x": 2}\n}\n'
    assert dumps(data, (data, one_line)) == '{\n"a": 1,\n"b": {"x": 2}\n}\n'


def _dtkuv_install(g: Guarded, tmp_path: Path, *what: str):  # type: ignore[no-untyped-def]
    env = hermetic_env(UV_CACHE_DIR=str(tmp_path / "uv-cache"))
    args = ["uv", "--python", str(g.venv.python), "pip", "install", *g.index_args]
    return g.dtkguard(*args, *what, env=env)


def test_the_lines_dtkuv_writes_are_what_encoding_the_baseline_whole_writes(
    fresh: Guarded, tmp_path: Path
) -> None:
    """The follow of an unrelated change splices the new ``dists`` line into the bytes it
    read: the file is byte for byte what `dumps` of the whole baseline gives, and the
    manifest holds its digest."""
    import hashlib

    from dtkguard.env.baseline import load
    from dtkguard.guard.baseline import dumps

    g = fresh
    proc = _dtkuv_install(g, tmp_path, "accelerate==1.6.0")
    assert proc.returncode == 0, proc.stderr
    raw = g.store.baseline.read_bytes()
    data = load(g.store.baseline)
    assert data is not None and "accelerate" in data["dists"]
    assert raw == dumps(data).encode()
    listed = json.loads(g.store.manifest.read_text(encoding="utf-8"))["files"]
    assert listed[str(g.store.baseline)]["sha256"] == hashlib.sha256(raw).hexdigest()


def test_a_baseline_edited_by_hand_is_not_followed(fresh: Guarded, tmp_path: Path) -> None:
    """Bytes the manifest does not vouch for are neither spliced nor rewritten: the edit stays
    for `check` to report."""
    g = fresh
    text = g.store.baseline.read_text(encoding="utf-8")
    edited = text.replace('"created": "', '"created": "x', 1)
    assert edited != text
    g.store.baseline.write_text(edited, encoding="utf-8")
    proc = _dtkuv_install(g, tmp_path, "accelerate==1.6.0")
    assert proc.returncode == 0, proc.stderr
    assert g.store.baseline.read_text(encoding="utf-8") == edited


def test_the_vendor_search_asked_ahead_answers_only_for_the_bytes_and_names_it_saw() -> None:
    """`prepare_follow`'s search (while uv runs) is taken by the follow only for the same
    bytes and a superset of its names; a name it did not look for is looked for."""
    from dtkguard.guard import baseline as follow

    raw = b'{\n"vendor": {"torch": {"files": {"rich": {"size": 1}}}, "vllm": {}}\n}\n'
    span = (0, len(raw))
    assert not follow._vendor_named(raw, span, {"accelerate"})  # asked ahead: none
    assert follow._vendor_named(raw, span, {"accelerate", "vllm"})  # vllm: looked for
    assert not follow._vendor_named(raw, span, {"accelerate", "numpy"})
    assert follow._vendor_named(raw, span, {"torch"})
    assert follow._vendor_named(raw, span, {"torch", "numpy"})  # kept: torch is one
    assert not follow._vendor_named(raw, span, {"numpy"})  # fewer names: searched again
    other = raw.replace(b'"vllm"', b'"numpy"')
    assert follow._vendor_named(other, (0, len(other)), {"numpy"})  # other bytes: searched


def test_a_baseline_replaced_after_the_search_ahead_is_searched_again(fresh: Guarded) -> None:
    """The search ahead found no vendor build among the touched names; then the guard wrote a
    baseline whose vendor line names one: the follow reads the new bytes (the manifest vouches
    for them) and searches them, so it follows the baseline whole instead of splicing."""
    from dtkguard.env.interpreter import interpreter
    from dtkguard.guard import baseline as follow

    g = fresh
    interp = interpreter(str(g.venv.python))
    follow.prepare_follow(interp, ["accelerate"])
    text = g.store.baseline.read_text(encoding="utf-8")
    vendor = _lines(g.store.baseline)["vendor"]
    named = vendor.replace('"vendor": {', '"vendor": {"accelerate": {}, ', 1)
    follow._write_guard_file(interp, g.store.baseline, text.replace(vendor, named, 1))
    changes = [("accelerate", None, "1.6.0")]
    assert follow._follow_lines(interp, g.store.baseline, changes, ["accelerate"], True) is None
