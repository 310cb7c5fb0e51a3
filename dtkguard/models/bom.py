"""Scanned models as SBOM inventory items: one ``machine-learning-model`` each.

The quantisation (what the config declares per role, the tensor dtypes, the detections) goes
into ``properties``; `dtkguard.report.cyclonedx` renders the items.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dtkguard.models.scan import ModelScan
from dtkguard.models.verdict import detect

MODEL_TYPE = "machine-learning-model"


def model_item(scan: ModelScan) -> dict[str, Any]:
    """One inventory item for ``scan``: name, location and quantisation properties."""
    cfg = scan.config
    props: dict[str, str] = {
        "dtkguard:location": scan.path,
        "dtkguard:quantization:method": cfg.method or "none",
        "dtkguard:quantization:weights": ",".join(cfg.families("weights")) or "none",
        "dtkguard:quantization:activations": ",".join(cfg.families("activations")) or "none",
        "dtkguard:quantization:kv-cache": ",".join(cfg.families("kv")) or "none",
        "dtkguard:quantization:detections": ",".join(d.kind for d in detect(scan)) or "none",
        "dtkguard:weights:files": str(scan.weight_files),
        "dtkguard:weights:tensors": str(scan.tensors),
        "dtkguard:weights:dtypes": ",".join(f"{d}:{n}" for d, n in scan.dtypes.most_common()),
    }
    if cfg.source:
        props["dtkguard:quantization:source"] = cfg.source
    if cfg.details:
        props["dtkguard:quantization:config"] = cfg.evidence()
    if scan.gguf_types:
        props["dtkguard:weights:gguf-types"] = ",".join(
            f"{t}:{n}" for t, n in scan.gguf_types.most_common()
        )
    if scan.pickle_globals:
        props["dtkguard:weights:pickle-dtypes"] = ",".join(sorted(scan.pickle_globals))
    return {"type": MODEL_TYPE, "key": scan.path, "name": scan.name, "properties": props}


def model_items(scans: Iterable[ModelScan]) -> list[dict[str, Any]]:
    return [model_item(s) for s in scans]
