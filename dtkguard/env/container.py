"""A running container as a target: ask ``docker`` or ``podman`` for its main PID, read /proc.

``docker inspect -f '{{.State.Pid}}' NAME`` prints the PID (``0`` when the container is
stopped); an unknown name exits 1 with ``Error: No such object: NAME`` (podman:
``Error: no such object: "NAME"``). Only that one command runs.
"""

from __future__ import annotations

import shutil
import subprocess

from dtkguard.errors import TargetError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.env.environment import Environment

RUNTIMES = ("docker", "podman")
TIMEOUT = 30


def find_runtime() -> str:
    """The first of docker, podman on PATH; `TargetError` when there is neither."""
    for name in RUNTIMES:
        path = shutil.which(name)
        if path:
            return path
    raise TargetError(
        "--container needs docker or podman on PATH and neither was found "
        "(use --pid with the container's main process instead)"
    )


def container_pid(name: str) -> tuple[int, str]:
    """(main PID, runtime name) of a running container."""
    runtime = find_runtime()
    label = runtime.rsplit("/", 1)[-1]
    try:
        proc = subprocess.run(
            [runtime, "inspect", "-f", "{{.State.Pid}}", name],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            errors="replace",
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise TargetError(f"{label} inspect {name} failed: {exc}") from None
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["(no message)"])[0]
        if "no such" in first.lower():
            raise TargetError(f"{label}: no such container: {name}")
        raise TargetError(f"{label} inspect {name} failed: {first}")
    text = proc.stdout.strip().splitlines()
    try:
        pid = int(text[0]) if text else -1
    except ValueError:
        raise TargetError(f"{label} inspect {name}: unexpected output {text[0]!r}") from None
    if pid <= 0:
        raise TargetError(f"container {name} is not running ({label} reports no PID)")
    return pid, label


def from_container(name: str, proc_root: str = "/proc") -> Environment:
    """The Environment of a running container, through its main process."""
    from dtkguard.env.process_target import from_pid
    from dtkguard.lightclass import replace

    pid, runtime = container_pid(name)
    env = from_pid(pid, proc_root)
    env.target = replace(env.target, kind="container", container=name, runtime=runtime)
    return env
