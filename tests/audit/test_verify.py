"""--verify-files on real venvs tampered with by the tests."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
from pathlib import Path

from tests.audit.conftest import VENDOR_TORCH, install, run_cli, site
from tests.support.venvs import make_venv


def findings(result, rule=None):
    return [f for f in result.json()["findings"] if rule is None or f["rule"] == rule]


def audit_files(venv_site: str, *extra: str):
    return run_cli("audit", "--path", venv_site, "--verify-files", "-f", "json", *extra)


def test_clean_venv_has_no_file_findings(venv):
    result = audit_files(site(venv))
    assert result.code == 0, result.err
    report = result.json()
    assert [f for f in report["findings"] if f["rule"].startswith(("file", "record"))] == []
    summary = report["facts"]["verification"]
    assert summary["matched"] == summary["files_hashed"] > 5
    assert summary["skipped_hashless_pyc"] > 0  # pip compiled .pyc rows have no hash


def test_byte_appended_is_file_modified(venv):
    core = venv.site_packages / "demo" / "core.py"
    with core.open("ab") as f:
        f.write(b"#")
    result = audit_files(site(venv))
    assert result.code == 1
    (finding,) = findings(result, "file-modified")
    assert finding["subject"] == "demo-pkg"
    assert finding["severity"] == "high"
    (entry,) = finding["evidence"]["files"]
    assert entry["path"].endswith("/demo/core.py")
    assert entry["actual_size"] == entry["recorded_size"] + 1
    assert entry["actual"] == hashlib.sha256(core.read_bytes()).hexdigest()


def test_deleted_file_is_file_missing(venv):
    (venv.site_packages / "demo" / "data.txt").unlink()
    result = audit_files(site(venv))
    assert result.code == 1
    (finding,) = findings(result, "file-missing")
    assert finding["subject"] == "demo-pkg"
    assert "data.txt" in finding["message"]


def test_console_script_outside_site_packages_is_verified(venv):
    script = venv.bin / "demo-cli"
    assert script.exists()
    text = script.read_text().splitlines(keepends=True)
    script.write_text("".join([*text[:1], "import os\n", *text[1:]]))
    result = audit_files(site(venv))
    (finding,) = findings(result, "file-modified")
    assert finding["severity"] == "high"
    assert finding["evidence"]["files"][0]["path"] == str(script)


def test_relocated_shebang_is_its_own_category(venv, tmp_path):
    moved = tmp_path / "moved"
    shutil.move(str(venv.path), moved)
    script = moved / "bin" / "demo-cli"
    first, rest = script.read_bytes().split(b"\n", 1)
    assert first.startswith(b"#!" + str(venv.path).encode())
    script.write_bytes(first.replace(str(venv.path).encode(), str(moved).encode()) + b"\n" + rest)
    new_site = moved / venv.site_packages.relative_to(venv.path)
    result = audit_files(str(new_site))
    (finding,) = findings(result, "file-modified")
    assert finding["severity"] == "medium"
    assert finding["evidence"]["category"] == "shebang"


def test_vendor_wheel_replaced_by_community_with_pip(venv, wheelhouse, tmp_path):
    from tests.audit.conftest import write_lock

    # `torch==2.4.1` would match the vendor build too (local labels match a bare pin): name the file
    install(venv, wheelhouse, "--force-reinstall", str(wheelhouse / "torch-2.4.1-py3-none-any.whl"))
    assert venv.installed()["torch"] == "2.4.1"
    lock = write_lock(
        tmp_path / "pylock.img.toml",
        [("torch", VENDOR_TORCH), ("demo-pkg", "1.0"), ("helper", "2.0")],
    )
    result = audit_files(site(venv), "--lock", str(lock))
    assert result.code == 1
    rules = {f["rule"]: f for f in findings(result)}
    assert rules["vendor-replaced"]["severity"] == "critical"
    assert rules["drift-version"]["evidence"] == {
        "installed": "2.4.1",
        "locked": VENDOR_TORCH,
        "lock": str(lock),
    }
    # pip rewrote RECORD with the community files: they verify
    assert "file-modified" not in rules


def test_uv_install_without_pyc_rows_detects_tampering(tmp_path, wheelhouse):
    v = make_venv(tmp_path / "uvenv", with_pip=False)
    v.uv_pip("install", "--no-deps", "--no-index", "--find-links", str(wheelhouse), "demo-pkg")
    assert (v.site_packages / "demo_pkg-1.0.dist-info" / "INSTALLER").read_text().strip() == "uv"
    clean = audit_files(site(v))
    assert clean.json()["facts"]["verification"]["skipped_hashless_pyc"] == 0
    assert not findings(clean, "file-modified")
    with (v.site_packages / "demo" / "__init__.py").open("ab") as f:
        f.write(b"\n")
    assert findings(audit_files(site(v)), "file-modified")


def _rewrite_record(dist_info: Path, edit) -> None:
    record = dist_info / "RECORD"
    rows = record.read_text().splitlines()
    record.write_text("\n".join(edit(r) for r in rows) + "\n")


def test_record_categories(venv):
    sp = venv.site_packages

    # hex digests (seen in Debian's blinker): accepted, reported as nonconforming
    def to_hex(row: str) -> str:
        path, digest, size = row.split(",")
        if path == "helper.py":
            raw = base64.urlsafe_b64decode(digest.split("=", 1)[1] + "==")
            return f"{path},sha256={raw.hex()},{size}"
        return row

    _rewrite_record(sp / "helper-2.0.dist-info", to_hex)
    # a hashless row that is not a .pyc
    _rewrite_record(
        sp / "demo_pkg-1.0.dist-info",
        lambda r: "demo/data.txt,," if r.startswith("demo/data.txt,") else r,
    )
    # a distro-owned dist: no INSTALLER
    (sp / "torch-2.4.1+das.opt1.dtk25041.dist-info" / "INSTALLER").unlink()
    # an egg-info without RECORD
    (sp / "legacy-0.1.egg-info").mkdir()
    (sp / "legacy-0.1.egg-info" / "PKG-INFO").write_text("Name: legacy\nVersion: 0.1\n\n")
    # an editable install as pip records it (PEP 610)
    (sp / "helper-2.0.dist-info" / "direct_url.json").write_text(
        '{"url": "file:///src/helper", "dir_info": {"editable": true}}'
    )
    result = audit_files(site(venv))
    cats = {(f["subject"], f["evidence"]["category"]): f for f in findings(result)}
    assert cats[("helper", "nonconforming")]["severity"] == "info"
    assert cats[("helper", "editable")]["rule"] == "record-unverifiable"
    assert cats[("demo-pkg", "hashless")]["severity"] == "low"
    assert cats[("torch", "distro")]["severity"] == "info"
    assert cats[("legacy", "no-record")]["rule"] == "record-unverifiable"
    assert result.json()["facts"]["verification"]["matched"] > 0
    assert not findings(result, "file-modified")


def test_threads_and_processes_agree(venv):
    from dtkguard.audit.verify import verify
    from dtkguard.env.environment import from_paths

    (venv.site_packages / "demo" / "core.py").write_text("tampered\n")
    env = from_paths([venv.site_packages])
    a = verify(env.dists, env.root, executor="thread", workers=2)
    b = verify(env.dists, env.root, executor="process", workers=2)
    c = verify(env.dists, env.root, workers=1)
    assert a.issues and sorted(a.issues, key=str) == sorted(b.issues, key=str)
    assert sorted(c.issues, key=str) == sorted(a.issues, key=str)
    assert a.matched == b.matched == c.matched


def test_progress_bar_on_a_terminal(venv, monkeypatch):
    from dtkguard.audit.verify import verify
    from dtkguard.env.environment import from_paths

    monkeypatch.delenv("DTKGUARD_NO_PROGRESS")
    read, write = os.openpty()
    stream = os.fdopen(write, "w")
    env = from_paths([venv.site_packages])
    result = verify(env.dists, env.root, progress_stream=stream)
    stream.flush()
    data = os.read(read, 65536)
    stream.close()
    os.close(read)
    assert result.matched > 0
    assert b"verifying files" in data


PLAIN = "#!python\n# a plain launcher\nfrom plain.core import main\n\nmain()\n"


def _plain_venv(tmp_path: Path, script: str) -> tuple[Path, Path]:
    """A venv with a dist whose script is a ``.data/scripts`` file (pip points its first line
    at the venv), moved elsewhere with that line rewritten: (the moved site, the script)."""
    from tests.support.wheels import build_wheel

    body = {"plain/__init__.py": "", "plain/core.py": "def main():\n    return 0\n"}
    wheel = build_wheel(
        tmp_path / "wh", "plain", "1.0", files={**body, "plain-1.0.data/scripts/plain": script}
    )
    v = make_venv(tmp_path / "venv")
    v.pip("install", "--no-deps", "--no-index", str(wheel))
    moved = tmp_path / "moved"
    shutil.move(str(v.path), moved)
    launcher = moved / "bin" / "plain"
    first, rest = launcher.read_bytes().split(b"\n", 1)
    assert first == b"#!" + str(v.path / "bin" / "python").encode()
    launcher.write_bytes(first.replace(str(v.path).encode(), str(moved).encode()) + b"\n" + rest)
    return moved / v.site_packages.relative_to(v.path), launcher


def test_relocated_plain_launcher_of_its_own_dist_is_a_shebang(tmp_path):
    new_site, _ = _plain_venv(tmp_path, PLAIN)
    (finding,) = findings(audit_files(str(new_site)), "file-modified")
    assert finding["severity"] == "medium"
    assert finding["evidence"]["category"] == "shebang"


def test_relocated_plain_launcher_calling_anything_else_is_modified(tmp_path):
    for n, script in enumerate(
        (
            PLAIN.replace("plain.core", "subprocess").replace("main", "run"),  # not its dist's
            PLAIN + "import os\n",  # one more line
            PLAIN.replace("main()", "main(); main()"),
        )
    ):
        new_site, _ = _plain_venv(tmp_path / str(n), script)
        (finding,) = findings(audit_files(str(new_site)), "file-modified")
        assert finding["severity"] == "high", script
