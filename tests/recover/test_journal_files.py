"""The journal's file-level promises on plain folders (no pip): a rollback puts back every
file, link and folder byte for byte and removes what was added; a commit keeps exactly what was
removed or replaced; a commit or a rollback that was killed half way is finished by the next
transaction, never turned into something else."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from dtkguard.journal import transaction as journal
from dtkguard.journal.layout import Layout
from dtkguard.journal.prune import prune
from dtkguard.journal.txn import Transaction, transactions


def tree(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def lay(tmp_path: Path) -> Layout:
    site = tmp_path / "prefix" / "lib" / "site-packages"
    scripts = tmp_path / "prefix" / "bin"
    (site / "pkg" / "sub").mkdir(parents=True)
    scripts.mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("one\n")
    (site / "pkg" / "sub" / "data.bin").write_bytes(os.urandom(4096))
    (site / "pkg-1.0.dist-info").mkdir()
    (site / "pkg-1.0.dist-info" / "METADATA").write_text("Name: pkg\nVersion: 1.0\n\n")
    (scripts / "tool").write_text("#!python\n")
    (scripts / "python").symlink_to("/usr/bin/python3")
    return Layout(tmp_path / "prefix", [site, scripts], scripts, site)


def damage(lay: Layout) -> None:
    site, scripts = lay.roots
    (site / "pkg" / "__init__.py").unlink()
    (site / "pkg" / "__init__.py").write_text("two\n")  # replaced (new inode)
    (site / "pkg" / "sub" / "data.bin").unlink()  # removed
    (site / "new").mkdir()
    (site / "new" / "x.py").write_text("added\n")  # added folder
    (site / "pkg-1.0.dist-info").rename(site / "pkg-2.0.dist-info")
    (site / "pkg-2.0.dist-info" / "METADATA").unlink()
    (site / "pkg-2.0.dist-info" / "METADATA").write_text("Name: pkg\nVersion: 2.0\n\n")
    (scripts / "python").unlink()
    (scripts / "python").symlink_to("/elsewhere")


def test_rollback_puts_everything_back(lay: Layout) -> None:
    before = [tree(r) for r in lay.roots]
    with pytest.raises(RuntimeError), journal.transaction("-", "t", ["t"], lay=lay):
        damage(lay)
        raise RuntimeError("pip failed")
    assert [tree(r) for r in lay.roots] == before
    [txn] = transactions(lay.journal)
    assert txn.state == "rolled-back" and "pip failed" in txn.note


def test_commit_keeps_exactly_what_was_removed_or_replaced(lay: Layout) -> None:
    with journal.transaction("-", "t", ["t"], lay=lay) as txn:
        damage(lay)
    txn = Transaction.load(txn.dir)
    assert txn.state == "committed"
    kept = {rel for (_, rel) in txn.kept()}
    assert kept == {"pkg/__init__.py", "pkg/sub/data.bin", "pkg-1.0.dist-info/METADATA"}
    assert txn.changes() == [("pkg", "1.0", "2.0")]
    assert (txn.pre_path(lay.roots[0] / "pkg" / "__init__.py")).read_text() == "one\n"


def test_killed_open_transaction_is_rolled_back_by_the_next(lay: Layout) -> None:
    """SIGKILL while the transaction is open (its lock dies with the process)."""
    import signal
    import subprocess
    import sys

    before = [tree(r) for r in lay.roots]
    code = (
        "import os, sys; from pathlib import Path\n"
        "from dtkguard.journal import transaction as journal\n"
        "from dtkguard.journal.layout import Layout\n"
        "from tests.recover.test_journal_files import damage\n"
        "site, scripts, prefix = map(Path, sys.argv[1:4])\n"
        "lay = Layout(prefix, [site, scripts], scripts, site)\n"
        "cm = journal.transaction('-', 't', ['first'], lay=lay); cm.__enter__()\n"
        "damage(lay)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    repo = Path(__file__).resolve().parents[2]
    args = [str(lay.roots[0]), str(lay.roots[1]), str(lay.prefix)]
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)}
    )
    assert proc.returncode == -signal.SIGKILL
    assert [tree(r) for r in lay.roots] != before
    with journal.transaction("-", "t", ["second"], lay=lay):
        assert [tree(r) for r in lay.roots] == before
    states = [t.state for t in transactions(lay.journal)]
    assert states == ["rolled-back"]  # the second changed nothing and is not kept


def test_killed_commit_is_finished_not_rolled_back(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dying while the commit drops links (some dropped, pre.list still there): the commit is
    recorded before the first link goes, and the next run finishes dropping them; a rollback
    from the half-pruned store would lose files."""
    real_unlink = os.unlink
    calls = []

    def dying_unlink(path, *args, **kwargs):  # os is one module: count the journal's only
        if f"{os.sep}pre{os.sep}" in str(path):
            calls.append(path)
        if len(calls) == 1:
            raise KeyboardInterrupt  # the process dies here
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(journal.os, "unlink", dying_unlink)
    with pytest.raises(KeyboardInterrupt), journal.transaction("-", "t", ["t"], lay=lay):
        damage(lay)
    monkeypatch.setattr(journal.os, "unlink", real_unlink)
    after = [tree(r) for r in lay.roots]
    [txn] = transactions(lay.journal)
    assert txn.state == "committed" and (txn.dir / "pre.list").exists()
    journal.recover(lay)
    assert not (txn.dir / "pre.list").exists()
    assert len(os.listdir(txn.pre)) == 3  # only the removed or replaced files are left
    assert [tree(r) for r in lay.roots] == after
    txn = Transaction.load(txn.dir)
    assert txn.state == "committed"
    kept = {rel for (_, rel) in txn.kept()}
    assert kept == {"pkg/__init__.py", "pkg/sub/data.bin", "pkg-1.0.dist-info/METADATA"}


def test_prune_says_what_it_frees(lay: Layout) -> None:
    """`history --prune` names the files and bytes it frees: the kept copies of removed or
    replaced files (a file still linked from the env frees nothing)."""
    with journal.transaction("-", "t", ["t"], lay=lay) as txn:
        damage(lay)
    kept = Transaction.load(txn.dir).kept_files
    [(pruned, files, size)] = prune(lay.journal, 0)
    assert pruned.state == "pruned" and files == kept == 3 and size > 0
    assert prune(lay.journal, 0) == []
