"""Every state file of the guard's store, hostile: a FIFO (read blocked forever), nesting
100,000 deep (RecursionError), wrong types, past its size limit, in place of the baseline,
the manifest, the store record, the protected list, the compiled policy copy, the tripwire
snapshot, a journal ``txn.json`` and the vault index. `check`, `guard status`, `history` and
`restore --dry-run` answer (a finding, a refusal, one line), never a traceback or a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import REPO
from tests.support.sitetree import vendor_site
from tests.support.venvs import hermetic_env, make_venv

#: seconds after which a command counts as hung (a FIFO read blocks forever)
HANG = 90
FILES = ["baseline.json", "manifest.json", "env.json", "protected.json", "policy.json",
         "tripwire.txt", "journal/0001/txn.json", "vault/vault.json"]  # fmt: skip
KINDS = ["fifo", "deep", "wrong-types", "huge"]
COMMANDS = [["check"], ["guard", "status"], ["history"], ["restore", "--dry-run"]]


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(python, env): a venv with the vendor builds, guarded (its store private)."""
    tmp = tmp_path_factory.mktemp("store-state")
    venv = make_venv(tmp / "venv", with_pip=False)
    vendor_site(venv.site_packages)
    policy = tmp / "site.toml"
    policy.write_text('[policy]\nname = "x"\nextends = ["dtk-25.04.1"]\n')
    env = hermetic_env(DTKGUARD_STORE=str(tmp / "store"), DTKGUARD_CACHE_DIR=str(tmp / "cache"),
                       PYTHONPATH=str(REPO), NO_COLOR="1")  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "dtkguard", "guard", "install", "--python", str(venv.python),
         "--policy", str(policy)], env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return venv.python, env


def _spoil(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "deep":
        path.write_text('{"files": ' + "[" * 100_000 + "]" * 100_000 + "}")
    elif kind == "wrong-types":
        path.write_text(json.dumps({"format": 5, "files": [1, "x"], "dists": "x", "id": [],
                                    "wheels": 3, "vendor": [], "identity": 1}))  # fmt: skip
    else:  # past every state file's limit, sparse: never read whole
        with open(path, "wb") as fh:
            fh.write(b'{"files": {"')
            fh.truncate(300 << 20)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", FILES)
def test_a_hostile_store_file_is_answered_never_a_traceback_or_a_hang(
    guarded: tuple[Path, dict[str, str]], name: str, kind: str
) -> None:
    python, env = guarded
    [store] = Path(env["DTKGUARD_STORE"], "envs").iterdir()
    path = store / name
    saved = path.read_bytes() if path.is_file() else None
    _spoil(path, kind)
    try:
        for cmd in COMMANDS:
            proc = subprocess.run(
                [sys.executable, "-m", "dtkguard", *cmd, "--python", str(python)],
                env=env, capture_output=True, text=True, timeout=HANG,
            )  # fmt: skip
            assert "Traceback" not in proc.stderr, (cmd, proc.stderr)
            assert proc.returncode in (0, 1, 2, 3), (cmd, proc.returncode, proc.stderr)
            if cmd == ["check"] and name in ("baseline.json", "manifest.json", "env.json"):
                assert proc.returncode != 0, (name, kind, proc.stdout)  # never a silent pass
    finally:
        path.unlink()
        if saved is not None:
            path.write_bytes(saved)
