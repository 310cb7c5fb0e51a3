"""Bounded fuzz of the guard's own state files and of legacy (egg) entries: a mutated baseline,
override log, journal ``txn.json``, guarded-interpreter list, tripwire snapshot,
``easy-install.pth``, zipped ``.egg``, ``.egg-link`` and RECORD (with a ``.so`` it lists, for
``--verify-files``) through the real CLI in process (the tripwire through its own module).
Every case ends with exit 0, 1, 2 or 3 and never a traceback (an exception that escapes `main`
fails the case). Same seed and mutator as `test_fuzz`."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.conftest import HANG
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


def _zipped_egg() -> bytes:
    """A zipped ``.egg`` (its ``EGG-INFO/PKG-INFO`` read through zipfile), stored, not deflated,
    so that mutations reach the metadata."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("EGG-INFO/PKG-INFO", "Metadata-Version: 1.1\nName: zipped\nVersion: 1.0\n\n")
        zf.writestr("zipped/__init__.py", "")
    return buf.getvalue()


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
    if fmt == "egg-zip":
        (site / "zipped-1.0-py3.10.egg").write_bytes(body)
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
    "egg-zip": lambda: _zipped_egg(),
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

_TRIPWIRE = (
    b"mode\twarn\nrestore\tdtkguard restore --python /p/bin/python\n"
    b"dist\ttorch\ttorch 2.4.1+das\nstat\ttorch\t10\t1\t/nonexistent/torch/__init__.py\n"
    b"module\ttorch\ttorch\norigin\ttorch\t/nonexistent/torch/__init__.py\n"
)


def _tripwire_module():
    """The import tripwire as the guard installs it (standard library only), loaded fresh."""
    import importlib.util

    src = Path(__file__).resolve().parents[2] / "plugins" / "pip" / "_dtkguard_tripwire.py"
    spec = importlib.util.spec_from_file_location("_dtkguard_tripwire_fuzz", src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tripwire_cases(cases: int, tmp: Path) -> dict[str, int]:
    """The tripwire's snapshot mutated: the first import of a vendor module it watches warns,
    raises ImportError (mode ``error``) or passes; never another exception, never a hang."""
    rng = random.Random(f"{SEED}:state:tripwire")
    out: dict[str, int] = {}
    for case in range(cases):
        body = _mutate(rng, _TRIPWIRE) if case else _TRIPWIRE
        if case % 5 == 4:
            body += rng.choice([b"\xff\xfe", b"stat\t" * 5000, b"\x00" * 100])
        path = tmp / f"tripwire-{case}.txt"
        path.write_bytes(body)
        module = _tripwire_module()
        try:
            module.tripwire("torch", str(path))
            what = "passed"
        except ImportError:
            what = "refused"
        except BaseException as exc:
            raise AssertionError(f"tripwire case {case} (seed {SEED}): {exc!r}") from exc
        out[what] = out.get(what, 0) + 1
    return out


def test_fuzz_tripwire_snapshot(tmp_path, capsys):
    assert sum(_tripwire_cases(CASES // 2, tmp_path).values()) == CASES // 2


@pytest.mark.fuzz
def test_fuzz_tripwire_snapshot_long(tmp_path, capsys):
    assert sum(_tripwire_cases(LONG_CASES, tmp_path).values()) == LONG_CASES


@pytest.mark.parametrize("kind", ["fifo", "huge", "not-utf8", "directory"])
def test_a_bad_tripwire_snapshot_warns_and_never_blocks(tmp_path, kind):
    """A FIFO in the snapshot's place used to block the first `import torch` forever; a huge
    one was read whole. Each is "unreadable": the import warns, and goes on."""
    path = tmp_path / "tripwire.txt"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "huge":
        path.write_bytes(_TRIPWIRE + b"#" * (5 << 20))
    elif kind == "not-utf8":
        path.write_bytes(_TRIPWIRE + b"\xff")
    else:
        path.mkdir()
    src = Path(__file__).resolve().parents[2] / "plugins" / "pip"
    code = f"import sys; sys.path.insert(0, {str(src)!r}); import _dtkguard_tripwire as t; "
    code += f"print(t.tripwire('torch', {str(path)!r}))"
    proc = subprocess.run(  # a subprocess with a hang guard: the FIFO blocked the old one
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=HANG
    )
    assert proc.returncode == 0 and proc.stdout == "None\n", proc.stderr
    assert "missing or unreadable" in proc.stderr


@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzz_state(fmt, tmp_path, monkeypatch):
    codes = _run(fmt, CASES // 2, tmp_path, monkeypatch)
    assert sum(codes.values()) == CASES // 2


@pytest.mark.fuzz
@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzz_state_long(fmt, tmp_path, monkeypatch):
    codes = _run(fmt, LONG_CASES, tmp_path, monkeypatch)
    assert sum(codes.values()) == LONG_CASES
