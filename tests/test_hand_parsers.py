"""The hand-written readers of the satisfied answer's path (no `re`, `pathlib` or `json`
imported) give exactly what the standard library's give: each is run beside the reading it
replaces over texts that take every branch, the odd ones included."""

from __future__ import annotations

import itertools
import json
import os
import random
import re
from pathlib import Path, PurePosixPath

import pytest

from dtkguard import decision
from dtkguard.env import store_path
from dtkguard.guard import pep508
from dtkguard.util import cache_dir, purepath
from dtkguard.util.text import dumps, loads

_PARTS = ("", "0", "1", "01", "2.4.1", "1.0", "x", ".post1", ".post", ".POST1", "post1", "a1")
_LOCALS = ("", "+das.opt1.dtk2504", "+DAS", "+a-b_c.1", "+", "+a..b", "+é", "+abc-")
_VERSIONS = sorted(
    {"".join(p) for p in itertools.product(("", "v", " "), _PARTS, ("", ".post1", "rc1"), _LOCALS)}
    | {"0.8.5.post1+das.opt1.dtk25041", "1!2.0", "1.0.dev1", "²", "١.٢", "1.0 ", "\t1.0\n"}
)


def _pattern_version(text: str) -> pep508.Version:
    """The version as the pattern alone reads it (the hand reading switched off)."""
    saved = pep508._plain_version
    pep508._plain_version = lambda _text: None  # type: ignore[assignment]
    try:
        return pep508.Version(text)
    finally:
        pep508._plain_version = saved


def _outcome(read, text):  # type: ignore[no-untyped-def]
    try:
        return read(text)
    except pep508.Unsure as exc:
        return ("Unsure", str(exc))


@pytest.mark.parametrize("text", _VERSIONS)
def test_a_version_read_by_hand_is_the_patterns(text: str) -> None:
    def fields(read):  # type: ignore[no-untyped-def]
        def inner(t: str) -> object:
            v = read(t)
            return (v.epoch, v.release, v.pre, v.post, v.dev, v.local, v.key, str(v))

        return inner

    assert _outcome(fields(pep508.Version), text) == _outcome(fields(_pattern_version), text)


_REQUIREMENTS = [
    "torch", "torch==2.4.1+das.opt1.dtk2504", "vllm==0.8.5.post1+das.opt1.dtk25041", "a>=1,<2",
    "a>=1, <2", " a", "a ", "a-", "-a", "a.==1", "foo-==1", "a(>=1)", "a===1", "a!=1.*",
    "a~=1.2", "a<1", "a>1", "a=1", "a==", "rich[jupyter]>=13", "a;python_version>'3'",
    "a @ file:///x", "A_b.C", "é", "a\u00a0==1", "a==1\u00a0", "", "a,b", "a==1,", "a>=1,,<2",
    "a<=1", "a>=", "a ==1", "a==1 ; extra == 'x'", "a==1.0+DAS", "a<1+das",
]  # fmt: skip


def _pattern_requirement(text: str) -> object:
    saved = pep508._plain_requirement, pep508._plain_version
    pep508._plain_requirement = lambda _text: None  # type: ignore[assignment]
    pep508._plain_version = lambda _text: None  # type: ignore[assignment]
    try:
        r = pep508.Requirement(text)
        return (r.name, r.extras, str(r.specifier), r.marker and r.marker.tokens)
    finally:
        pep508._plain_requirement, pep508._plain_version = saved


def _hand_requirement(text: str) -> object:
    r = pep508.Requirement(text)
    return (r.name, r.extras, str(r.specifier), r.marker and r.marker.tokens)


@pytest.mark.parametrize("text", _REQUIREMENTS)
def test_a_requirement_read_by_hand_is_the_patterns(text: str) -> None:
    assert _outcome(_hand_requirement, text) == _outcome(_pattern_requirement, text)


@pytest.mark.parametrize(
    "part", ["==1", "<=1", "<1", "===1", "~=1.2", "!=1.*", "=1", "==", "== 1", " ==1", ">a!b"]
)
def test_a_specifier_clause_read_by_hand_is_the_patterns(part: str) -> None:
    m = re.fullmatch(pep508._PATTERNS["spec"], part)
    assert pep508._spec_parts(part) == (None if m is None else (m.group(1), m.group(2)))


_NAMES = ["Flash_Attn", "a--b", "a._-b", "-a-", " A.B ", "", "a__..b", "é_É", "x" * 3]


@pytest.mark.parametrize("name", _NAMES)
def test_canonical_names_by_hand_are_the_patterns(name: str) -> None:
    assert decision.canonical(name) == re.sub(r"[-_.]+", "-", name.strip()).lower()
    assert pep508.canonical(name) == re.sub(r"[-_.]+", "-", name).lower()


@pytest.mark.parametrize("base", ["venv", "a_!b", "a!!b", "é", "a__", "!!", "x y_z", "a._-b"])
def test_an_env_key_by_hand_is_the_patterns(tmp_path: Path, base: str) -> None:
    real = os.path.realpath(tmp_path / base)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(real))
    assert store_path.env_key(tmp_path / base).rsplit("-", 1)[0] == name[:40]


@pytest.mark.parametrize(
    "value", ["", ".", "/", "//", "///", "a", "a/", "./a", "a/./b", "a//b", "//a/b", "../a", "x/."]
)
def test_pure_path_is_pathlibs(value: str) -> None:
    assert purepath.pure_path(value) == str(PurePosixPath(value))


def test_path_mode_says_what_pathlib_says(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for name in ("file", "missing", "file/below", "loop", "."):
        path = str(tmp_path / name)
        mode = purepath.path_mode(path)
        assert (mode is not None) == Path(path).exists()
    assert purepath.path_mode("a\0b") is None and not Path("a\0b").exists()


_PURE = (
    "", ".", "/", "//", "///", "a", "a/", "./a", "a/./b", "a//b", "//a/b", "../a", "x/.", "/a",
    "//a", "/a/b.c", "a.b.c", ".a", "a.", "..", "/..", "a..b", ".a.b", "a/b/", "é.toml",
)  # fmt: skip


@pytest.mark.parametrize("value", _PURE)
def test_the_pure_parts_of_a_path_are_pathlibs(value: str) -> None:
    pure = PurePosixPath(value)
    text = purepath.pure_path(value)
    assert purepath.parts(value) == pure.parts
    assert (purepath.parent(text), purepath.name(text)) == (str(pure.parent), pure.name)
    assert purepath.stem(text) == pure.stem
    for names in (("b",), ("b", "c/d"), ("/abs",), ("", "x"), (".", "y/")):
        assert purepath.join(value, *names) == str(PurePosixPath(value, *names))


@pytest.mark.parametrize(
    "pattern",
    [
        "*",
        "a*",
        "*a",
        "a*b",
        "*a*",
        "**",
        "a**b",
        "renderD*",
        "ab*ba",
        "a*a*a",
        "",
        "ab",
        "a?",
        "[ab]*",
    ],
)
def test_a_name_matches_as_fnmatch_says(pattern: str) -> None:
    import fnmatch

    for name in ("", "a", "b", "ab", "aba", "abba", "aab", "renderD128", "aXa", "aaa", ".a", "ba"):
        assert purepath.name_matches(name, pattern) == fnmatch.fnmatchcase(name, pattern), name


def test_the_file_tests_and_resolve_are_pathlibs(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "link").symlink_to("dir")
    (tmp_path / "dangling").symlink_to("missing")

    def outcome(call):  # type: ignore[no-untyped-def]
        try:
            return ("ok", call())
        except Exception as exc:
            return (type(exc).__name__, str(exc))

    names = ("file", "dir", "loop", "link", "dangling", "missing", "file/below", "dir/..", ".")
    for name in (*names, "a\0b"):
        path = str(tmp_path / name) if name != "a\0b" else "a\0b"
        for mine, theirs in (
            (purepath.is_dir, Path.is_dir),
            (purepath.is_file, Path.is_file),
            (purepath.exists, Path.exists),
        ):
            assert mine(path) == theirs(Path(path)), (name, mine)
        if "\0" not in path:
            want = outcome(lambda: str(Path(path).resolve()))  # noqa: B023
            assert outcome(lambda: purepath.resolve(path)) == want, name  # noqa: B023


def test_the_store_and_cache_roots_as_text_are_the_paths(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from dtkguard.env.store import store_root

    for store, xdg, cache in (("", "", ""), (f"{tmp_path}//s/", f"{tmp_path}/x/", "c/./d/")):
        monkeypatch.setenv("DTKGUARD_STORE", store)
        monkeypatch.setenv("XDG_STATE_HOME", xdg)
        monkeypatch.setenv("DTKGUARD_CACHE_DIR", cache)
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        assert store_path.store_root_text() == str(store_root())
        home = Path.home()
        state = xdg or str(home / ".local" / "state")
        if not store and os.geteuid() != 0:
            assert store_path.store_root_text() == str(Path(os.path.abspath(state)) / "dtkguard")
        expected = Path(cache) if cache else Path(xdg or home / ".cache") / "dtkguard"
        assert cache_dir.cache_root_text() == str(expected) == str(cache_dir.cache_root())


_JSON = [
    '{"a": 1}', ' [1, 2.5, "x", null, true] \n', "", " ", '{"a":}', "[1] x", "[1]   x", "NaN",
    "-Infinity", "1e400", '"\\ud800"', "\ufeff{}", '{"a":1,"a":2}', '"abc', "[1,]", "1 2",
    "12345678901234567890", ' \t\n\r1 \t', '"\x01"', b'{"a": 1}', b"\xef\xbb\xbf{}",
    b'  {"x": "\xc3\xa9"}', b'{"x": "\xff"}', b"\x00\x00\x00[", b"1\x00", b"1", b"12",
    b"[1\x00\x00", b"{\x00\x00\x00", "[" * 100_000,
]  # fmt: skip


@pytest.mark.parametrize("text", _JSON, ids=range(len(_JSON)))
@pytest.mark.parametrize("hooks", [{}, {"parse_int": str, "object_pairs_hook": list}])
def test_loads_is_json_loads(text: str | bytes, hooks: dict[str, object]) -> None:
    def outcome(read):  # type: ignore[no-untyped-def]
        try:
            return ("ok", repr(read(text, **hooks)))
        except Exception as exc:  # the same exception, message and position
            return (type(exc).__name__, str(exc), getattr(exc, "pos", None))

    assert outcome(loads) == outcome(json.loads)


_OUTCOMES = """
import sys
from dtkguard.util.text import loads
assert "json" not in sys.modules
def outcome(text):
    for name in [m for m in sys.modules if m == "json" or m.startswith("json.")]:
        del sys.modules[name]  # as if never imported: an error path before imports json
    try:
        return ("ok", repr(loads(text)))
    except Exception as exc:
        return (type(exc).__name__, str(exc), getattr(exc, "pos", None))
print(repr([outcome(t) for t in TEXTS]))
"""


def test_loads_fails_as_json_does_where_json_was_never_imported() -> None:
    """The C scanner raises json's JSONDecodeError only when `json.decoder` is imported: a
    command that imports no json (a cached check) still gets json's error, never another."""
    import ast
    import subprocess
    import sys

    texts = [t for t in _JSON if len(t) < 1000]
    code = _OUTCOMES.replace("TEXTS", repr(texts))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    want = []
    for text in texts:
        try:
            want.append(("ok", repr(json.loads(text))))
        except Exception as exc:
            want.append((type(exc).__name__, str(exc), getattr(exc, "pos", None)))
    assert ast.literal_eval(proc.stdout) == want


def _random_value(rng: random.Random, depth: int) -> object:
    """A value of every kind json writes: atoms (odd strings and floats too), lists, tuples,
    dicts with keys of each kind json takes, and what only ``default`` can write."""
    atoms = [
        "", "x", "é\u2028\U0001f600", '"\\\n\t\x00\x1f\x7f', "\ud800", None, True, False, 0, -1,
        2**70, 0.0, -0.0, 1e308, 1.5e-300, float("inf"), float("-inf"), float("nan"), 0.1,
    ]  # fmt: skip
    kind = rng.randrange(7 if depth < 4 else 1)
    if kind == 0:
        return rng.choice(atoms)
    if kind == 1:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 2:
        return tuple(_random_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    if kind == 3:
        return PurePosixPath("/opt/dtk")  # written by ``default`` (or an error without one)
    keys = ["a", "b", "é", "", 1, 2.5, True, None, "10"]
    chosen = rng.sample(keys, rng.randrange(len(keys)))
    if kind == 4:  # one key type: sortable
        chosen = [k for k in chosen if isinstance(k, str)]
    return {k: _random_value(rng, depth + 1) for k in chosen}


def _written(write, value, keywords):  # type: ignore[no-untyped-def]
    try:
        return ("ok", write(value, **keywords))
    except Exception as exc:  # the same exception and message
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize(
    "keywords",
    [
        {},
        {"indent": 2, "default": str},
        {"indent": 1, "sort_keys": True},
        {"indent": 0},
        {"sort_keys": True, "separators": (",", ":"), "default": repr},
        {"indent": 2, "separators": (",", " = ")},
    ],
    ids=str,
)
def test_dumps_is_json_dumps(keywords: dict[str, object]) -> None:
    rng = random.Random(20261204)
    for _ in range(3000):
        value = _random_value(rng, 0)
        assert _written(dumps, value, keywords) == _written(json.dumps, value, keywords), value


def test_dumps_refuses_a_cycle_as_json_does() -> None:
    table: dict[str, object] = {"a": []}
    table["a"].append(table)  # type: ignore[attr-defined]
    for keywords in ({}, {"indent": 2}):
        assert _written(dumps, table, keywords) == _written(json.dumps, table, keywords)
        assert _written(dumps, table, keywords)[0] == "ValueError"
