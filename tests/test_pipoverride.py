"""An override of a guarded pip run (`dtkguard.pipoverride`), on plain folders: no pip, no venv.

The hook reads the reason, checks dtkpip's one-time token and appends the record; what it
writes is the log dtkguard reads (`dtkguard.env.chain`, `dtkguard.env.override_log`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dtkguard import pipoverride as po
from dtkguard.env import chain, override_log


def test_the_variables_are_dtkguards() -> None:
    assert (po.ENV_VAR, po.TOKEN_VAR) == (override_log.ENV_VAR, override_log.TOKEN_VAR)


@pytest.mark.parametrize(
    ("environ", "reason"),
    [({}, ""), ({"DTKGUARD_OVERRIDE": "  "}, ""), ({"DTKGUARD_OVERRIDE": " hotfix\n"}, "hotfix")],
)
def test_reason(environ: dict[str, str], reason: str) -> None:
    assert po.reason(environ) == reason


def _env(tmp_path: Path, pointer: object | None) -> str:
    """The policy path of an env whose ``store.json`` holds ``pointer`` (None: no pointer)."""
    state = tmp_path / "env" / "dtkguard"
    state.mkdir(parents=True)
    if pointer is not None:
        text = pointer if isinstance(pointer, str) else json.dumps(pointer)
        (state / "store.json").write_text(text)
    return str(state / "policy.json")


def test_the_log_is_in_the_store_the_pointer_names(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    policy = _env(tmp_path, {"store": str(store)})
    assert po.log_dir(policy) == str(store)


@pytest.mark.parametrize(
    "pointer", [None, "not json", ["a list"], {"store": 3}, {"store": "/nonexistent/store"}]
)
def test_without_a_store_the_log_is_beside_the_policy(tmp_path: Path, pointer: object) -> None:
    policy = _env(tmp_path, pointer)
    assert po.log_dir(policy) == os.path.dirname(policy)


def test_the_record_is_a_chained_line_dtkguard_reads(tmp_path: Path) -> None:
    policy = _env(tmp_path, None)
    log = Path(os.path.dirname(policy)) / "overrides.jsonl"
    po.record(policy, "hotfix", ["torch 2.5.0"], ["pip", "install", "torch==2.5.0"])
    po.record(policy, "again", ["six 1.0"], ("pip", "install", "six"))
    assert chain.problems(log) == []
    records = [data for _, data in override_log.read(log) if isinstance(data, dict)]
    assert [r["reason"] for r in records] == ["hotfix", "again"]
    first = records[0]
    assert first["tool"] == "pip-hook" and first["allowed"] == ["torch 2.5.0"]
    assert first["argv"] == ["pip", "install", "torch==2.5.0"] and first["user"]
    assert first["time"].endswith("Z") and first["prev"] == ""
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    # dtkguard's own writer continues the chain the hook wrote
    override_log.record(log, "dtkpip", ["x"], ["x"], "dtkpip")
    po.record(policy, "third", [], [])
    assert chain.problems(log) == [] and len(chain.records(log)) == 4
    lines = log.read_text().splitlines()
    lines[1] = lines[1].replace("again", "AGAIN")
    log.write_text("\n".join(lines) + "\n")
    assert chain.problems(log) != []  # an edited record breaks the chain


def test_dtkpips_token_is_used_once(tmp_path: Path) -> None:
    policy = _env(tmp_path, None)
    log = Path(os.path.dirname(policy)) / "overrides.jsonl"
    token = override_log.record_with_token(log, "hotfix", ["pip"], ["torch"], "dtkpip")
    environ = {po.TOKEN_VAR: token}
    assert override_log.token_file(log, token).exists()
    assert po.token_recorded(environ, policy) is True
    assert not override_log.token_file(log, token).exists()  # consumed
    assert po.token_recorded(environ, policy) is False  # used already: the hook records again


def test_a_token_without_its_record_or_file_is_not_recorded(tmp_path: Path) -> None:
    policy = _env(tmp_path, None)
    state = Path(os.path.dirname(policy))
    assert po.token_recorded({}, policy) is False
    assert po.token_recorded({po.TOKEN_VAR: "../x"}, policy) is False
    (state / "override-abc123.token").write_text("abc123\n")  # a token file, no record
    assert po.token_recorded({po.TOKEN_VAR: "abc123"}, policy) is False
    assert not (state / "override-abc123.token").exists()
    # a record that names the token elsewhere than as its token
    po.record(policy, "abc123", [], [])
    (state / "override-abc123.token").write_text("abc123\n")
    assert po.token_recorded({po.TOKEN_VAR: "abc123"}, policy) is False
    assert po.token_recorded({po.TOKEN_VAR: "forged"}, policy) is False  # no token file
