"""The Docker build-stage gate, run against image-like root directories (test_docker_engine.py
builds the same Dockerfile on a real engine).

The Dockerfile's gate step runs `plugins/docker/gate.sh`; the tests read that RUN line from the
Dockerfile, take its settings, and run the same script with ``DTKGUARD_ROOT`` pointing at a root
built like the DAS image (dist-info trees under /usr/local/lib/python3.10/dist-packages and
dtkguard's own venv under /opt/dtkguard).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fleet.factory import write_lock

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "plugins" / "docker"
SITE = "usr/local/lib/python3.10/dist-packages"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\s*\\\n\s*", " ", (DOCKER / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _args() -> dict[str, str]:
    return dict(rest.split("=", 1) for word, rest in _instructions() if word == "ARG")


def _dist(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("pip\n")


@pytest.fixture
def image_root(tmp_path: Path) -> Path:
    """A DAS-like image root: the vendor stack, plus dtkguard in its own venv."""
    root = tmp_path / "image"
    site = root / SITE
    from tests.support.policies import load_policy

    vendor = load_policy("dtk-25.04.1").vendor  # every vendor build of the DAS 25.04.1 image
    for name, version in [*vendor.items(), ("numpy", "1.26.4"), ("transformers", "4.51.3")]:
        _dist(site, name, version)
    venv = root / "opt" / "dtkguard"
    (venv / "pyvenv.cfg").parent.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.10.12\n")
    _dist(venv / "lib" / "python3.10" / "site-packages", "dtkguard", "0.1.0")
    return root


def _gate(
    root: Path, gate: Path = DOCKER / "gate.sh", **extra: str
) -> subprocess.CompletedProcess[str]:
    """Run the gate the way the Dockerfile's last RUN does, against ``root``."""
    run = [rest for word, rest in _instructions() if word == "RUN" and "gate.sh" in rest]
    assert len(run) == 1
    words = shlex.split(run[0])
    settings = dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("/"))
    args = _args()
    settings = {
        k: re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], v) for k, v in settings.items()
    }
    settings.pop("DTKGUARD_PYTHON")  # the image's python does not exist here: read the root
    assert "DTKGUARD_LOCK" not in settings  # the lock is optional: found beside gate.sh
    if gate == DOCKER / "gate.sh":
        extra.setdefault("DTKGUARD_LOCK", "")  # not a pylock.toml left in this checkout
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DTKGUARD", "PIP_"))}
    env.update(settings, DTKGUARD=f"{sys.executable} -m dtkguard", PYTHONPATH=str(REPO))
    env.update(DTKGUARD_ROOT=str(root), **extra)
    return subprocess.run([str(gate)], env=env, capture_output=True, text=True, timeout=120)


def test_dockerfile_has_the_three_steps():
    steps = _instructions()
    base = _args()["BASE"]
    assert steps[0] == ("ARG", f"BASE={base}") and ("FROM", "${BASE}") in steps
    first = base.split("/")[0]
    assert "." not in first and ":" not in first, "BASE must not name a registry host"
    assert "dtk25.04.1" in base
    runs = [rest for word, rest in steps if word == "RUN"]
    assert runs[0].startswith("${PYTHON} -m venv /opt/dtkguard && /opt/dtkguard/bin/pip install")
    assert runs[1].startswith("dtkguard guard install --python ${PYTHON}")
    assert runs[-1].endswith("/opt/dtkguard/gate.sh")
    copies = [rest.split() for word, rest in steps if word == "COPY"]
    assert ["gate.sh", "pylock.tom[l]", "/opt/dtkguard/"] in copies  # the lock when there is one
    assert ("ENV", "NO_COLOR=1") in steps


def test_gate_passes_a_clean_image(image_root):
    proc = _gate(image_root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check, gate = proc.stdout.splitlines()
    assert check.startswith("dtkguard check: PASS (no findings) policy=dtk-25.04.1")
    assert gate == (
        f"dtkguard gate: passed: checked {image_root} against policy dtk-25.04.1 "
        "and no lock (drift not checked)"
    )
    assert proc.stderr == f"dtkguard check: judged {image_root} (--root)\n"


def test_gate_fails_the_build_with_one_line_a_finding(image_root):
    site = image_root / SITE
    for info in site.glob("torch-*.dist-info"):
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.4.1\n")
    _dist(site, "nvidia-cudnn-cu12", "9.1.0.70")
    _dist(site, "nvidia-nccl-cu12", "2.20.5")
    proc = _gate(image_root)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    # the answer first (what happened), then the findings grouped, then one line a finding
    assert lines[0] == (
        "What happened: torch is community 2.4.1, not 2.4.1+das.opt1.dtk25041; "
        "2 nvidia-* wheel(s) added"  # no baseline in the image: nothing says it was replaced
    )
    details = lines[lines.index("Details:") + 1 : -1]
    assert [line.split()[:3] for line in details] == [
        ["CRITICAL", "denied-package", "nvidia-cudnn-cu12:"],
        ["CRITICAL", "denied-package", "nvidia-nccl-cu12:"],
        ["CRITICAL", "vendor-replaced", "torch:"],
    ]
    assert lines[-1].startswith("dtkguard check: FAIL (3 critical)")
    judged, last = proc.stderr.splitlines()  # the gate's line is the last one: what it checked
    assert judged == f"dtkguard check: judged {image_root} (--root)"
    assert last.endswith(
        f"checked {image_root} against policy dtk-25.04.1 and no lock (drift not checked)"
    )
    assert "\x1b[" not in proc.stdout + proc.stderr  # no colour in a build log
    assert last.startswith("dtkguard gate: policy violation, build stopped")


def test_gate_threshold_and_bad_policy(image_root):
    _dist(image_root / SITE, "nvidia-nccl-cu12", "2.20.5")
    assert _gate(image_root).returncode == 1
    proc = _gate(image_root, DTKGUARD_POLICY="/nonexistent/policy.toml")
    assert proc.returncode == 2
    first, second = proc.stderr.splitlines()
    assert first.startswith("dtkguard: error: ") and "/nonexistent/policy.toml" in first
    assert second.startswith("dtkguard gate: dtkguard could not check the image (exit 2): ")


def test_gate_with_a_lock(image_root, tmp_path):
    from tests.support.policies import load_policy

    pins = {**load_policy("dtk-25.04.1").vendor, "numpy": "1.26.4", "transformers": "4.51.3"}
    lock = write_lock(tmp_path / "pylock.image.toml", pins)
    proc = _gate(image_root, DTKGUARD_LOCK=str(lock))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pins["numpy"] = "2.0.0"
    write_lock(lock, pins)
    proc = _gate(image_root, DTKGUARD_LOCK=str(lock), DTKGUARD_FAIL_ON="medium")
    assert proc.returncode == 1
    assert any(
        line.split()[1:3] == ["drift-version", "numpy:"] for line in proc.stdout.splitlines()
    )


def test_gate_finds_the_lock_beside_it_or_checks_without(image_root, tmp_path):
    """The Dockerfile copies pylock.toml next to gate.sh only when the build context has one:
    the gate uses it then, and checks the policy alone otherwise, saying which in its last line."""
    import shutil

    from tests.support.policies import load_policy

    gate = tmp_path / "opt-dtkguard" / "gate.sh"
    gate.parent.mkdir()
    shutil.copy2(DOCKER / "gate.sh", gate)
    without = _gate(image_root, gate)
    assert without.returncode == 0, without.stderr
    assert without.stdout.splitlines()[-1].endswith("and no lock (drift not checked)")
    pins = {**load_policy("dtk-25.04.1").vendor, "numpy": "2.0.0", "transformers": "4.51.3"}
    write_lock(gate.parent / "pylock.toml", pins)
    found = _gate(image_root, gate)
    assert found.returncode == 1, found.stdout + found.stderr  # numpy drifted from the lock
    assert any(
        line.split()[1:3] == ["drift-version", "numpy:"] for line in found.stdout.splitlines()
    )
    assert found.stderr.splitlines()[-1].endswith(f"and lock {gate.parent / 'pylock.toml'}")
