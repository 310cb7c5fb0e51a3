"""`--root` while the root changes under it: a site or a dist-info swapped for a link to a host
folder during the scan is resolved inside the root like any other link, never followed out.

A swapper process renames the real folders away and puts absolute links to a host folder in
their place, and back, as fast as it can, while `check` and `audit` read the root; the host
folder holds a site and a dist-info of a torch whose version carries `MARKER` (a torch that is
not the vendor build: every report names it), which no report may name.
The confined opener is also tested on its own, with openat2 and with the step-by-step walk.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from dtkguard.env import root as roots
from dtkguard.env.root import Root, open_in
from tests.audit.conftest import run_cli
from tests.audit.test_hostile_root import SITE, dist
from tests.support.cli import dtkguard

MARKER = "hostmarker"
RUNS = 12

_SWAPPER = textwrap.dedent(
    """
    import os, sys, time
    pairs = [(sys.argv[i], sys.argv[i + 1]) for i in range(1, len(sys.argv), 2)]
    while True:
        for real, outside in pairs:
            hidden = real + ".away"
            try:
                os.rename(real, hidden)
                os.symlink(outside, real)
                time.sleep(0.002)  # the link stays a while, then the real folder
                os.unlink(real)
                os.rename(hidden, real)
                time.sleep(0.002)
            except OSError:
                pass
    """
)


def _image(tmp_path: Path) -> tuple[Path, Path, list[tuple[Path, Path]]]:
    """(root, host folder, [(folder in the root, host folder it is swapped for)])."""
    root = tmp_path / "image"
    host = tmp_path / "host"
    site = root / SITE
    for n in range(20):
        dist(site, f"victim{n}", "1.0", {f"victim{n}/__init__.py": b""})
    host_site = host / "site"
    dist(host_site, "torch", f"2.4.1+{MARKER}", {"torch/__init__.py": b""})
    marker_info = host_site / f"torch-2.4.1+{MARKER}.dist-info"
    swaps = [(site, host_site)]
    swaps += [(site / f"victim{n}-1.0.dist-info", marker_info) for n in (3, 11, 17)]
    swaps.append((root / "usr/lib", host))
    return root, host, swaps


@pytest.fixture
def swapping(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """An image root whose folders a background process keeps swapping for host links."""
    root, host, swaps = _image(tmp_path)
    args = [str(p) for pair in swaps for p in pair]
    proc = subprocess.Popen([sys.executable, "-c", _SWAPPER, *args])
    try:
        yield root, host
    finally:
        proc.kill()
        proc.wait()
        for real, _ in swaps:  # leave the real folders in place
            hidden = Path(str(real) + ".away")
            if hidden.exists():
                if real.is_symlink():
                    real.unlink()
                hidden.rename(real)


def _runs(root: Path) -> Iterator[subprocess.CompletedProcess[str]]:
    for n in range(RUNS):
        args = ["check", "--root", str(root), "-f", "json", "--allow-empty"]
        if n % 2:
            args = ["audit", "--root", str(root), "--verify-files", "-f", "json", "--allow-empty"]
        yield dtkguard(*args, timeout=300)


def test_a_swap_during_the_scan_never_leads_out_of_the_root(swapping):
    root, _ = swapping
    for proc in _runs(root):
        assert "Traceback" not in proc.stderr, proc.stderr
        assert MARKER not in proc.stdout + proc.stderr


def test_the_step_by_step_walk_holds_under_the_swap(swapping, monkeypatch):
    """Without openat2 (an old kernel, a seccomp filter), the per-component walk."""
    root, _ = swapping
    monkeypatch.setattr(roots, "_openat2_works", False)
    for n in range(RUNS):
        result = run_cli("audit", "--root", str(root), "--verify-files", "-f", "json")
        assert roots._openat2_works is False
        assert MARKER not in result.out + result.err, n


@pytest.mark.strace
def test_no_descriptor_outside_the_root_under_the_swap(swapping, tmp_path):
    from tests.env.test_root_syscalls import _traced

    root, host = swapping
    for n in range(4):
        log = tmp_path / f"trace{n}"
        proc = _traced(["audit", "--root", str(root), "--verify-files", "-f", "json"], log)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert MARKER not in proc.stdout
        text = log.read_text(errors="replace")
        assert str(root) in text, "the trace saw nothing of the root: it would prove nothing"
        # every descriptor the kernel handed back or was handed: none is the host folder
        bad = [line for line in text.splitlines() if f"<{host}" in line]
        assert bad == [], "\n".join(bad[:5])


# --- the opener itself ---------------------------------------------------------------------


@pytest.fixture(params=["openat2", "stepwise"])
def mode(request, monkeypatch) -> str:
    if request.param == "stepwise":
        monkeypatch.setattr(roots, "_openat2_works", False)
    return request.param


def _read(top: Path, path: str, follow: bool = True) -> bytes:
    fd = open_in(str(top), os.path.join(top, path), os.O_RDONLY, follow=follow)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def test_links_resolve_inside_the_root(tmp_path, mode):
    top = tmp_path / "root"
    (top / "etc").mkdir(parents=True)
    (top / "etc/passwd").write_text("inside")
    (tmp_path / "passwd").write_text("outside")
    (top / "abs").symlink_to("/etc")
    (top / "up").symlink_to("../../../../etc")
    (top / "beside").symlink_to(tmp_path)
    (top / "loop1").symlink_to("loop2")
    (top / "loop2").symlink_to("loop1")
    (top / "final").symlink_to("/etc/passwd")
    assert _read(top, "abs/passwd") == b"inside"
    assert _read(top, "up/passwd") == b"inside"
    assert _read(top, "etc/../../../etc/passwd") == b"inside"
    assert _read(top, "final") == b"inside"
    with pytest.raises(FileNotFoundError):
        _read(top, "beside/passwd")  # the host folder, inside the root: not there
    with pytest.raises(OSError) as loop:
        _read(top, "loop1/x")
    assert loop.value.errno == errno.ELOOP
    with pytest.raises(OSError) as final:
        _read(top, "final", follow=False)
    assert final.value.errno == errno.ELOOP
    with pytest.raises(OSError):
        open_in(str(top), str(tmp_path / "passwd"), os.O_RDONLY)  # not a path of the root
    assert roots._openat2_works is (mode == "openat2")


def test_root_helpers_stat_list_and_readlink_confined(tmp_path, mode):
    top = tmp_path / "root"
    (top / "d").mkdir(parents=True)
    (top / "d/f").write_text("x")
    (top / "host").symlink_to(tmp_path)
    root = Root(top)
    assert root.listdir(top / "d") == ["f"]
    assert root.is_file(top / "d/f") and root.is_dir(top / "d")
    assert not root.exists(top / "host/root")  # /root of the root: absent
    assert root.lexists(top / "host") and not root.is_dir(top / "host")
    assert root.readlink(top / "host") == str(tmp_path)
    with pytest.raises(FileNotFoundError):
        root.listdir(top / "host")
