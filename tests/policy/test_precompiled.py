"""The bundled policies are shipped compiled, and the shipped form is what this code compiles.

Write the shipped forms again after a change to a bundled policy or to the compiler:
``python -m tests.policy.test_precompiled`` (from the checkout).
"""

from __future__ import annotations

import shutil

import pytest

from dtkguard.policy import precompiled
from dtkguard.policy.compile import compile_policy
from dtkguard.policy.locate import bundled_dir
from dtkguard.rules.catalog import is_known
from tests.support.cli import dtkguard

BUNDLED = sorted(bundled_dir().glob("*.toml"))
REWRITE = "python -m tests.policy.test_precompiled"


@pytest.mark.parametrize("toml", BUNDLED, ids=lambda p: p.stem)
def test_the_shipped_form_is_what_this_code_compiles(toml):
    shipped = precompiled.shipped_file(toml)
    assert shipped.is_file(), f"{shipped.name} is missing: run {REWRITE}"
    assert shipped.read_text(encoding="utf-8") == precompiled.render(toml, is_known), (
        f"{shipped.name} is stale: run {REWRITE}"
    )
    assert precompiled.read_shipped(toml.resolve()) == compile_policy(toml, is_known)


def test_a_fresh_cache_loads_the_default_without_pydantic_or_tomlkit(tmp_path):
    (tmp_path / "site").mkdir()
    env = {"DTKGUARD_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPROFILEIMPORTTIME": "1"}
    run = dtkguard("check", "-v", "--path", tmp_path / "site", "--allow-empty", env=env)
    assert run.returncode == 0, run.stderr
    assert "(compiled when it was shipped)" in run.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()}
    assert not {"pydantic", "tomlkit"} & imported


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A copy of the bundled folder that `read_shipped` takes for the bundled one."""
    copy = tmp_path / "policies"
    shutil.copytree(bundled_dir(), copy)
    monkeypatch.setattr(precompiled, "bundled_dir_text", lambda: str(copy))
    return copy.resolve()


def test_the_copy_is_served_as_shipped(home):
    toml = home / BUNDLED[0].name
    policy = precompiled.read_shipped(toml)
    assert policy is not None
    assert list(policy.files) == [str(toml)]


@pytest.mark.parametrize(
    "damage",
    ["edit the toml", "same size other bytes", "torn json", "other format", "foreign file"],
)
def test_a_shipped_form_that_does_not_match_is_not_used(home, damage):
    toml = home / BUNDLED[0].name
    shipped = precompiled.shipped_file(toml)
    if damage == "edit the toml":
        toml.write_text(toml.read_text() + "\n# edited\n")
    elif damage == "same size other bytes":
        raw = bytearray(toml.read_bytes())
        raw[-2] = ord("#") if raw[-2] != ord("#") else ord(" ")
        toml.write_bytes(bytes(raw))
    elif damage == "torn json":
        shipped.write_bytes(shipped.read_bytes()[:100])
    elif damage == "other format":
        shipped.write_text(shipped.read_text().replace(precompiled.FORMAT, "other-2"))
    else:
        text = shipped.read_text().replace(f'"{toml.name}"', '"../elsewhere.toml"', 1)
        shipped.write_text(text)
    assert precompiled.read_shipped(toml) is None


def test_a_policy_outside_the_bundled_folder_is_compiled(home, tmp_path):
    outside = tmp_path / "mine" / BUNDLED[0].name
    outside.parent.mkdir()
    shutil.copy(home / BUNDLED[0].name, outside)
    shutil.copy(precompiled.shipped_file(home / BUNDLED[0].name), outside.parent)
    assert precompiled.read_shipped(outside.resolve()) is None


def _write() -> int:
    for toml in BUNDLED:
        precompiled.shipped_file(toml).write_text(
            precompiled.render(toml, is_known), encoding="utf-8"
        )
        print(f"wrote {precompiled.shipped_file(toml)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_write())
