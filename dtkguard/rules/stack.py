"""The stack below Python agrees with the wheels: DTK runtime, HIP, driver, cards, devices.

Judges the `dtkguard.env.stack_facts.StackFacts` a command put in ``ctx.extra["stack"]``. A fact
that could not be read yields no finding here (``check`` on a box without hy-smi stays quiet);
``device-unreachable`` is the rule for "this target should see DCUs and does not", run only when
the command asks for it (``ctx.extra["expect_devices"]``).
"""

from __future__ import annotations

from collections.abc import Iterator

from dtkguard.env.stack_facts import StackFacts, version_tuple
from dtkguard.findings import Finding, Severity
from dtkguard.policy.labels import DtkRelease
from dtkguard.rules.context import CheckContext
from dtkguard.rules.rule_info import RuleInfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dtkguard.policy.compiled import SupportRow

DTK_RUNTIME_MISMATCH = RuleInfo(
    "dtk-runtime-mismatch",
    Severity.HIGH,
    "Vendor builds made for another DTK than the one installed",
    "The DTK release in the vendor builds' labels is not the DTK installed in the "
    "target (/opt/dtk/.info/version). Use matching DTK and wheels.",
    family="stack",
)

TORCH_HIP_MISMATCH = RuleInfo(
    "torch-hip-mismatch",
    Severity.HIGH,
    "torch built against another HIP than the DTK provides",
    "torch/version.py's hip is not the HIP of the installed DTK (hip_version.h).",
    family="stack",
)

DRIVER_TOO_OLD = RuleInfo(
    "driver-too-old",
    Severity.HIGH,
    "DCU driver older than the card series needs",
    "The driver hy-smi reports is below the minimum of the policy's support table "
    "for that card series. Upgrade the driver.",
    family="stack",
)

DTK_TOO_OLD = RuleInfo(
    "dtk-too-old",
    Severity.HIGH,
    "DTK older than the card series needs",
    "The installed DTK release is below the minimum of the policy's support table "
    "for the node's card series.",
    family="stack",
)

DRIVER_INCONSISTENT = RuleInfo(
    "driver-inconsistent",
    Severity.HIGH,
    "Cards of one node report different drivers",
    "hy-smi (or the kernel module) reports more than one driver version on one node.",
    family="stack",
)

CARDS_MIXED = RuleInfo(
    "cards-mixed",
    Severity.MEDIUM,
    "Card series mixed in one node",
    "The node holds card series that the policy's [stack] no-mix keeps apart.",
    family="stack",
)

DEVICE_UNREACHABLE = RuleInfo(
    "device-unreachable",
    Severity.HIGH,
    "DCUs unreachable from the target",
    "Asked with --expect-devices: no /dev/kfd, no render node, no card seen by "
    "hy-smi, or no DTK runtime in a target that should use DCUs.",
    family="stack",
)

#: the rules this family reports, with their default severity (collected by
#: `dtkguard.rules.catalog`)
RULES = (
    DTK_RUNTIME_MISMATCH,
    TORCH_HIP_MISMATCH,
    DRIVER_TOO_OLD,
    DTK_TOO_OLD,
    DRIVER_INCONSISTENT,
    CARDS_MIXED,
    DEVICE_UNREACHABLE,
)


def _release(text: str | None) -> DtkRelease | None:
    if not text:
        return None
    try:
        return DtkRelease.parse(text.split("-")[0])
    except ValueError:
        return None


def check(ctx: CheckContext) -> Iterator[Finding]:
    facts: StackFacts | None = ctx.extra.get("stack")
    if facts is None:
        return
    yield from _runtime(ctx, facts)
    yield from _torch_hip(facts)
    yield from _drivers(ctx, facts)
    yield from _mix(ctx, facts)
    if ctx.extra.get("expect_devices"):
        yield from _unreachable(facts)


def _runtime(ctx: CheckContext, facts: StackFacts) -> Iterator[Finding]:
    """dtk-runtime-mismatch: the wheels' DTK release is not the DTK installed in the target.

    The wheels' release and what may sit beside it are `dtkguard.decision`'s answer, as for
    dtk-mixed, the pip hook and `lock`."""
    from dtkguard.decision import parse_release, reference_release, release_allowed, release_text

    installed = parse_release((facts.dtk or "").split("-")[0])
    if installed is None:
        return
    policy = ctx.policy.decision_json()
    for dists in ctx.env.groups().values():
        ref = reference_release(policy, {d.key: d.version for d in dists})
        if ref is None:
            continue
        wanted, source = ref
        if release_allowed(installed, wanted, policy.get("dtk_allow", ())):
            continue
        wanted_text = release_text(wanted)
        yield DTK_RUNTIME_MISMATCH.finding(
            "dtk",
            f"the vendor builds are for DTK {wanted_text} ({source}); the DTK installed is "
            f"{facts.dtk} ({facts.dtk_source})",
            f"use an image or host with DTK {wanted_text} (/opt/dtk -> dtk-{wanted_text}), or "
            f"the vendor builds made for DTK {facts.dtk}",
            facts.dtk_source,
            {"installed": facts.dtk, "expected": wanted_text},
        )
        return


def _torch_hip(facts: StackFacts) -> Iterator[Finding]:
    """torch-hip-mismatch: torch was built against another HIP than the DTK provides."""
    built, have = version_tuple(facts.torch_hip), version_tuple(facts.hip)
    if not built or not have:
        return
    depth = min(len(built), len(have), 3)
    if built[:depth] == have[:depth]:
        return
    yield TORCH_HIP_MISMATCH.finding(
        "torch",
        f"torch {facts.torch_version} was built against HIP {facts.torch_hip}; the DTK "
        f"provides HIP {facts.hip} ({facts.hip_source})",
        "install the vendor torch built for this DTK, or the DTK that torch was built for",
        "torch/version.py",
        {"torch_hip": facts.torch_hip, "dtk_hip": facts.hip},
    )


def _drivers(ctx: CheckContext, facts: StackFacts) -> Iterator[Finding]:
    """driver-too-old, dtk-too-old per card series; driver-inconsistent across cards."""
    cards = facts.cards or []
    for series in sorted({c.series for c in cards if c.series}):
        row = ctx.policy.stack.row(series)
        if row is None:
            continue
        yield from _driver_too_old(facts, series, row)
        yield from _dtk_too_old(facts, series, row)
    yield from _driver_inconsistent(facts)


def _where(facts: StackFacts) -> str:
    return facts.cards_source or "hy-smi"


def _driver_too_old(facts: StackFacts, series: str, row: SupportRow) -> Iterator[Finding]:
    """driver-too-old: a driver of this series' cards is older than its support row asks."""
    cards = facts.cards or []
    for driver in sorted({c.driver for c in cards if c.series == series and c.driver}):
        have, need = version_tuple(driver), version_tuple(row.driver)
        if have and need and have < need:
            yield DRIVER_TOO_OLD.finding(
                series,
                f"{series} cards run driver {driver}; {series} needs driver {row.driver} "
                f"or newer ({row.source or 'policy support table'})",
                f"upgrade the DCU driver (hyhal) on this node to {row.driver} or newer",
                _where(facts),
                {"driver": driver, "minimum": row.driver},
            )


def _dtk_too_old(facts: StackFacts, series: str, row: SupportRow) -> Iterator[Finding]:
    """dtk-too-old: the DTK installed is older than this series' support row asks."""
    installed, need_dtk = _release(facts.dtk), _release(row.dtk)
    if installed and need_dtk and installed < need_dtk:
        yield DTK_TOO_OLD.finding(
            series,
            f"DTK {facts.dtk} does not support {series} cards; they need DTK {row.dtk} "
            f"or newer ({row.source or 'policy support table'})",
            f"use an image with DTK {row.dtk} or newer on this node",
            facts.dtk_source,
            {"dtk": facts.dtk, "minimum": row.dtk},
        )


def _driver_inconsistent(facts: StackFacts) -> Iterator[Finding]:
    """driver-inconsistent: the node's cards report more than one driver."""
    cards = facts.cards or []
    node_drivers = {c.driver for c in cards if c.driver}
    if len(node_drivers) > 1:
        listed = ", ".join(f"card {c.index}: {c.driver}" for c in cards if c.driver)
        yield DRIVER_INCONSISTENT.finding(
            "driver",
            f"the cards of this node report different drivers ({listed})",
            "reinstall one DCU driver (hyhal) for the whole node and reboot it",
            _where(facts),
            {"drivers": sorted(node_drivers)},
        )


def _mix(ctx: CheckContext, facts: StackFacts) -> Iterator[Finding]:
    """cards-mixed: series the policy says must not share a node."""
    series = sorted({c.series for c in facts.cards or [] if c.series})
    clashes = [
        (a, b)
        for i, a in enumerate(series)
        for b in series[i + 1 :]
        if ctx.policy.stack.clash(a, b)
    ]
    if not clashes:
        return
    counts = ", ".join(
        f"{sum(1 for c in facts.cards or [] if c.series == s)} × {s}" for s in series
    )
    yield CARDS_MIXED.finding(
        "cards",
        f"this node mixes card series the policy keeps apart ({counts})",
        "pin the job to one card series with HIP_VISIBLE_DEVICES, or move the cards",
        facts.cards_source or "hy-smi",
        {"series": series},
    )


def _unreachable(facts: StackFacts) -> Iterator[Finding]:
    """device-unreachable: a target that should use DCUs cannot reach them."""
    missing = []
    if facts.devices is not None:
        if not facts.devices.get("kfd"):
            missing.append("no /dev/kfd")
        if not facts.devices.get("render"):
            missing.append("no /dev/dri/renderD* node")
    else:
        missing.append("an image root has no devices")
    if facts.cards is not None and not facts.cards:
        missing.append("hy-smi sees no card")
    elif facts.cards is None:
        missing.append("no hy-smi output (cards unknown)")
    if facts.dtk is None:
        missing.append("no DTK runtime under /opt/dtk")
    if not missing:
        return
    yield DEVICE_UNREACHABLE.finding(
        "devices",
        "this target should use DCUs but cannot: " + "; ".join(missing),
        "start the container with --device=/dev/kfd --device=/dev/dri (and /dev/mkfd), "
        "-v /opt/hyhal:/opt/hyhal:ro, and the DTK mounted or installed at /opt/dtk",
        None,
        {"missing": missing},
    )
