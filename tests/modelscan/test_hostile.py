from __future__ import annotations

import json
import os
import tracemalloc

from modelkit import deepseek_model, write_json, write_raw, write_safetensors

from dtkguard.modelscan.detect import detect
from dtkguard.modelscan.index import MAX_SHARDS
from dtkguard.modelscan.scan import scan


def problems(folder) -> list[str]:
    return [f"{os.path.basename(p)}: {m}" for s in scan([str(folder)]) for p, m in s.problems]


def test_hostile_shards_are_problems_and_the_rest_is_still_scanned(tmp_path):
    folder = deepseek_model(tmp_path / "m", layers=2, shards=1)
    write_raw(folder / "huge.safetensors", 1 << 63, b"{}")
    write_raw(folder / "text.safetensors", 16, b"this is not json", total=24)
    entry = '{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}'
    dup = ('{"w":' + entry + ',"w":' + entry + "}").encode()
    write_raw(folder / "dup.safetensors", len(dup), dup, total=8 + len(dup) + 1)
    (folder / "trunc.safetensors").write_bytes(b"\x10\x00")
    tracemalloc.start()
    (model,) = scan([str(folder)])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20_000_000
    found = {os.path.basename(p): m for p, m in model.problems}
    assert "exceeds the cap" in found["huge.safetensors"]
    assert "does not start" in found["text.safetensors"]
    assert "duplicate key" in found["dup.safetensors"]
    assert "truncated" in found["trunc.safetensors"]
    assert all("\n" not in m for m in found.values())
    assert model.shards == 1  # the good shard
    assert "fp8-weights" in {d.kind for d in detect(model)}


def test_symlink_loops(tmp_path):
    folder = deepseek_model(tmp_path / "m", layers=1, shards=1)
    os.symlink(".", folder / "loop")  # a folder that contains itself
    os.symlink("b.safetensors", folder / "a.safetensors")
    os.symlink("a.safetensors", folder / "b.safetensors")
    found = problems(folder)
    assert "a.safetensors: symlink loop" in found
    assert "b.safetensors: symlink loop" in found
    assert any(p.startswith("loop: symlink loop") for p in found)
    (model,) = scan([str(folder)])
    assert model.shards == 1


def test_symlink_loop_as_the_path_itself(tmp_path):
    os.symlink("x", tmp_path / "y")
    os.symlink("y", tmp_path / "x")
    (model,) = scan([str(tmp_path / "x")])
    assert model.problems == [(str(tmp_path / "x"), "symlink loop")]


def test_fifo_and_devices_are_never_opened(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    os.mkfifo(folder / "model.safetensors")  # opening this would block forever
    write_json(folder / "config.json", {})
    (model,) = scan([str(folder)])
    assert model.shards == 0 and model.tensors == 0


def test_index_naming_100000_shards(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    write_json(folder / "config.json", {"model_type": "llama"})
    write_safetensors(folder / "model-00001-of-100000.safetensors", {"w": ("BF16", [4])})
    weight_map = {f"t{i}.weight": f"model-{i:05d}-of-100000.safetensors" for i in range(100_000)}
    weight_map["evil"] = "../../etc/passwd"
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    tracemalloc.start()
    (model,) = scan([str(folder)])
    tracemalloc.stop()
    assert model.index is not None and model.index.shard_count == 100_000
    assert model.shards == 1
    msgs = [m for _, m in model.problems]
    assert any(f"more than the cap of {MAX_SHARDS:,}" in m for m in msgs)
    assert any("name no plain shard file" in m for m in msgs)
    assert detect(model) == []


def test_missing_shards_named_by_the_index(tmp_path):
    folder = deepseek_model(tmp_path / "m", layers=2, shards=2)
    os.unlink(folder / "model-00002-of-00002.safetensors")
    assert any("1 shard(s) named in the index are missing" in p for p in problems(folder))


def test_bad_config_and_bad_pickle_and_bad_gguf(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text("{not json")
    (folder / "pytorch_model.bin").write_bytes(b"\x00garbage" * 10)
    (folder / "model.gguf").write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 16)
    found = dict(p.split(": ", 1) for p in problems(folder))
    assert found["config.json"].startswith("not JSON")
    assert found["pytorch_model.bin"].startswith("not a pickle")
    assert found["model.gguf"].startswith("implausible counts")
