"""An empty target value (``--root "$VAR"`` with VAR unset) is exit 2 in every command, never
"the default": dtkguard's own interpreter must not pass a gate or be acted on in its place."""

from __future__ import annotations

import pytest

from tests.support.cli import run_in_process

#: every command and option that names a target, an interpreter, a lock or a policy
CASES = [
    *(
        (cmd, opt)
        for cmd in (["check"], ["audit"], ["doctor"], ["policy", "init", "--from-env"])
        for opt in ("--python", "--root", "--container", "--pid", "--path")
    ),
    *((["lock", "--from-env", "-o", "pylock.x.toml"], o) for o in ("--python", "--root", "--pid")),
    (["check"], "--lock"),
    (["audit"], "--lock"),
    (["check"], "--policy"),
    (["guard", "status"], "--python"),
    (["guard", "install"], "--python"),
    (["guard", "install"], "--lock"),
    (["guard", "remove"], "--python"),
    (["restore"], "--python"),
    (["history"], "--python"),
    (["undo"], "--python"),
    (["pip"], "--python"),
    (["uv"], "--python"),
]


@pytest.mark.parametrize(
    ("cmd", "opt"), CASES, ids=lambda x: " ".join(x) if isinstance(x, list) else x
)
@pytest.mark.parametrize("form", ["separate", "equals"])
def test_empty_value_is_exit_2(
    cmd: list[str], opt: str, form: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a command that ran anyway writes nothing here
    given = [opt, ""] if form == "separate" else [f"{opt}="]
    tail = ["install", "six"] if cmd[0] in ("pip", "uv") else []
    if cmd[0] == "uv":
        tail = ["pip", "install", "six"]
    res = run_in_process(*cmd, *given, *tail)
    assert res.code == 2, (res.code, res.out, res.err)
    assert f"{opt}: empty value" in res.err, res.err
    assert "Traceback" not in res.err


@pytest.mark.parametrize(
    "argv",
    [
        ["history", ""],
        ["restore", ""],
        ["pip", "install", "--python", "", "six"],
        ["uv", "pip", "install", "-p", "", "six"],
        ["uv", "pip", "install", "--python=", "six"],
    ],
)
def test_empty_target_or_installer_python_is_exit_2(argv: list[str]) -> None:
    res = run_in_process(*argv)
    assert res.code == 2, (res.code, res.out, res.err)
    assert "empty value" in res.err, res.err
