"""Write the torch-format FP8 checkpoints kept beside this script, with real ``torch.save``.

* ``fp8_state_dict.pt``: the zip format (torch's default).
* ``fp8_legacy.pt``: the legacy format (``_use_new_zipfile_serialization=False``).

Each holds one float8_e4m3fn weight and one float32 scale. Needs CPU torch (the ``test`` extra
pins it for Python 3.11). Run: ``python make_torch_fp8.py``.
"""

from __future__ import annotations

from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


def state_dict() -> dict[str, torch.Tensor]:
    return {
        "model.layers.0.mlp.down_proj.weight": torch.zeros(4, 4).to(torch.float8_e4m3fn),
        "model.layers.0.mlp.down_proj.weight_scale": torch.ones(1, dtype=torch.float32),
    }


def main() -> None:
    torch.save(state_dict(), HERE / "fp8_state_dict.pt")
    torch.save(state_dict(), HERE / "fp8_legacy.pt", _use_new_zipfile_serialization=False)


if __name__ == "__main__":
    main()
