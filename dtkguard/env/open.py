"""Which environment a command reads, and opening it: the active one, another interpreter,
site-packages folders, an image root, a running process or a container."""

from __future__ import annotations

from dtkguard.record import record

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from dtkguard.env.environment import Environment


@record(frozen=True)
class TargetSpec:
    """At most one of the fields; none is the active environment."""

    python: str | None = None
    paths: tuple[str, ...] = ()
    root: str | None = None
    pid: str | None = None
    container: str | None = None


def open_target(spec: TargetSpec) -> Environment:
    """The Environment ``spec`` names (`TargetError`, exit 3, when it cannot be read)."""
    from dtkguard.util.console import info

    env = _open(spec)
    sites = ", ".join(map(str, env.sites)) or "none"
    info(f"target: {len(env.dists)} distributions in {len(env.sites)} site(s): {sites}")
    return env


def _open(spec: TargetSpec) -> Environment:
    from dtkguard.env import environment as envs

    if spec.pid:
        from dtkguard.env.process_target import from_pid

        return from_pid(spec.pid)
    if spec.container:
        from dtkguard.env.container import from_container

        return from_container(spec.container)
    if spec.root:
        return envs.from_root(spec.root)
    if spec.paths:
        return envs.from_paths(list(spec.paths))
    return envs.from_python(spec.python or envs.active_python())


def require_dists(env: Environment, allow_empty: bool) -> None:
    """`TargetError` (exit 3) when the target holds no distribution and ``allow_empty`` is off."""
    if env.dists or allow_empty:
        return
    from dtkguard.errors import TargetError

    raise TargetError(
        f"nothing to check at {env.target.where()}: no installed distributions found "
        "(--allow-empty to pass)"
    )
