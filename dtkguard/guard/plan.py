"""Ask the target's own pip what an install would do: ``install --dry-run --report``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from dtkguard.decision import canonical
from dtkguard.lightclass import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping, Sequence

    from dtkguard.env.environment import Environment
    from dtkguard.util.json_types import JSON

#: pip's (all supported versions) and uv's words when the resolver cannot satisfy the request
_CONFLICT_MARKERS = (
    "ResolutionImpossible",
    "conflicting dependencies",
    "Cannot install",
    "No solution found when resolving dependencies",
)


@record
class Planned:
    """One distribution pip would install, from the report."""

    name: str
    version: str
    #: the report's ``metadata`` of the distribution (JSON, as pip wrote it)
    metadata: dict[str, JSON]
    requested: bool = False
    is_direct: bool = False
    url: str = ""

    @property
    def key(self) -> str:
        return canonical(self.name)

    @property
    def requires_dist(self) -> list[str]:
        return list(self.metadata.get("requires_dist") or ())

    def headers(self) -> dict[str, list[str]]:
        """The METADATA headers ``Dist`` and the rules read."""
        out: dict[str, list[str]] = {"name": [self.name], "version": [self.version]}
        if self.requires_dist:
            out["requires-dist"] = self.requires_dist
        if self.metadata.get("requires_python"):
            out["requires-python"] = [self.metadata["requires_python"]]
        return out


@record
class Plan:
    """The outcome of one dry run."""

    returncode: int
    stdout: str
    stderr: str
    install: list[Planned] = field(default_factory=list)
    #: the report's ``environment``: marker name -> value
    environment: dict[str, str] = field(default_factory=dict)
    constrained: bool = True
    #: names the run would remove and not put back (uv's plans: sync, uninstall, upgrades)
    remove: list[str] = field(default_factory=list)
    #: only part of the resolution: the requested packages and what the policy refuses of
    #: their requirements (`dtkguard.guard.free_plan`)
    partial: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def touches(self) -> list[str]:
        """The canonical names the plan installs or removes (only their files are snapshotted,
        and the baseline's follow looks only for them)."""
        return [p.key for p in self.install] + [canonical(r) for r in self.remove]

    @property
    def conflict(self) -> bool:
        """pip could not resolve (as opposed to: no such package, network error ...)."""
        return not self.ok and any(m in self.stderr for m in _CONFLICT_MARKERS)

    def satisfied_output(self) -> str:
        """What the real pip would have printed for an empty plan (no "Would install")."""
        return "".join(
            line
            for line in self.stdout.splitlines(keepends=True)
            if not line.startswith("Would install")
        )


#: the exit code of dtkpip and dtkuv when the installer's plan cannot be read: a refusal
#: (nothing changed), as a veto is
UNREADABLE = 1


#: pip ignores a ``PIP_*`` variable whose value is empty ("its value is empty"), so an empty
#: one never lifts what a pip.conf sets. These replace it: the guarded env's own pip.conf
#: names the vendor pins as ``constraint``, and an empty file is no constraint at all.
NO_CONSTRAINTS: dict[str, str] = {"PIP_CONSTRAINT": os.devnull}


def one_source_env(
    env: Mapping[str, str], empty_dir: Path, index: str | None = None
) -> dict[str, str]:
    """``env`` for a pip run from one named source only: no constraints, and none of the
    find-links or extra indexes a pip.conf adds (the guarded env's vendor ones): the find-links
    become ``empty_dir`` (a folder with nothing in it), the extra index the named ``index``
    itself. Without ``index`` the run must not ask an index (``--no-index``, a direct URL)."""
    out = {**env, **NO_CONSTRAINTS, "PIP_FIND_LINKS": str(empty_dir)}
    if index is not None:
        out["PIP_EXTRA_INDEX_URL"] = index
    return out


def run_pip(
    python: str, args: list[str], env: dict[str, str] | None = None, capture: bool = True
) -> subprocess.CompletedProcess[str]:
    import subprocess

    cmd = [python, "-m", "pip", *args]
    return subprocess.run(
        cmd, env=env if env is not None else dict(os.environ), capture_output=capture, text=True
    )


def dry_run(
    python: str,
    global_args: list[str],
    install_args: list[str],
    constraints: Path | None,
    env: dict[str, str] | None = None,
) -> Plan:
    """``pip [global] install --dry-run --report FILE [args] [-c constraints]``.

    No ``--quiet``: stdout then holds pip's "Requirement already satisfied" lines, printed
    as they are when the plan is empty; the report goes to a file so it never mixes with them.
    """
    from dtkguard.util.scratch import scratch_dir

    with scratch_dir("dtkpip-") as tmp:
        report = Path(tmp) / "report.json"
        args = [*global_args, "install", "--dry-run", "--report", str(report), *install_args]
        if constraints is not None:
            args += ["-c", str(constraints)]
        proc = run_pip(python, args, env)
        plan = Plan(proc.returncode, proc.stdout, proc.stderr, constrained=constraints is not None)
        if proc.returncode == 0 and not read_report(report, plan):
            # fail closed: a plan dtkpip cannot read is not an empty plan
            plan.returncode = UNREADABLE
            plan.stderr += (
                "dtkpip: cannot read pip's plan (its --report file is missing or not a "
                "report): nothing was changed\n"
            )
    return plan


def read_report(report: Path, plan: Plan) -> bool:
    """Fill ``plan`` from pip's installation report (``--report FILE``); False when the file
    is missing or no report."""
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    return read_report_data(data, plan)


def read_report_data(data: object, plan: Plan) -> bool:
    """Fill ``plan`` from the data of pip's installation report; False when it is none."""
    if not isinstance(data, dict):
        return False
    plan.environment = data.get("environment") or {}
    for item in data.get("install") or ():
        meta = item.get("metadata") or {}
        plan.install.append(
            Planned(
                name=meta.get("name", "?"),
                version=str(meta.get("version", "")),
                metadata=meta,
                requested=bool(item.get("requested")),
                is_direct=bool(item.get("is_direct")),
                url=(item.get("download_info") or {}).get("url", ""),
            )
        )
    return True


def after_install(
    env: Environment, planned: list[Planned], site: Path, removed: Sequence[str] = ()
) -> Environment:
    """The environment as it would be once ``removed`` are gone and ``planned`` is installed
    into ``site``."""
    from dtkguard.env.dist import Dist
    from dtkguard.env.environment import Environment

    keys = {p.key for p in planned} | {canonical(n) for n in removed}
    kept = [d for d in env.dists if d.key not in keys]
    new = [
        Dist(
            p.name,
            p.version,
            site / f"{p.name.replace('-', '_')}-{p.version}.dist-info",
            site,
            env.root,
            "",
            p.headers(),
        )
        for p in planned
    ]
    return Environment(env.target, env.root, list(env.sites), kept + new, list(env.warnings))
