"""Every rule id dtkguard reports, with its default severity and help text.

One table: SARIF rule descriptors, `policy explain`, JUnit test cases and the validation of
policy exceptions all read it. Third-party checks add dotted ids (``acme.no-foo``).
"""

from __future__ import annotations

from dataclasses import dataclass

from dtkguard.findings import Severity


@dataclass(frozen=True)
class RuleInfo:
    id: str
    severity: Severity
    title: str
    help: str
    #: the check family (`dtkguard.rules.engine.CHECKS`) that reports it
    family: str = ""


_C, _H, _M, _L = Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW

RULES: dict[str, RuleInfo] = {
    r.id: r
    for r in (
        RuleInfo(
            "vendor-replaced",
            _C,
            "Vendor build replaced by a community build",
            "A package the policy pins to a DAS/DTK vendor build is installed without its "
            "vendor label, usually a CUDA build from the public index. Reinstall the vendor "
            "wheel from the vendor wheelhouse with --no-deps.",
            family="vendor",
        ),
        RuleInfo(
            "vendor-mismatch",
            _H,
            "Another vendor build than the policy names",
            "A vendor package carries a DAS/DTK label, but not the exact build the policy "
            "pins. Install the pinned build or update the policy.",
            family="vendor",
        ),
        RuleInfo(
            "denied-package",
            _C,
            "Denied package installed",
            "The policy denies this package, typically a CUDA-only wheel that cannot run on "
            "a DCU and signals that a community build was pulled in. Uninstall it.",
            family="deny",
        ),
        RuleInfo(
            "dtk-mixed",
            _H,
            "Builds for different DTK releases side by side",
            "Extensions built for another DTK release than the environment's fail with "
            "undefined symbols. Use builds of one DTK release.",
            family="dtk",
        ),
        RuleInfo(
            "file-conflict",
            _C,
            "A distribution would overwrite files of a vendor build",
            "The wheel ships files that belong to an installed vendor build (e.g. "
            "torch/version.py inside a package of another name); installing it would replace "
            "vendor code, and uninstalling it later would delete it. The pip hook refuses it.",
        ),
        RuleInfo(
            "guard-tamper",
            _C,
            "A distribution would overwrite the guard",
            "The wheel ships files of the dtkguard guard itself (its hook module, the decision "
            "module, the .pth line or the compiled policy). The pip hook refuses it.",
        ),
        RuleInfo(
            "startup-code",
            _C,
            "A distribution would add code run at every interpreter start",
            "The wheel ships a .pth file or a sitecustomize/usercustomize module, which run "
            "before anything else and can disable the guard. Only what the policy's [guard] "
            "startup-allow list names may be installed.",
        ),
        RuleInfo(
            "torch-abi",
            _H,
            "Extension built against another torch",
            "The .torchXYZ part of the local label names the torch the extension was built "
            "against; it does not match the installed torch.",
            family="dtk",
        ),
        RuleInfo(
            "torch-build",
            _C,
            "torch is not a DTK (HIP) build",
            "torch/version.py says cuda is set or hip is None: a community build, the DCU "
            "is unusable. Reinstall the vendor torch.",
            family="torch-build",
        ),
        RuleInfo(
            "vendor-missing",
            _C,
            "Vendor build gone since guard install",
            "A vendor build the guard's baseline recorded is no longer installed (removed by "
            "hand, by uv --no-config, conda, an installer that no hook sees). Restore it with "
            "dtkguard restore --python <interpreter>.",
            family="baseline",
        ),
        RuleInfo(
            "vendor-not-baseline",
            _C,
            "Vendor name and label, other bytes",
            "The installed build carries the vendor's name and label, but its RECORD differs "
            "from the one recorded by guard install: a relabelled community build. Restore the "
            "vendor build with dtkguard restore --python <interpreter>.",
            family="baseline",
        ),
        RuleInfo(
            "vendor-files-changed",
            _C,
            "Vendor build's files changed since guard install",
            "Files of a vendor build differ from the guard's baseline (a manual copy, an egg or "
            "an installer writing over them). Restore with dtkguard restore --python "
            "<interpreter>.",
            family="baseline",
        ),
        RuleInfo(
            "baseline-tampered",
            _H,
            "The guard's baseline cannot be trusted",
            "baseline.json is unreadable or differs from the digest in the guard's manifest. "
            "Check the environment, then record it again with guard install --rebaseline.",
            family="baseline",
        ),
        RuleInfo(
            "drift-missing",
            _H,
            "Locked package missing",
            "A package in the lock is not installed.",
            family="drift",
        ),
        RuleInfo(
            "drift-version",
            _H,
            "Installed version differs from the lock",
            "The installed version is not the locked one.",
            family="drift",
        ),
        RuleInfo(
            "drift-extra",
            _M,
            "Package not in the lock",
            "A package is installed that the lock does not list.",
            family="drift",
        ),
        RuleInfo(
            "file-modified",
            _H,
            "Installed file differs from RECORD",
            "The file's hash or size differs from what the installer recorded.",
            family="files",
        ),
        RuleInfo(
            "file-missing",
            _H,
            "Installed file missing",
            "A file listed in RECORD is not on disk.",
            family="files",
        ),
        RuleInfo(
            "record-unverifiable",
            _L,
            "Installed files cannot be verified",
            "No RECORD, hashless rows or a RECORD that points outside the root.",
            family="files",
        ),
        RuleInfo(
            "fp8-weights",
            _H,
            "FP8 weights on a card without FP8",
            "The model stores FP8 weights. Use the BF16 variant or dequantize.",
            family="fp8",
        ),
        RuleInfo(
            "fp8-scales",
            _H,
            "FP8 scales in the model",
            "The model carries FP8 tensors as scales (e.g. NVFP4 block scales).",
            family="fp8",
        ),
        RuleInfo(
            "fp8-kv-cache",
            _H,
            "FP8 KV cache requested",
            "The model or server asks for an FP8 KV cache.",
            family="fp8",
        ),
        RuleInfo(
            "fp4-weights", _H, "FP4 weights", "The model stores FP4/MX weights.", family="fp8"
        ),
        RuleInfo(
            "fp8-activations",
            _H,
            "FP8 activations over integer weights",
            "The model's scheme computes with FP8 activations (W4AFP8, W4A8_AWQ): FP8 matmuls.",
        ),
        RuleInfo(
            "fp8-serving",
            _H,
            "Server started with FP8 flags",
            "A serving process asks for FP8 quantization on its command line or environment.",
            family="fp8",
        ),
        RuleInfo(
            "dtk-runtime-mismatch",
            _H,
            "Vendor builds made for another DTK than the one installed",
            "The DTK release in the vendor builds' labels is not the DTK installed in the "
            "target (/opt/dtk/.info/version). Use matching DTK and wheels.",
            family="stack",
        ),
        RuleInfo(
            "torch-hip-mismatch",
            _H,
            "torch built against another HIP than the DTK provides",
            "torch/version.py's hip is not the HIP of the installed DTK (hip_version.h).",
            family="stack",
        ),
        RuleInfo(
            "driver-too-old",
            _H,
            "DCU driver older than the card series needs",
            "The driver hy-smi reports is below the minimum of the policy's support table "
            "for that card series. Upgrade the driver.",
            family="stack",
        ),
        RuleInfo(
            "dtk-too-old",
            _H,
            "DTK older than the card series needs",
            "The installed DTK release is below the minimum of the policy's support table "
            "for the node's card series.",
            family="stack",
        ),
        RuleInfo(
            "driver-inconsistent",
            _H,
            "Cards of one node report different drivers",
            "hy-smi (or the kernel module) reports more than one driver version on one node.",
            family="stack",
        ),
        RuleInfo(
            "cards-mixed",
            _M,
            "Card series mixed in one node",
            "The node holds card series that the policy's [stack] no-mix keeps apart.",
            family="stack",
        ),
        RuleInfo(
            "device-unreachable",
            _H,
            "DCUs unreachable from the target",
            "Asked with --expect-devices: no /dev/kfd, no render node, no card seen by "
            "hy-smi, or no DTK runtime in a target that should use DCUs.",
            family="stack",
        ),
        RuleInfo(
            "exception-expired",
            _M,
            "Policy exception expired",
            "An exception in the policy is past its expiry date and no longer applies.",
        ),
        RuleInfo(
            "exception-unused",
            _L,
            "Policy exception unused",
            "An exception in the policy matched no finding; remove it.",
        ),
        RuleInfo(
            "override-used",
            _H,
            "Guard override used",
            "Someone installed past the guard with an explicit override; the record "
            "says who, when and why.",
            family="override",
        ),
    )
}


def is_known(rule_id: str) -> bool:
    """Built-in ids, or dotted ids of third-party checks."""
    return rule_id in RULES or "." in rule_id


def info(rule_id: str) -> RuleInfo:
    """The catalog entry of ``rule_id``; a generic one for third-party rules."""
    return RULES.get(rule_id) or RuleInfo(rule_id, Severity.MEDIUM, rule_id, rule_id)
