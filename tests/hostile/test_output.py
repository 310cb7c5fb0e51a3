"""``-o`` onto a folder, into a missing folder, a read-only folder or a full device: exit 2 with
one line naming the file and ``-o``, in every command that has ``-o``; nothing half-written."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.fleet.factory import node_report, write, write_lock
from tests.hostile.conftest import mount, one_error_line, run


def _commands(tmp_path: Path, site: Path) -> dict[str, list[str]]:
    lock = write_lock(tmp_path / "pylock.in.toml", {"torch": "2.4.1+das.opt1.dtk25041"})
    model = tmp_path / "model.safetensors"
    header = b'{"w": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]}}'
    model.write_bytes(struct.pack("<Q", len(header)) + header + b"\0\0")
    report = write(tmp_path / "node.json", node_report("a"))
    return {
        "check": ["check", "--path", str(site)],
        "audit": ["audit", "--path", str(site)],
        "scan-model": ["scan-model", str(model)],
        "export": ["export", "requirements", str(lock)],
        "lock": ["lock", "--from-env", "--path", str(site)],
        "report merge": ["report", "merge", str(report)],
    }


@pytest.fixture
def targets(tmp_path: Path, mounts) -> dict[str, Path]:
    """name -> an -o path that cannot be written (named pylock.*.toml, so `lock` takes it)."""
    folder = tmp_path / "a-folder.pylock.x.toml"
    folder.mkdir()
    (tmp_path / "dev").mkdir()
    full = tmp_path / "dev" / "pylock.full.toml"
    full.symlink_to("/dev/full")
    ro = tmp_path / "ro"
    ro.mkdir()
    out = {
        "folder": Path(str(folder).replace("a-folder.pylock.x.toml", "pylock.dir.toml")),
        "missing": tmp_path / "no-such-folder" / "pylock.x.toml",
        "full device": full,
    }
    out["folder"].mkdir()
    mount(mounts, "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(ro))
    out["read-only"] = ro / "pylock.x.toml"
    return out


@pytest.mark.parametrize(
    "command", ["check", "audit", "scan-model", "export", "lock", "report merge"]
)
def test_unwritable_output_is_one_line_exit_2(tmp_path, cache, site, targets, command):
    argv = _commands(tmp_path, site)[command]
    for name, out in targets.items():
        proc = run(*argv, "-o", str(out), cache=cache)
        assert proc.returncode == 2, (name, proc.stderr)
        line = one_error_line(proc)
        # `lock` checks its folder before resolving: it names the folder
        assert line.startswith((f"{out}: -o: cannot write output: ", f"{out.parent}: -o: ")), (
            name,
            line,
        )
    assert not any(p.name.endswith(".tmp") for p in tmp_path.rglob("*")), "a temp file was left"
