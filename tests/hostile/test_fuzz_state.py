"""Bounded fuzz of the guard's own state files and of legacy (egg) entries: a mutated baseline,
override log, journal ``txn.json``, guarded-interpreter list, ``easy-install.pth``,
``.egg-link`` and RECORD (with a ``.so`` it lists, for ``--verify-files``) through the real CLI
in process. Every case ends with exit 0, 1, 2 or 3 and never a traceback (an exception that
escapes `main` fails the case). Same seed and mutator as `test_fuzz`."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from tests.hostile.test_fuzz import CASES, LONG_CASES, SEED, _mutate
from tests.support.cli import run_in_process
from tests.support.sitetree import add_dist, vendor_site

SITE = "lib/python3.10/site-packages"


def _baseline() -> bytes:
    entry = {"name": "torch", "version": "2.4.1", "site": "/x", "dist_info": "t.dist-info"}
    vendor = {
        **entry,
        "top_level": ["torch"],
        "record": {"sha256": "0" * 64, "digest": "0" * 64, "size": 10, "mtime_ns": 1},
        "files": {"torch/__init__.py": {"sha256": "0" * 64, "size": 1, "mtime_ns": 1}},
    }
    data = {"format": "dtkguard-baseline/1", "dists": {"torch": entry}, "vendor": {"torch": vendor}}
    return json.dumps(data, indent=1).encode()


def _overrides() -> bytes:
    rec = {"time": "2026-01-01T00:00:00Z", "user": "u", "reason": "r", "argv": ["pip"]}
    return b"".join(json.dumps({**rec, "allowed": [str(i)]}).encode() + b"\n" for i in range(3))


def _txn() -> bytes:
    data = {
        "id": 1, "tool": "dtkpip", "argv": ["dtkpip", "install", "x"], "time": "2026-01-01",
        "state": "committed", "roots": ["/nonexistent"], "before": {"a": "1"},
        "after": {"a": "2"}, "names": {"a": "A"}, "reason": "", "undoes": None,
        "kept_files": 1, "kept_bytes": 3, "note": "", "touches": ["a"], "started_ns": 1,
    }  # fmt: skip
    return json.dumps(data).encode()


def _setup(fmt: str, folder: Path, body: bytes) -> list[str]:
    """Write the mutated file where dtkguard reads it; the argv that reads it."""
    prefix = folder / "env"
    site = prefix / SITE
    vendor_site(site)
    state = prefix / "dtkguard"
    state.mkdir(parents=True, exist_ok=True)
    check = ["check", "--path", str(site), "-f", "json"]
    if fmt == "baseline":
        (state / "baseline.json").write_bytes(body)
        return check
    if fmt == "overrides":
        (state / "overrides.jsonl").write_bytes(body)
        return check
    if fmt == "easy-install":
        (site / "easy-install.pth").write_bytes(body)
        return check
    if fmt == "egg-link":
        (site / "devpkg.egg-link").write_bytes(body)
        return check
    if fmt.startswith("record"):
        add_dist(site, "native", "1.0", files={"native/_c.so": b"\x7fELF" + bytes(60)})
        rec = next(site.glob("native-1.0.dist-info")) / "RECORD"
        rec.write_bytes(body)
        return ["audit", "--path", str(site), "--verify-files", "-f", "json"]
    if fmt == "registry":
        (folder / "state" / "dtkguard").mkdir(parents=True)
        (folder / "state" / "dtkguard" / "guarded.json").write_bytes(body)
        return ["pip", "install", "--dry-run", "nothing-at-all"]
    # txn: the journal of dtkguard's own interpreter, in this case's store
    journal = Path(_journal_of(folder))
    (journal / "0001").mkdir(parents=True)
    (journal / "0001" / "txn.json").write_bytes(body)
    return ["history", "--python", sys.executable, "--json"]


def _journal_of(folder: Path) -> str:
    from dtkguard.env.store import env_store

    return str(env_store(sys.prefix).journal)


SEEDS = {
    "baseline": _baseline,
    "overrides": _overrides,
    "txn": _txn,
    "registry": lambda: json.dumps({"interpreters": {"/nope/bin/python": "/nope"}}).encode(),
    "easy-install": lambda: b"import sys; sys.__plen = len(sys.path)\n./devpkg\n",
    "egg-link": lambda: b"/nonexistent/devpkg\n.\n",
    "record": lambda: b"native/_c.so,sha256=AAAA,64\nnative-1.0.dist-info/RECORD,,\n",
    "record-size": lambda: b"native/_c.so,sha256=AAAA," + b"9" * 5000 + b"\n",
}
#: what each mutated case adds on top of the generic tokens: the reported breakers
EXTRA = {
    "record": [b"9" * 5000],
    "easy-install": [b"\x00", b"x" * 5000],
    "egg-link": [b"\x00", b"y" * 5000],
}


def _run(fmt: str, cases: int, tmp: Path, monkeypatch) -> dict[int, int]:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("DTKGUARD_DEBUG", raising=False)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    rng = random.Random(f"{SEED}:state:{fmt}")
    seed = SEEDS[fmt]()
    codes: dict[int, int] = {}
    for case in range(cases):
        folder = tmp / f"{fmt}-{case}"
        folder.mkdir()
        monkeypatch.setenv("DTKGUARD_STORE", str(folder / "store"))
        monkeypatch.setenv("XDG_STATE_HOME", str(folder / "state"))
        monkeypatch.setenv("DTKGUARD_CACHE_DIR", str(folder / "cache"))
        body = _mutate(rng, seed) if case else seed
        if case % 5 == 4 and fmt in EXTRA:
            body += rng.choice(EXTRA[fmt])
        argv = _setup(fmt, folder, body)
        try:
            result = run_in_process(*argv)
        except BaseException as exc:
            raise AssertionError(f"{fmt} case {case} (seed {SEED}): {exc!r}") from exc
        assert result.code in (0, 1, 2, 3), f"{fmt} case {case}: exit {result.code} {result.err}"
        assert "Traceback" not in result.err, (fmt, case, result.err)
        codes[result.code] = codes.get(result.code, 0) + 1
    return codes


FORMATS = sorted(SEEDS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzz_state(fmt, tmp_path, monkeypatch):
    codes = _run(fmt, CASES // 2, tmp_path, monkeypatch)
    assert sum(codes.values()) == CASES // 2


@pytest.mark.fuzz
@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzz_state_long(fmt, tmp_path, monkeypatch):
    codes = _run(fmt, LONG_CASES, tmp_path, monkeypatch)
    assert sum(codes.values()) == LONG_CASES
