"""The command line exits without the interpreter's teardown (`dtkguard.util.exit.exit_now`),
and loses nothing by it: the report and the exit code are whole, ``atexit`` handlers run, and
whenever the teardown has work to do (a thread still running, a tracer attached, a stream that
does not flush) it exits the usual way. Real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.cli import REPO, dtkguard
from tests.support.sitetree import add_dist


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTHONUNBUFFERED", None)  # stdout buffered, as on a pipe it is
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


#: what a command that closes every file it writes runs (`check` does)
FAST = "from dtkguard.util.exit import exit_now, skip_teardown\nskip_teardown()\n"

#: an object whose finaliser only the interpreter's teardown runs
_TEARDOWN_PROBE = (
    "import sys\n"
    "class Probe:\n"
    "    def __del__(self):\n"
    "        sys.stdout.write('teardown\\n'); sys.stdout.flush()\n"
    "probe = Probe()\n"
)


def test_a_check_with_findings_exits_1_with_its_whole_report(tmp_path: Path) -> None:
    site = tmp_path / "site"
    add_dist(site, "nvidia-cublas-cu12", "12.4.5.8", files={"nvidia/cublas/x.py": "x = 1\n"})
    for n in range(40):  # a report of some size: all of it reaches the pipe
        add_dist(site, f"pkg{n}", "1.0", files={f"pkg{n}.py": "x = 1\n"})
    proc = dtkguard("check", "--path", site, "--format", "json", timeout=120)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert "denied-package" in {f["rule"] for f in report["findings"]}
    assert report["facts"]["dists"] == 41
    written = tmp_path / "report.json"
    proc = dtkguard("check", "--path", site, "--format", "json", "-o", written, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(written.read_text())["findings"] == report["findings"]


def test_atexit_handlers_run_and_streams_are_flushed_before_the_exit() -> None:
    proc = _python(
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stdout.write(' and the handler'))\n"
        + FAST
        + "sys.stdout.write('the output'); sys.stderr.write('a note')\n"
        "exit_now(3)\n"
    )
    assert proc.returncode == 3
    assert proc.stdout == "the output and the handler"
    assert proc.stderr == "a note"


def test_without_a_reason_for_it_the_teardown_is_skipped() -> None:
    proc = _python(_TEARDOWN_PROBE + FAST + "exit_now(0)\n")
    assert (proc.returncode, proc.stdout) == (0, "")
    proc = _python(_TEARDOWN_PROBE + "raise SystemExit(0)\n")  # what the interpreter does
    assert (proc.returncode, proc.stdout) == (0, "teardown\n")


def test_a_command_that_did_not_say_so_gets_the_usual_exit() -> None:
    proc = _python(_TEARDOWN_PROBE + "from dtkguard.util.exit import exit_now\nexit_now(7)\n")
    assert (proc.returncode, proc.stdout) == (7, "teardown\n")


def test_a_running_thread_is_waited_for(tmp_path: Path) -> None:
    done = tmp_path / "done"
    proc = _python(
        "import threading, time\n"
        "def late():\n"
        f"    time.sleep(0.3); open({str(done)!r}, 'w').write('ok')\n"
        "threading.Thread(target=late).start()\n" + FAST + "exit_now(4)\n"
    )
    assert proc.returncode == 4, proc.stderr
    assert done.read_text() == "ok"


def test_a_tracer_or_profiler_gets_the_usual_exit() -> None:
    """(coverage and cProfile write their results at teardown)"""
    for attach in ("sys.settrace(lambda *a: None)", "sys.setprofile(lambda *a: None)", ""):
        proc = _python(
            f"import sys\n{attach}\n"
            + FAST
            + "try:\n    exit_now(5)\nexcept SystemExit as exc:\n    print('usual', exc.code)\n"
        )
        # the usual exit raises SystemExit (caught here: status 0); the other one is immediate
        want = (0, "usual 5\n") if attach else (5, "")
        assert (proc.returncode, proc.stdout) == want, (attach, proc.stderr)


def test_a_stream_that_does_not_flush_exits_as_the_interpreter_does() -> None:
    code = "import sys\nsys.stdout.write('x' * 100)\nsys.stdout = None\n"
    want = _python(code + "raise SystemExit(6)\n")
    proc = _python(code + FAST + "exit_now(6)\n")
    assert (proc.returncode, proc.stdout) == (want.returncode, want.stdout) == (6, "x" * 100)
    closed = "import os, sys\nr, w = os.pipe(); os.close(r); os.dup2(w, 1)\nprint('lost')\n"
    want = _python(closed + "raise SystemExit(0)\n")
    proc = _python(closed + FAST + "exit_now(0)\n")
    assert proc.returncode == want.returncode == 120


def test_check_in_a_process_leaves_the_collector_as_it_found_it(tmp_path: Path) -> None:
    """check pauses the cycle collector while it runs (its objects are freed by their counts);
    called as a library, it gives the caller's collector back, on or off, findings or not."""
    import gc

    from tests.support.cli import run_in_process

    site = tmp_path / "site"
    add_dist(site, "nvidia-cublas-cu12", "12.4.5.8", files={"nvidia/cublas/x.py": "x = 1\n"})
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            result = run_in_process("check", "--path", str(site), "--format", "json")
            assert result.code == 1, result.err
            assert gc.isenabled() is enabled
            result = run_in_process("check", "--path", str(tmp_path / "none"))
            assert result.code == 3, result.err  # no such target: an error on the way out
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


_COLLECTIONS = (
    "import atexit, gc, sys\n"
    "seen = []\n"
    "gc.callbacks.append(lambda phase, info: phase == 'start' and seen.append(info))\n"
    "atexit.register(lambda: print('collections', len(seen), 'enabled', gc.isenabled()))\n"
    "from dtkguard.cli import console_main  # as scripts/dtkguard does\n"
    "seen.clear()  # what importing the command line collected came before console_main\n"
)


def test_the_command_line_collects_no_cycles_of_its_start_nor_of_a_check(tmp_path: Path) -> None:
    """What the start loads lives until the exit (frozen out of every collection), and check
    does not turn the collector back on just before an exit without teardown: from
    `console_main` (the ``dtkguard`` script) a check collects nothing at all; another command
    gets the collector back."""
    site = tmp_path / "site"
    add_dist(site, "rich", "13.0", files={"rich/__init__.py": "x = 1\n"})
    argv = ["dtkguard", "check", "--path", str(site), "--format", "json", "-o", os.devnull]
    proc = _python(_COLLECTIONS + f"sys.argv = {argv!r}\nconsole_main()\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "collections 0 enabled False\n"
    argv = ["dtkguard", "completion", "bash"]
    proc = _python(_COLLECTIONS + f"sys.argv = {argv!r}\nconsole_main()\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("enabled True\n"), proc.stdout[-200:]
