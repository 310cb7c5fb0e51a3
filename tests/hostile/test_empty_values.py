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


#: pip's and uv's options naming a place or a source: pip reads ``--target ''`` as no target
#: (it installs into the environment, while dtkpip took it for an install elsewhere and ran it
#: outside the journal); uv reads ``--index-url ''`` as the default index
INSTALLER_CASES = [
    *(
        ["pip", "install", *given, "six"]
        for opt in ("-t", "--target", "--prefix", "--root", "--src", "-f", "--find-links",
                    "-i", "--index-url", "--extra-index-url", "-c", "--constraint", "--report")
        for given in ([opt, ""], [f"{opt}="] if opt.startswith("--") else [opt, " "])
    ),
    ["pip", "install", "-r", ""],
    ["pip", "install", "-e", ""],
    *(
        ["uv", "pip", "install", opt, "", "six"]
        for opt in ("--target", "--prefix", "-f", "--find-links", "-i", "--index-url",
                    "--extra-index-url", "--index", "--default-index", "-c", "--constraint")
    ),
    ["uv", "pip", "sync", "-i", "", "reqs.txt"],
]  # fmt: skip


@pytest.mark.parametrize("argv", INSTALLER_CASES, ids=lambda a: " ".join(a[:4]))
def test_an_empty_place_or_source_of_pip_or_uv_is_exit_2(argv: list[str], tmp_path) -> None:
    python = str(tmp_path / "no-such-python")  # refused before any interpreter is asked
    res = run_in_process(argv[0], "--python", python, *argv[1:])
    assert res.code == 2, (res.code, res.out, res.err)
    assert "empty value" in res.err, res.err
    assert "Traceback" not in res.err
