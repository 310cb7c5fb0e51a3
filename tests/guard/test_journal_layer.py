"""The journal is a layer of its own below guard/ and recover/ and knows no installer's options
(issue 31 item 7): guard/ decides that an install into another place is not journalled
(`installs_elsewhere`) and passes the journal plain data, which it records as it is."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from dtkguard.guard.pipargs import installs_elsewhere
from dtkguard.journal import transaction as journal
from dtkguard.journal.layout import Layout
from dtkguard.journal.txn import transactions
from tests.guard.conftest import Guarded

REPO = Path(__file__).resolve().parents[2]
#: a string that is a command-line option: ``-t``, ``--target``, ``--user``
_OPTION = re.compile(r"-{1,2}[A-Za-z][\w-]*(=.*)?")


def test_the_journal_names_no_installer_option():
    """No string constant of dtkguard/journal/ is an option (a message may quote a command)."""
    found = []
    for path in sorted((REPO / "dtkguard" / "journal").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and _OPTION.fullmatch(text):
                found.append(f"{path.name}:{node.lineno}: {node.value!r}")
    assert found == []


@pytest.mark.parametrize(
    ("argv", "elsewhere"),
    [
        (["dtkpip", "install", "--target", "/t", "x"], True),
        (["dtkpip", "install", "--target=/t", "x"], True),
        (["dtkpip", "install", "-t", "/t", "x"], True),
        (["dtkpip", "install", "-t=/t", "x"], True),
        (["dtkpip", "install", "--user", "x"], True),
        (["dtkpip", "install", "--prefix", "/p", "x"], True),
        (["dtkpip", "install", "--prefix=/p", "x"], True),
        (["dtkpip", "install", "--root", "/r", "x"], True),
        (["dtkuv", "pip", "install", "--target", "/t", "x"], True),
        (["dtkuv", "pip", "install", "--prefix=/p", "x"], True),
        (["dtkpip", "install", "x"], False),
        (["dtkpip", "install", "--root-user-action", "ignore", "x"], False),
        (["dtkpip", "install", "--targetx", "x"], False),
        (["dtkpip", "install", "--upgrade", "--user-agent-x", "x"], False),
        (["dtkuv", "pip", "install", "--python", "/v/bin/python", "x"], False),
    ],
)
def test_installs_elsewhere_is_guards_decision(argv, elsewhere):
    assert installs_elsewhere(argv) is elsewhere


def _plain(tmp_path: Path) -> Layout:
    site, scripts = tmp_path / "site", tmp_path / "bin"
    for d in (site, scripts):
        d.mkdir()
    (site / "old.py").write_text("old\n")
    return Layout(tmp_path, [site, scripts], scripts, site)


def test_the_journal_records_what_it_is_given(tmp_path):
    """An argv with ``--target`` is plain data to the journal: it journals the change and
    records the argv as it was passed (the decision not to journal is the caller's)."""
    lay = _plain(tmp_path)
    argv = ["dtkpip", "install", "--target", str(tmp_path / "t"), "x"]
    with journal.transaction("-", "dtkpip", argv, lay=lay):
        (lay.purelib / "old.py").unlink()  # replaced, as an installer does: a new file
        (lay.purelib / "old.py").write_text("new\n")
    [txn] = transactions(lay.journal)
    assert txn.argv == argv and txn.state == "committed"
    with pytest.raises(RuntimeError), journal.transaction("-", "dtkpip", argv, lay=lay):
        (lay.purelib / "old.py").unlink()
        (lay.purelib / "old.py").write_text("newer\n")
        raise RuntimeError("the installer failed")
    assert (lay.purelib / "old.py").read_text() == "new\n"


@pytest.mark.wheel_cache
def test_dtkpip_journals_into_the_env_and_not_elsewhere(
    pip_version: str, tmp_path: Path, build_guarded: Callable[..., Guarded]
) -> None:
    """Through the command: an install into the env is one transaction; the same install
    with ``--target DIR`` or ``--target=DIR`` runs outside the journal (the env is untouched)."""
    g = build_guarded(tmp_path / "venv", pip_version, with_vllm=False)

    def history() -> list[dict]:
        proc = g.dtkguard("history", "--python", str(g.venv.python), "--json")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    for spelling in (["--target", str(tmp_path / "t1")], [f"--target={tmp_path / 't2'}"]):
        proc = g.dtkpip("install", *g.index_args, "--no-deps", *spelling, "accelerate==1.6.0")
        assert proc.returncode == 0, proc.stderr
        assert history() == []
    assert any((tmp_path / "t2").glob("accelerate*"))
    proc = g.dtkpip("install", *g.index_args, "--no-deps", "accelerate==1.6.0")
    assert proc.returncode == 0, proc.stderr
    [txn] = history()
    assert txn["argv"][:2] == ["dtkpip", "install"] and "accelerate" in txn["after"]
