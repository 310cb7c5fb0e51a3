# ruff: noqa
from tests.guard.test_baseline import env  # noqa: F401
from tests.guard.test_restore import OVERRIDE
import pytest
pytestmark = pytest.mark.wheel_cache

def test_explore(env):
    g = env
    p = g.dtkpip("install", *g.index_args, "accelerate")
    open("/tmp/rcv/accel.txt","w").write(p.stdout+p.stderr)
    p = g.pip("install", *g.index_args, "vllm==0.9.2", env=OVERRIDE)
    open("/tmp/rcv/clobber.txt","w").write(p.stdout[-3000:]+p.stderr)
    p = g.dtkguard("check", "--python", str(g.venv.python))
    open("/tmp/rcv/check.txt","w").write(p.stdout+p.stderr)
    p = g.dtkguard("check", "--python", str(g.venv.python), "-f", "json")
    open("/tmp/rcv/check.json","w").write(p.stdout)
    p = g.dtkguard("restore", "--python", str(g.venv.python), "--dry-run")
    open("/tmp/rcv/plan.txt","w").write(p.stdout+p.stderr)
    p = g.dtkguard("restore", "--python", str(g.venv.python), "--yes")
    open("/tmp/rcv/restore.txt","w").write(p.stdout+p.stderr)
    p = g.dtkguard("undo", "--python", str(g.venv.python))
    open("/tmp/rcv/undo.txt","w").write(p.stdout+p.stderr)
    p = g.dtkguard("history", "--python", str(g.venv.python))
    open("/tmp/rcv/history.txt","w").write(p.stdout+p.stderr)
    import subprocess
    p = subprocess.run([str(g.venv.python), "-c", "import torch"], capture_output=True, text=True)
    open("/tmp/rcv/import.txt","w").write(p.stdout+p.stderr)
    p = g.dtkguard("check", "--python", str(g.venv.python))
    open("/tmp/rcv/check2.txt","w").write(p.stdout+p.stderr)
