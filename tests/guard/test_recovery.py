"""Recovery that respects what the user chose (issue 26), through the commands a user types.

The README's recovery recipe, run top to bottom on a real terminal (a pty) on a venv where
`dtkpip install accelerate` was approved and then `pip install vllm==0.9.2` was forced through
plain pip: it ends with the vendor builds back byte for byte, accelerate still installed, no
warning at `import torch`, and `undo` and `history` telling the truth. Around it: the baseline
follows approved changes (and `--to guard-install` keeps the old meaning), restore and undo ask
before destroying (a pty answers; without one they refuse, exit 2), a refused undo is decided
before anything is printed or journalled, and the baseline's digest in the manifest follows.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.guard.conftest import TORCH, Guarded, _build
from tests.guard.test_restore import OVERRIDE, files, verify_clean
from tests.support.cache import PIP_VERSIONS
from tests.support.cli import REPO
from tests.support.readme import code_blocks
from tests.support.reports import DAS_25041
from tests.support.venvs import hermetic_env

pytestmark = pytest.mark.wheel_cache

PROMPT = b"Proceed (y/N)? "


@pytest.fixture
def env(tmp_path: Path, request: pytest.FixtureRequest) -> Guarded:
    """A new guarded venv, newest pip, whose vendor builds have their requirements (the
    fixture's vendor vllm has none of its own: `vendor-deps-broken` would never be clean)."""
    inputs = ("guard_policy", "vendor_wheelhouse", "public_dir", "extra_wheelhouse")
    values = (request.getfixturevalue(n) for n in inputs)
    return _build(tmp_path / "venv", PIP_VERSIONS[-1], *values, with_vllm=False)


def on_tty(argv: list[str], env: dict[str, str], answer: str = "") -> tuple[int, str]:
    """Run ``argv`` with stdin, stdout and stderr on a new pseudo-terminal, answering
    ``answer`` to the first ``Proceed (y/N)?``; (exit code, everything it printed)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: its terminal is the pty
        os.execvpe(argv[0], argv, env)
    out, answered = b"", False
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal (it exited)
            break
        if not chunk:
            break
        out += chunk
        if not answered and PROMPT in out:
            os.write(fd, answer.encode() + b"\n")
            answered = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace").replace("\r", "")


def user_env(tmp_path: Path) -> dict[str, str]:
    """A person's shell: `dtkguard` on PATH (this checkout), no colour."""
    bin_dir = tmp_path / "user-bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "dtkguard"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m dtkguard "$@"\n')
    shim.chmod(0o755)
    return hermetic_env(
        PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHONPATH=str(REPO), NO_COLOR="1", TERM="dumb"
    )


def history(g: Guarded) -> list[dict]:
    proc = g.dtkguard("history", "--python", str(g.venv.python), "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def import_torch(g: Guarded) -> str:
    """What ``import torch`` prints in the guarded env (the tripwire's warning, if any)."""
    proc = subprocess.run(
        [str(g.venv.python), "-c", "import torch"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def baseline_of(g: Guarded) -> dict:
    return json.loads(g.store.baseline.read_text())


def recipe(python: str) -> list[str]:
    """The README's recovery recipe, one command a line, for this interpreter."""
    [block] = code_blocks("When it went wrong", "sh")
    return [
        line.split("#", 1)[0].strip().replace("/opt/conda/bin/python", python)
        for line in block.splitlines()
        if line.strip()
    ]


def approved_then_clobbered(g: Guarded, run_line: Callable) -> dict[str, str]:
    """The recipe's first line (the vault, while the env is right), `dtkpip install
    accelerate` (approved), then a `pip install vllm==0.9.2` forced through plain pip.
    Returns the installed set the approved install left."""
    code, out = run_line(recipe(str(g.venv.python))[0])
    assert code == 0, out
    proc = g.dtkpip("install", *g.index_args, "accelerate")
    assert proc.returncode == 0, proc.stderr
    approved = g.venv.installed()
    proc = g.pip("install", *g.index_args, "vllm==0.9.2", env=OVERRIDE)
    assert proc.returncode == 0, proc.stderr
    have = g.venv.installed()
    assert have["torch"] == "2.7.0" and have["vllm"] == "0.9.2" and "accelerate" in have
    assert f"Restore it with: dtkguard restore --python {g.venv.python}" in import_torch(g)
    return approved


def test_the_readme_recovery_recipe_top_to_bottom(env: Guarded, tmp_path: Path) -> None:
    g, py = env, str(env.venv.python)
    shell = user_env(tmp_path)

    def run_line(line: str, answer: str = "y") -> tuple[int, str]:
        return on_tty(["bash", "-c", line], shell, answer)

    approved = approved_then_clobbered(g, run_line)
    accelerate = approved["accelerate"]
    lines = recipe(py)[1:]
    assert [line.split()[1] for line in lines] == [
        "check", "restore", "restore", "history", "undo"
    ]  # fmt: skip
    check, dry, do, hist, undo = lines

    # check leads with the answer: what happened, and the one command that fixes it
    code, out = run_line(check)
    assert code == 1, out
    head = out.splitlines()[:3]
    assert head[0] == f"dtkguard check: judged {py} (--python)"
    assert head[1].startswith(f"What happened: torch {TORCH} replaced by community 2.7.0; ")
    assert "14 nvidia-* wheel(s) added" in head[1]
    assert head[2].startswith(f"Fix: dtkguard restore --python {py}")
    assert f"vllm is community 0.9.2, not {DAS_25041['vllm']}" in head[1]  # never held it
    groups = out[out.index("Findings by rule") : out.index("Details:")]
    assert groups.count("denied-package x14 [nvidia-") == 1, groups
    # the override's record is one short heading, not the list of all it let in again
    assert "HIGH override-used [guard]: guard override used (test: clobber on purpose)" in groups
    assert max(map(len, groups.splitlines())) < 400, groups

    # the plan keeps what dtkpip installed with the guard's approval
    code, out = run_line(dry)
    assert code == 0, out
    assert "14 nvidia-* CUDA wheel(s)" in out and "accelerate" not in out
    assert "added after the baseline, not through dtkpip or dtkuv" in out

    # asked first: no, then no terminal at all, change nothing
    clobbered = g.venv.installed()
    code, out = run_line(do, answer="n")
    assert code == 1 and PROMPT.decode() in out and "nothing was changed" in out, out
    proc = subprocess.run(["bash", "-c", do], env=shell, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [err] = proc.stderr.splitlines()
    assert "not on a terminal" in err and "--yes" in err
    assert g.venv.installed() == clobbered and len(history(g)) == 1

    code, out = run_line(do, answer="y")
    assert code == 0, out
    assert f"check: {py} matches its baseline again" in out
    assert g.venv.installed() == approved  # the vendor builds back, accelerate kept
    verify_clean(g)
    assert import_torch(g) == ""  # the tripwire's snapshot followed the reinstalled files
    assert g.dtkguard("check", "--python", py, "--policy", str(g.policy)).returncode == 0

    code, out = run_line(hist)
    assert code == 0, out
    assert "(rev 1)  dtkpip install" in out and f"+accelerate-{accelerate}" in out
    assert "(rev 2)  dtkguard restore" in out and "(rev 3)" not in out
    assert "-accelerate" not in out and f"torch  {{2.7.0 -> {TORCH}}}" in out

    # undo of the restore would put the clobber back: refused before anything is printed
    state, journal = files(g), history(g)
    code, out = run_line(undo)
    assert code == 1, out
    assert "transaction 2" in out and "cannot be undone without an override" in out
    assert "it would put back torch 2.7.0, which the policy refuses" in out
    assert f'dtkguard undo 2 --python {py} --override "reason"' in out
    assert "DTKGUARD_OVERRIDE" not in out and "  - remove" not in out  # no plan, no pip
    assert files(g) == state and history(g) == journal  # no history entry for a refusal

    # the way it names works; undoing that undo does the restore again, and ends as it did
    code, out = run_line(f'{undo} --override "look at it again"')
    assert code == 0 and g.venv.installed()["vllm"] == "0.9.2", out
    code, out = run_line(undo)  # removing vllm 0.9.2 is not removing a vendor build
    assert code == 1 and "the vendor build vllm" not in out, out
    assert "it would remove vllm 0.9.2 (the guard refuses removing vllm, a name" in out, out
    code, out = run_line(f'{undo} --override "restore again"')
    assert code == 0 and g.venv.installed() == approved, out
    assert import_torch(g) == ""
    proc = g.dtkguard("check", "--python", py, "--policy", str(g.policy))
    assert proc.returncode == 0, proc.stdout  # no override record left behind: archived again
    assert "override record(s) archived" in history(g)[-1]["note"]


def test_the_baseline_follows_approved_changes_and_undo(env: Guarded, tmp_path: Path) -> None:
    g, py = env, str(env.venv.python)
    before = g.venv.installed()
    proc = g.dtkpip("install", *g.index_args, "accelerate==1.6.0")
    assert proc.returncode == 0, proc.stderr
    added = sorted(set(g.venv.installed()) - set(before))
    assert "accelerate" in added and set(added) <= set(baseline_of(g)["dists"])
    assert set(baseline_of(g)["guard_install"]["dists"]) == set(before)
    # the guard's manifest vouches for the moved baseline: not tampered
    status = g.dtkguard("guard", "status", "--python", py, "--policy", str(g.policy))
    assert "tampered" not in status.stdout, status.stdout
    check = g.dtkguard("check", "--python", py, "--policy", str(g.policy), "-f", "json")
    assert check.returncode == 0, check.stdout
    assert "nothing to do" in g.dtkguard("restore", "--python", py, "--dry-run").stdout
    old = g.dtkguard("restore", "--python", py, "--dry-run", "--to", "guard-install").stdout
    assert "accelerate 1.6.0: added after `guard install`" in old, old

    # undo asks first: refused without a terminal (nothing changed, nothing journalled)
    proc = g.dtkguard("undo", "--python", py)
    assert proc.returncode == 2 and "--yes" in proc.stderr, proc.stdout + proc.stderr
    assert "accelerate" in g.venv.installed() and len(history(g)) == 1
    code, out = on_tty(
        [sys.executable, "-m", "dtkguard", "undo", "--python", py],
        user_env(tmp_path),
        "y",
    )
    assert code == 0, out
    assert "remove accelerate 1.6.0" in out and PROMPT.decode() in out
    assert g.venv.installed() == before
    assert "accelerate" not in baseline_of(g)["dists"]  # the baseline followed the undo
    assert "nothing to do" in g.dtkguard("restore", "--python", py, "--dry-run").stdout


def test_a_denied_suggestion_is_never_printed(env: Guarded) -> None:
    """Every command under "What to do instead" names only what the decision core allows."""
    from dtkguard.guard.baseline import allowed
    from dtkguard.policy.load import load_policy
    from dtkguard.rules.catalog import is_known

    policy = load_policy(str(env.policy), known_rule=is_known)
    requests = ("nvidia-nccl-cu12==2.20.5", "nvidia-nccl-cu12==2.21.5", "vllm==0.9.2")
    for request in (*requests, "pins-torch==2.0", "torch==2.7.0", "xformers"):
        proc = env.dtkpip("install", *env.index_args, request)
        assert proc.returncode == 1, proc.stderr
        instead = proc.stderr.split("What to do instead:", 1)[-1]
        for name, version in re.findall(r"'([A-Za-z0-9_.-]+)==([^']+)'", instead):
            assert allowed(policy, name, version), (name, version, proc.stderr)
        # "pick another release": only of a name the policy neither pins nor denies
        for name in re.findall(r"pick an? ([A-Za-z0-9_.-]+) release", instead):
            assert not policy.vendor_build(name) and not policy.deny_rule(name), instead
        # "ask for a vendor build": only where the policy would take one
        for name in re.findall(r"Ask for a vendor build of ([A-Za-z0-9_.-]+)", instead):
            rule = policy.deny_rule(name)
            assert rule is None or rule.vendor_builds_ok, (name, instead)
        if request.startswith("nvidia"):
            assert "'nvidia-nccl-cu12==" not in proc.stderr, proc.stderr
            assert "do not install nvidia-nccl-cu12: denied by the policy (" in instead


def test_check_judges_the_env_dtkpip_would(env: Guarded, tmp_path: Path) -> None:
    """Nothing active: the one guarded env, else one line saying so (exit 2); always named."""
    py = str(env.venv.python)
    empty = hermetic_env(XDG_STATE_HOME=str(tmp_path / "nobody"))
    proc = env.dtkguard("check", env=empty)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no environment is active" in proc.stderr and "dtkguard check --python" in proc.stderr
    state = os.environ["XDG_STATE_HOME"]  # the session's: `guard install` recorded the env
    mine = hermetic_env(XDG_STATE_HOME=str(tmp_path / "mine"))
    proc = env.dtkguard("guard", "install", "--python", py, "--policy", str(env.policy), env=mine)
    assert proc.returncode == 0, proc.stderr
    proc = env.dtkguard("check", "--policy", str(env.policy), env=mine)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"dtkguard check: judged {py} (the one guarded environment)" in proc.stderr
    active = hermetic_env(XDG_STATE_HOME=state, VIRTUAL_ENV=str(env.venv.path))
    proc = env.dtkguard("check", "--policy", str(env.policy), "-f", "markdown", env=active)
    assert f"judged {py} (the active environment)" in proc.stderr
    proc = env.dtkguard("check", "--python", py, "-f", "json", env=active)
    assert "judged" not in proc.stderr and json.loads(proc.stdout)["headline"]["groups"] == []


def test_true_words(env: Guarded) -> None:
    """A lock for another Python is one finding; pip, setuptools and wheel are never
    drift-extra; plain pip's refusal does not claim the env keeps what it no longer holds."""
    py = str(env.venv.python)
    lock = REPO / "lockfiles" / "pylock.das-25041-vllm.toml"  # requires-python ==3.10.*
    proc = env.dtkguard("check", "--python", py, "--lock", str(lock), "-f", "json")
    drift = [f for f in json.loads(proc.stdout)["findings"] if f["rule"].startswith("drift")]
    minor = ".".join(sys.version.split(".")[:2])
    if minor != "3.10":
        [one] = drift
        assert "the lock is for Python ==3.10.*" in one["message"] and minor in one["message"]
    assert not {"pip", "setuptools", "wheel"} & {f["subject"] for f in drift}

    assert "vllm" not in env.venv.installed()  # the policy pins it; this env does not hold it
    constraints = env.venv.path / "dtkguard" / "constraints.txt"
    proc = env.pip("install", *env.index_args, "-c", str(constraints), "vllm==0.9.2")
    assert proc.returncode == 1
    assert "this environment keeps vllm" not in proc.stderr
    assert f"the policy allows vllm only as {DAS_25041['vllm']}" in proc.stderr, proc.stderr


def test_an_approved_override_keeps_only_what_the_policy_allows(env: Guarded) -> None:
    """`dtkpip --override` is an approved transaction: the baseline takes in what the decision
    core allows of it (vllm's plain dependencies), never the community vllm, torch or the
    nvidia-* wheels; restore says why each of those goes, and keeps the rest."""
    g, py = env, str(env.venv.python)
    proc = g.dtkpip("--override", "hotfix INC-2", "install", *g.index_args, "vllm==0.9.2")
    assert proc.returncode == 0, proc.stderr
    clobbered = g.venv.installed()
    assert clobbered["vllm"] == "0.9.2" and clobbered["torch"] == "2.7.0"
    dists = baseline_of(g)["dists"]
    assert "fastapi" in dists and "vllm" not in dists and dists["torch"]["version"] == TORCH
    assert not [k for k in dists if k.startswith("nvidia-")]

    plan = g.dtkguard("restore", "--python", py, "--dry-run").stdout
    [vllm] = [line for line in plan.splitlines() if line.startswith("  - vllm ")]
    assert vllm == (
        f"  - vllm 0.9.2 (a community build): the policy allows vllm only as {DAS_25041['vllm']}"
    )  # it came through dtkpip: never "not through dtkpip or dtkuv"
    assert "fastapi" not in plan and "not through dtkpip or dtkuv" not in plan, plan

    proc = g.dtkguard("restore", "--python", py, "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    have = g.venv.installed()
    assert "vllm" not in have and have["torch"] == TORCH
    assert have["fastapi"] == clobbered["fastapi"]  # approved, allowed: kept
    assert import_torch(g) == ""


def test_undo_of_a_restore_to_guard_install_gives_the_approved_baseline_back(
    env: Guarded, tmp_path: Path
) -> None:
    """`restore --to guard-install` takes the baseline back there; its undo puts back what
    dtkuv installed with the guard's approval and the baseline with it: a later `restore`
    keeps it (and never says it came "not through dtkpip or dtkuv")."""
    g, py = env, str(env.venv.python)
    uv = hermetic_env(UV_CACHE_DIR=str(tmp_path / "uv-cache"))
    proc = g.dtkguard("uv", "--python", py, "pip", "install", *g.index_args, "accelerate", env=uv)
    assert proc.returncode == 0, proc.stderr
    approved = g.venv.installed()
    proc = g.dtkguard("restore", "--python", py, "--to", "guard-install", "--yes")
    assert proc.returncode == 0 and "accelerate" not in g.venv.installed(), proc.stdout
    assert "accelerate" not in baseline_of(g)["dists"]
    proc = g.dtkguard("undo", "--python", py, "--yes")
    assert proc.returncode == 0 and g.venv.installed() == approved, proc.stdout + proc.stderr
    assert "accelerate" in baseline_of(g)["dists"]
    plan = g.dtkguard("restore", "--python", py, "--dry-run").stdout
    assert "nothing to do" in plan and "not through dtkpip or dtkuv" not in plan, plan
    assert import_torch(g) == ""
