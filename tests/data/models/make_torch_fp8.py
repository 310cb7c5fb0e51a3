"""Write the torch-format FP8 checkpoints kept beside this script (torch is not needed).

torch is not installed in the test environment (and a CUDA torch must not be), so this script
stands in for ``torch.save``: it registers stand-in ``torch``, ``torch._utils`` and
``torch.storage`` modules whose objects pickle under the same global names torch uses, and
writes the same containers:

* ``fp8_state_dict.pt``: the zip format (``archive/data.pkl``, ``archive/data/0``,
  ``archive/byteorder``, ``archive/version``), pickle protocol 2 as torch.save uses. The FP8
  tensor pickles as ``torch._utils._rebuild_tensor_v3`` + ``torch.storage.UntypedStorage`` +
  ``torch.float8_e4m3fn`` (how torch 2.1+ saves float8; there is no Float8 legacy storage name);
  an F32 scale pickles as ``_rebuild_tensor_v2`` + ``torch.FloatStorage``.
* ``fp8_legacy.pt``: the legacy format (magic number, protocol version, sys info, the object
  pickle, the storage key list, then raw storage bytes).

Run: ``python make_torch_fp8.py`` (rewrites both files; output is deterministic).
"""

from __future__ import annotations

import collections
import io
import pickle
import sys
import types
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _fake_torch() -> types.SimpleNamespace:
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")
    storage = types.ModuleType("torch.storage")

    class dtype:
        def __init__(self, name: str) -> None:
            self.name = name

        def __reduce__(self) -> str:
            return self.name

    dtype.__module__ = "torch"

    def _rebuild_tensor_v2(*args):  # pragma: no cover - never called
        raise AssertionError

    def _rebuild_tensor_v3(*args):  # pragma: no cover - never called
        raise AssertionError

    for fn in (_rebuild_tensor_v2, _rebuild_tensor_v3):
        fn.__module__ = "torch._utils"
        fn.__qualname__ = fn.__name__
        setattr(utils, fn.__name__, fn)
    untyped = type("UntypedStorage", (), {"__module__": "torch.storage"})
    float_storage = type("FloatStorage", (), {"__module__": "torch"})
    storage.UntypedStorage = untyped
    torch.FloatStorage = float_storage
    torch.float8_e4m3fn = dtype("float8_e4m3fn")
    torch._utils = utils
    torch.storage = storage
    sys.modules.update({"torch": torch, "torch._utils": utils, "torch.storage": storage})
    return types.SimpleNamespace(torch=torch, utils=utils, storage=storage)


class Storage:
    def __init__(self, key: str, kind: type, numel: int) -> None:
        self.key, self.kind, self.numel = key, kind, numel


class Tensor:
    def __init__(
        self,
        fake: types.SimpleNamespace,
        storage: Storage,
        shape: tuple[int, ...],
        dtype: object | None,
    ) -> None:
        self.fake, self.storage, self.shape, self.dtype = fake, storage, shape, dtype

    def __reduce__(self):
        stride = tuple(
            int(__import__("math").prod(self.shape[i + 1 :])) for i in range(len(self.shape))
        )
        hooks = collections.OrderedDict()
        if self.dtype is None:
            return (
                self.fake.utils._rebuild_tensor_v2,
                (self.storage, 0, self.shape, stride, False, hooks),
            )
        return (
            self.fake.utils._rebuild_tensor_v3,
            (self.storage, 0, self.shape, stride, False, hooks, self.dtype),
        )


class Pickler(pickle.Pickler):
    def persistent_id(self, obj: object):
        if isinstance(obj, Storage):
            return ("storage", obj.kind, obj.key, "cpu", obj.numel)
        return None


def _state(fake: types.SimpleNamespace) -> tuple[dict, list[Storage]]:
    w = Storage("0", fake.storage.UntypedStorage, 16)
    s = Storage("1", fake.torch.FloatStorage, 1)
    state = collections.OrderedDict(
        [
            ("layer.weight", Tensor(fake, w, (4, 4), fake.torch.float8_e4m3fn)),
            ("layer.weight_scale", Tensor(fake, s, (1,), None)),
        ]
    )
    return state, [w, s]


def _dumps(obj: object) -> bytes:
    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue()


def main() -> None:
    fake = _fake_torch()
    state, storages = _state(fake)
    data = _dumps(state)
    with zipfile.ZipFile(HERE / "fp8_state_dict.pt", "w", zipfile.ZIP_STORED) as zf:
        for name, payload in (
            ("archive/data.pkl", data),
            ("archive/byteorder", b"little"),
            ("archive/data/0", bytes(16)),
            ("archive/data/1", bytes(4)),
            ("archive/version", b"3\n"),
        ):
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            zf.writestr(info, payload)
    legacy = b"".join(
        [
            pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2),
            pickle.dumps(1001, protocol=2),
            pickle.dumps(
                {
                    "protocol_version": 1001,
                    "little_endian": True,
                    "type_sizes": {"short": 2, "int": 4, "long": 4},
                },
                protocol=2,
            ),
            data,
            pickle.dumps([s.key for s in storages], protocol=2),
            bytes(16 + 4),
        ]
    )
    (HERE / "fp8_legacy.pt").write_bytes(legacy)


if __name__ == "__main__":
    main()
