"""A policy written from an environment (`dtkguard policy init --from-env`).

Its DAS/DTK-labelled builds become ``[vendor]``, the DTK release the most builds carry becomes
``dtk`` (the other releases present, ``dtk-allow``), and the deny list comes from the bundled
policy: ``extends`` it when one exists for exactly that release, else a copy of the default
bundled policy's ``[[deny]]`` rules (so a policy for another DTK release does not inherit
25.04.1's vendor pins).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from dtkguard.env.environment import Environment
from dtkguard.errors import InputError
from dtkguard.policy.labels import DtkRelease, label_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.policy.compile import KnownRule


def vendor_builds(env: Environment) -> dict[str, str]:
    """{name as installed: version} of every DAS/DTK-labelled build, first on the path wins."""
    out: dict[str, str] = {}
    seen: set[str] = set()
    for dist in env:
        label = label_of(dist.version)
        if label is not None and label.is_vendor and dist.key not in seen:
            seen.add(dist.key)
            out[dist.name] = dist.version
    return dict(sorted(out.items(), key=lambda kv: kv[0].lower()))


def _releases(builds: dict[str, str]) -> list[DtkRelease]:
    """The DTK releases of the builds, most common first (ties: newest first)."""
    counts = Counter(
        label.dtk for v in builds.values() if (label := label_of(v)) and label.dtk is not None
    )
    return sorted(counts, key=lambda r: (-counts[r], tuple(-x for x in r.sort_key())))


def policy_from_env(
    env: Environment, name: str | None = None, where: str = "", *, known_rule: KnownRule
) -> str:
    """The TOML text of a policy for ``env``; `InputError` when it has no vendor builds.
    ``known_rule``: the rule ids the bundled policy's exceptions may name (`load_policy`)."""
    import datetime as _dt

    import tomlkit

    builds = vendor_builds(env)
    if not builds:
        raise InputError(
            f"{where or 'the target'} has no DAS/DTK-labelled builds: nothing to write a "
            "policy from",
            field="--from-env",
        )
    doc = tomlkit.document()
    doc.add(
        tomlkit.comment(
            f"Written by `dtkguard policy init --from-env` from {where or 'an environment'} on "
            f"{_dt.date.today().isoformat()}: its {len(builds)} DAS/DTK-labelled builds."
        )
    )
    doc["policy"] = ident = _identity(_releases(builds), name, where)
    python = env.target.python_version
    if python and not ident.get("extends"):
        target = tomlkit.table()
        target["python"] = python
        doc["target"] = target
    vendor = tomlkit.table()
    for dist_name, version in builds.items():
        vendor[dist_name] = version
    doc["vendor"] = vendor
    if not ident.get("extends"):
        _add_bundled_deny(doc, known_rule)
    return tomlkit.dumps(doc)


def _identity(releases: list[DtkRelease], name: str | None, where: str) -> Any:
    """The ``[policy]`` table: name, description, the main DTK release and the others present,
    and ``extends`` of the bundled policy for exactly that release when there is one."""
    import tomlkit

    from dtkguard.policy.locate import bundled_dir

    dtk = releases[0] if releases else None
    ident = tomlkit.table()
    ident["name"] = name or (f"site-dtk-{dtk}" if dtk else "site-das")
    ident["description"] = f"Vendor builds of {where or 'an environment'}"
    if dtk:
        ident["dtk"] = str(dtk)
    allow = [str(r) for r in releases[1:]]
    if allow:
        ident["dtk-allow"] = allow
    bundled = bundled_dir() / f"dtk-{dtk}.toml" if dtk else None
    if bundled is not None and bundled.is_file():
        ident["extends"] = [bundled.stem]
    return ident


def _add_bundled_deny(doc: Any, known_rule: KnownRule) -> None:
    """A copy of the default bundled policy's ``[[deny]]`` rules, with a comment saying so."""
    import tomlkit

    from dtkguard.policy.load import load_policy
    from dtkguard.policy.locate import DEFAULT_POLICY

    deny = tomlkit.aot()
    for rule in load_policy(DEFAULT_POLICY, known_rule=known_rule).deny:
        entry = tomlkit.table()
        entry["pattern"] = rule.pattern
        entry["reason"] = rule.reason
        entry["severity"] = rule.severity
        if rule.vendor_builds_ok:
            entry["vendor-builds-ok"] = True
        deny.append(entry)
    doc.add(tomlkit.nl())
    doc.add(tomlkit.comment(f"The deny list of the bundled policy {DEFAULT_POLICY}."))
    doc["deny"] = deny
