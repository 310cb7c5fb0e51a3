"""`lock(LockRequest)`, the library call the `lock` command makes: the same bytes as the command,
a refused request as a result (code 1, nothing written), bad input as `InputError`."""

from __future__ import annotations

from pathlib import Path

import pytest

from dtkguard.errors import InputError
from dtkguard.lock.make import LockRequest, lock
from tests.lock.test_lock_cli import _lock


def test_the_call_writes_the_commands_lock_byte_for_byte(
    tmp_path: Path, das_wheelhouses, das_index, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_command, proc = _lock(tmp_path, das_wheelhouses, das_index)
    assert proc.returncode == 0, proc.stderr
    work = by_command.parent
    monkeypatch.chdir(work)  # the command ran there; the lock records the inputs as given
    out = work / "pylock.call.toml"
    request = LockRequest(
        output=out,
        requirements=["vllm"],
        vendor_find_links=["vendor"],
        index_url=das_index.url,
        no_cache=True,
    )
    result = lock(request)
    assert result.code == 0 and result.output == out
    assert out.read_bytes() == by_command.read_bytes()
    assert result.packages > 100
    assert result.messages[-1].startswith(f"wrote {out}: {result.packages} packages (")
    assert proc.stderr.splitlines()[-1].startswith(f"wrote pylock.das.toml: {result.packages} ")


def test_a_request_the_policy_cannot_meet_is_a_result(
    tmp_path: Path, das_wheelhouses, das_index
) -> None:
    out = tmp_path / "pylock.x.toml"
    request = LockRequest(
        output=out,
        requirements=["vllm==0.9.2"],
        vendor_find_links=[str(das_wheelhouses[1])],
        index_url=das_index.url,
        no_cache=True,
        quiet=True,
    )
    result = lock(request)
    assert result.code == 1 and not out.exists()
    assert result.messages[0] == "dtkguard: cannot lock:"
    assert any("vllm" in line for line in result.messages[1:])


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({}, "nothing to lock"),
        ({"requirements": ["vllm"], "from_env": True}, "--from-env takes no requirements"),
        ({"requirements": ["vllm"], "resolve_timeout": 0.0, "no_index": True}, "positive"),
    ],
)
def test_bad_requests_raise_input_errors(tmp_path: Path, fields: dict, said: str) -> None:
    with pytest.raises(InputError, match=said):
        lock(LockRequest(output=tmp_path / "pylock.x.toml", quiet=True, **fields))
    assert not (tmp_path / "pylock.x.toml").exists()


def test_a_lock_must_be_named_as_pep_751_says(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"pylock\.toml or pylock\.NAME\.toml"):
        lock(LockRequest(output=tmp_path / "lock.toml", requirements=["vllm"]))
