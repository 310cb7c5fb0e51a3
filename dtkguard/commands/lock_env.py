"""`dtkguard lock --from-env [TARGET]`: the installed set of an image as its locked manifest.

Each installed dist is matched to a wheel of the same name and version in the given sources;
the wheel's RECORD must be contained in the installed RECORD (exact match). Dists without such a
wheel go to ``[[tool.dtkguard.installed]]`` (name, version, location, RECORD sha256, reason):
the lock stays a valid, installable PEP 751 file and drift audits still see every dist.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

_LIB_PYTHON = re.compile(r"/lib/python(3\.\d{1,2})/")


def env_python(env: Any) -> str | None:
    """``X.Y`` of the environment's interpreter: what the target reports (a process), else
    the interpreter asked, else the ``lib/pythonX.Y`` folder its dists are installed in."""
    label = env.target
    version = str(label.get("python_version") or "")
    m = re.match(r"(3\.\d{1,2})", version)
    if m:
        return m.group(1)
    exe = label.get("python")
    if label.get("kind") == "python" and exe:
        if os.path.realpath(exe) == os.path.realpath(sys.executable):
            return f"{sys.version_info.major}.{sys.version_info.minor}"
        from dtkguard.env.environment import ask_interpreter

        code = "import sys, json; print(json.dumps('%d.%d' % sys.version_info[:2]))"
        return str(ask_interpreter(exe, code, "its version"))
    found = {m.group(1) for d in env.dists if (m := _LIB_PYTHON.search(f"{d.location}/"))}
    return found.pop() if len(found) == 1 else None


def _target_of_env(args: argparse.Namespace, env: Any, target: Any) -> Any:
    """The lock's target for ``--from-env``: the environment's own Python (so pip installs the
    lock into it), unless ``--python-version`` says otherwise; the policy's only as a fallback."""
    from dtkguard.resolve.target import TargetEnv

    if args.python_version:
        return target
    version = env_python(env)
    if version is None:
        print(
            f"dtkguard: warning: cannot tell the Python version of the target; locking for "
            f"Python {target.python} (the policy's), pass --python-version to choose",
            file=sys.stderr,
        )
        return target
    return TargetEnv(version, target.platforms, target.implementation)


def lock_from_env(args: argparse.Namespace, policy: Any, target: Any, out: Path) -> int:
    from dtkguard.commands.common import open_target
    from dtkguard.commands.lock import _inputs, _sources
    from dtkguard.lock.build import entry_for, match_installed, record_digest, tool_table
    from dtkguard.lock.write import LockEntry, build_document, closure_problems, write_lock
    from dtkguard.resolve.http import Fetcher
    from dtkguard.resolve.provider import Metadata
    from dtkguard.resolve.sources import InstalledEnv

    env = open_target(args)
    target = _target_of_env(args, env, target)
    fetcher = Fetcher()
    try:
        sources, index = _sources(args, policy, fetcher)
        entries, installed, unlocked = [], [], []
        here = InstalledEnv(env)
        seen: set[str] = set()
        for dist in sorted(env.dists, key=lambda d: (d.key, d.version)):
            if dist.key in seen:
                continue
            seen.add(dist.key)
            link, how = match_installed(dist, sources, target)
            if link is None:
                item = {"name": dist.key, "version": dist.version, "location": dist.location}
                digest = record_digest(dist)
                if digest:
                    item["record-sha256"] = digest
                item["reason"] = how
                installed.append(item)
                own = here.links(dist.key)
                if own:
                    meta = Metadata(here.metadata(own[0]), own[0])
                    unlocked.append(LockEntry(dist.key, dist.version, meta.requires_dist))
                continue
            meta = Metadata(link.source.metadata(link), link)
            entry = entry_for(
                link,
                policy,
                out.parent,
                requires_dist=meta.requires_dist,
                requires_python=str(meta.requires_python) if meta.requires_python else None,
            )
            entry.tool["match"] = how
            entries.append(entry)
    finally:
        fetcher.close()
    # every installed dist's requirements, checked against everything installed
    problems = closure_problems(entries + unlocked, target.markers)
    tool = tool_table(policy, target, _inputs(args, [], index), args.note)
    tool["environment"] = {k: str(v) for k, v in sorted(env.target.items())}
    if installed:
        tool["installed"] = installed
    doc = build_document(
        entries,
        requires_python=f"=={target.python}.*",
        environments=[target.environment_marker()],
        tool=tool,
    )
    write_lock(out, doc)
    if not args.quiet:
        print(
            f"wrote {out}: {len(entries)} packages matched to wheels by RECORD, "
            f"{len(installed)} recorded as installed-only",
            file=sys.stderr,
        )
        for problem in problems[:10]:
            print(f"dtkguard: warning: {problem}", file=sys.stderr)
    return 0
