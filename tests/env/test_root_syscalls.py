"""`--root` never reaches outside the root, watched at the system-call level with strace.

A Python-level spy sees only the calls it patches; strace sees every path the process hands the
kernel and, with ``-y``, the file each returned or passed descriptor really is. The roots here
hold absolute links to the host (``usr -> /usr``, as unpacked images do) and to a folder beside
the root; no call may resolve through them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.audit.test_hostile_root import SITE, dist, hostile  # noqa: F401 - fixture
from tests.support.cli import dtkguard
from tests.support.need import missing

pytestmark = pytest.mark.strace

STRACE = shutil.which("strace")
#: a quoted path argument, or a descriptor decoded by -y (``3</real/path>``)
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_FD = re.compile(r"(-?\d+|AT_FDCWD)<([^>]*)>")
#: calls that act on a final symlink itself rather than on what it names
_NOFOLLOW = re.compile(r"^(lstat|readlink|readlinkat|unlink|unlinkat|rename|renameat2?)\(")


def _traced(args: list[str], log: Path) -> subprocess.CompletedProcess[str]:
    if STRACE is None:
        missing("strace is not installed (apt-get install strace)")
    tracer = [STRACE, "-f", "-qq", "-y", "-s", "4096", "-o", log, "-e", "trace=%file,getdents64"]
    return dtkguard(*args, prefix=tracer, timeout=300)


def _inside(path: str, root: Path) -> bool:
    root_s = str(root)
    return path == root_s or path.startswith(root_s + os.sep)


_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. \S+ resumed>(.*)$")


def _calls(log: Path) -> list[str]:
    """The trace's lines, each call whole: with threads, strace splits a call that another
    thread interrupts into ``PID name(args <unfinished ...>`` and ``PID <... name resumed>rest``."""
    out: list[str] = []
    pending: dict[str, str] = {}
    for line in log.read_text(errors="replace").splitlines():
        if line.endswith(" <unfinished ...>"):
            pending[line.split(" ", 1)[0]] = line[: -len(" <unfinished ...>")]
            continue
        resumed = _RESUMED.match(line)
        if resumed and resumed.group(1) in pending:
            line = pending.pop(resumed.group(1)) + resumed.group(2)
        out.append(line)
    return out + list(pending.values())


def _escapes(log: Path, root: Path, outside: list[Path]) -> list[str]:
    """Trace lines that touch a path outside ``root`` by way of a path inside it, or that name
    an ``outside`` folder at all."""
    bad = []
    for line in _calls(log):
        call = line.split(" ", 1)[-1].lstrip()
        fds = dict(_FD.findall(call))
        paths = [p.encode().decode("unicode_escape") for p in _QUOTED.findall(call)]
        if call.startswith(("readlink(", "readlinkat(")):
            paths = paths[:1]  # the second string is the link's text, not a path used
        resolved = list(fds.values())
        if any(_inside(p, o) for o in outside for p in paths + resolved):
            bad.append(line)
            continue
        for p in paths:
            if not p:  # AT_EMPTY_PATH: the descriptor itself, checked where it was opened
                continue
            if p.startswith("/"):
                full = p
            else:  # relative to a directory descriptor (openat(3</dir>, "name"))
                dirfd = next(iter(fds.values()), None)
                if dirfd is None or not call.split("(", 1)[1].startswith(tuple(fds)):
                    continue
                full = os.path.join(dirfd, p)
            if not _inside(full, root):
                continue
            follows = not (_NOFOLLOW.match(call) or "NOFOLLOW" in call)
            real = os.path.realpath(full if follows else os.path.dirname(full))
            if not _inside(real, root):
                bad.append(line)
        ret = re.search(r"= (\d+)<([^>]*)>$", call)  # a descriptor opened through a root path
        if ret and any(_inside(p, root) for p in paths) and not _inside(ret.group(2), root):
            bad.append(line)
    return bad


def _image_with_host_links(tmp_path: Path) -> tuple[Path, Path]:
    """An image root whose ``usr`` is the host's ``/usr`` (absolute link) and whose ``opt`` and
    ``home`` are links to a folder beside the root holding a venv and a site of its own."""
    root = tmp_path / "image"
    beside = tmp_path / "beside"
    site = beside / "conda/lib/python3.10/site-packages"
    dist(site, "hostonly", "1.0", {"hostonly/__init__.py": b""})
    (beside / "venv").mkdir()
    (beside / "venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    root.mkdir()
    (root / "usr").symlink_to("/usr")
    (root / "opt").symlink_to(beside)
    (root / "home").symlink_to(beside)
    (root / "srv").mkdir()
    (root / "srv/app").symlink_to(beside / "venv")
    real = root / "var/lib/image/lib/python3.10/site-packages"
    dist(real, "inside", "1.0", {"inside/__init__.py": b""})
    (root / "app").mkdir()  # a venv home, with a real venv whose site is real
    (root / "app/pyvenv.cfg").write_text("home = /usr/bin\n")
    dist(root / "app/lib/python3.10/site-packages", "appdist", "1.0", {"appdist/x.py": b""})
    return root, beside


def test_host_links_in_an_image_root_are_never_followed(tmp_path):
    root, beside = _image_with_host_links(tmp_path)
    log = tmp_path / "trace"
    proc = _traced(["audit", "--root", str(root), "--verify-files", "-f", "json"], log)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    import json

    report = json.loads(proc.stdout)
    assert report["facts"]["sites"] == ["/app/lib/python3.10/site-packages"]
    assert "hostonly" not in proc.stdout
    lines = log.read_text(errors="replace")
    assert str(root) in lines, "the trace saw nothing of the root: it would prove nothing"
    escapes = _escapes(log, root, [beside])
    assert escapes == [], "\n".join(escapes)


def test_the_hostile_root_is_read_without_one_call_outside(hostile, tmp_path):  # noqa: F811
    log = tmp_path / "trace"
    root = hostile["root"]
    proc = _traced(["audit", "--root", str(root), "--verify-files", "-f", "json"], log)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    escapes = _escapes(log, root, [hostile["outside"]])
    assert escapes == [], "\n".join(escapes)


def test_the_checker_itself_catches_an_escape(tmp_path):
    """The trace check is not vacuous: a plain `cat` through the link is flagged."""
    root, beside = _image_with_host_links(tmp_path)
    log = tmp_path / "trace"
    target = root / "opt/venv/pyvenv.cfg"
    if STRACE is None:
        missing("strace is not installed (apt-get install strace)")
    subprocess.run(
        [STRACE, "-f", "-qq", "-y", "-o", str(log), "-e", "trace=%file", "cat", str(target)],
        capture_output=True, check=True,
    )  # fmt: skip
    assert _escapes(log, root, [beside])
