"""Ask uv what a ``uv pip install|sync|uninstall`` would do (``--dry-run``), as a :class:`Plan`.

uv has no machine-readable report for ``uv pip``: its dry run prints, on stderr, one line per
change (`` + name==version``, `` - name==version``, `` ~ name==version``, `` + name @ url``)
and ``Using Python X.Y.Z environment at: PATH``. The plan lists names and versions, not
metadata: a uv plan carries no ``Requires-Dist``.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

from dtkguard.decision import canonical
from dtkguard.errors import InputError
from dtkguard.guard.pipargs import VALUE_OPTIONS
from dtkguard.guard.plan import UNREADABLE, Plan, Planned

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: uv options (global and ``uv pip``) that take a value, on top of pip's
UV_VALUE_OPTIONS = VALUE_OPTIONS | frozenset(
    (
        "-p",
        "--config-file",
        "--directory",
        "--project",
        "--color",
        "--python-preference",
        "--allow-insecure-host",
        "--index",
        "--default-index",
        "--index-strategy",
        "--resolution",
        "--prerelease",
        "--fork-strategy",
        "--exclude-newer",
        "--exclude-newer-package",
        "--link-mode",
        "--reinstall-package",
        "-P",
        "--upgrade-package",
        "--no-build-package",
        "--no-binary-package",
        "--only-binary-package",
        "--no-build-isolation-package",
        "-b",
        "--build-constraints",
        "--overrides",
        "--excludes",
        "--constraints",
        "--requirements",
        "--python-platform",
        "--refresh-package",
        "--torch-backend",
        "--extra",
        "--config-setting",
        "--config-settings-package",
        "--no-sources-package",
        "--extra-build-dependencies",
    )
)

#: the first bytes of the ``uv`` shim `guard install --uv` writes (see `layers.uv_shim`)
SHIM_MARKER = "dtkguard-uv-shim"

_CHANGE = re.compile(r"^ ([-+~]) ([A-Za-z0-9][A-Za-z0-9._-]*)(?:==(\S+))?(?: @ (\S+))?")
_COUNT = re.compile(r"^Would (install|uninstall) (\d+) package")
_FOLDER_MODE = re.compile(r"^Using \S+ \S+ interpreter at")
_USING = re.compile(r"^Using .*? environment at:? (.+?)\s*$")


def is_shim(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return SHIM_MARKER.encode() in fh.read(512)
    except OSError:
        return False


def real_uv() -> str:
    """The real uv: ``$DTKGUARD_UV``, else the first ``uv`` on PATH that is no dtkguard shim,
    else the one beside dtkguard's own interpreter. Never a shim: the shim calls dtkuv."""
    given = os.environ.get("DTKGUARD_UV")
    if given:
        if is_shim(Path(given)):
            raise InputError(f"{given} is dtkguard's uv shim, not uv", field="DTKGUARD_UV")
        return given
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    dirs.append(os.path.dirname(sys.executable))
    for folder in dirs:
        path = Path(folder) / "uv"
        if path.is_file() and os.access(path, os.X_OK) and not is_shim(path):
            return str(path)
    raise InputError(
        "no uv found on PATH besides dtkguard's shim: install uv, or name it with DTKGUARD_UV",
        field="uv",
    )


def run_uv(
    uv: str,
    args: list[str],
    env: dict[str, str] | None = None,
    capture: bool = True,
    meanwhile: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real uv once (the one step that changes the environment, when not a dry run).
    ``meanwhile``: work of dtkguard's own done while uv runs (on another core), which depends
    on nothing uv changes; its errors are dropped: whoever needs its result does it again."""
    cmd, env = [uv, *args], env if env is not None else dict(os.environ)
    pipe = subprocess.PIPE if capture else None
    with subprocess.Popen(cmd, env=env, stdout=pipe, stderr=pipe, text=True) as proc:
        try:
            if meanwhile is not None:
                with contextlib.suppress(Exception):
                    meanwhile()
            out, err = proc.communicate()
        except BaseException:  # as subprocess.run: uv does not outlive an interrupted dtkuv
            proc.kill()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _version_of(url: str) -> str:
    """The version in a wheel URL's file name; empty when unknown (judged as unknown)."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        return str(parse_wheel_filename(url.rsplit("/", 1)[-1])[1])
    except (InvalidWheelFilename, ValueError):
        return ""


def uv_dry_run(
    uv: str,
    args: list[str],
    env: dict[str, str],
    requested: set[str],
    meanwhile: Callable[[], object] | None = None,
) -> Plan:
    """``uv ARGS`` (a ``uv pip ... --dry-run`` command line) read into a :class:`Plan`;
    ``requested``: the canonical names the user asked for; ``meanwhile``: `run_uv`'s."""
    proc = run_uv(uv, args, {**env, "NO_COLOR": "1"}, meanwhile=meanwhile)
    plan = Plan(proc.returncode, proc.stdout, proc.stderr)
    if proc.returncode != 0:
        return plan
    said = {"install": 0, "uninstall": 0}
    seen = {"install": 0, "uninstall": 0}
    for line in proc.stderr.splitlines():
        count = _COUNT.match(line)
        if count:
            said[count.group(1)] = int(count.group(2))
        m = _CHANGE.match(line)
        if not m:
            continue
        sign, name, version, url = m.groups()
        seen["install"] += sign in "+~"
        seen["uninstall"] += sign in "-~"
        if sign == "-":
            plan.remove.append(canonical(name))
            continue
        version = version or _version_of(url or "")
        plan.install.append(
            Planned(
                name=name,
                version=version,
                metadata={"name": name, "version": version},
                requested=canonical(name) in requested,
                is_direct=bool(url),
                url=url or "",
            )
        )
    if said != seen:  # fail closed: a plan dtkuv cannot read is not an empty plan
        plan.returncode = UNREADABLE
        plan.stderr += (
            f"dtkuv: cannot read uv's plan (it announces {said['install']} to install and "
            f"{said['uninstall']} to uninstall, dtkuv read {seen['install']} and "
            f"{seen['uninstall']}): nothing was changed\n"
        )
    return plan


def into_folder(plan: Plan) -> bool:
    """uv planned for a ``--target``/``--prefix`` folder (it names the interpreter only)."""
    return any(_FOLDER_MODE.match(line) for line in plan.stderr.splitlines())


def environment_of(plan: Plan) -> str | None:
    """The environment uv named (``Using Python ... environment at: PATH``), if it did."""
    for line in plan.stderr.splitlines():
        m = _USING.match(line)
        if m:
            return m.group(1)
    return None


def quiet_output(plan: Plan) -> str:
    """A dry run's output as the real run would have said it (no "Would ..." lines)."""
    return "".join(
        line for line in plan.stderr.splitlines(keepends=True) if not line.startswith("Would ")
    )
