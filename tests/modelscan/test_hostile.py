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
    # weights not all downloaded is not an unreadable file: a note, the index names stand in
    assert not problems(folder)
    (model,) = scan([str(folder)])
    assert any("1 shard(s) named in the index are missing" in n for n in model.notes)


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


def _index_folder(folder, text: str | None = None, size: int | None = None):
    folder.mkdir()
    write_json(folder / "config.json", {"model_type": "llama"})
    index = folder / "model.safetensors.index.json"
    if size is not None:  # sparse: only the cap is read
        with open(index, "wb") as fh:
            fh.write(b'{"weight_map": {')
            fh.truncate(size)
    else:
        index.write_text(text)
    return folder


def test_an_index_past_its_size_or_value_cap_is_one_exit_2_line_naming_it(tmp_path):
    from dtkguard.modelscan.config import MAX_JSON_VALUES
    from dtkguard.modelscan.index import MAX_INDEX
    from tests.support.cli import run_in_process

    big = _index_folder(tmp_path / "big", size=MAX_INDEX + 1)
    nested = _index_folder(tmp_path / "nested", '{"weight_map":{},"m":[' + "[]," * 300_000 + "[]]}")
    too_many = f"index with more than the limit of {MAX_JSON_VALUES:,} JSON values"
    for folder, why in ((big, "index larger than the limit of 32 MiB"), (nested, too_many)):
        result = run_in_process("scan-model", str(folder), "--card", "K100_AI")
        assert result.code == 2
        index = folder / "model.safetensors.index.json"
        assert result.err == f"dtkguard: error: {index}: {why}\n"


def test_the_worst_index_under_the_caps_stays_far_below_256_mb(tmp_path):
    """Half a million distinct names, each its own "shard", filling the byte cap."""
    from dtkguard.modelscan.config import MAX_JSON_VALUES
    from dtkguard.modelscan.index import MAX_INDEX

    n = MAX_JSON_VALUES - 10
    width = (MAX_INDEX - 64) // n - 6  # "k":"v", per entry
    pairs = ",".join(f'"{i:0{width // 2}x}":"{i:0{width - width // 2}x}"' for i in range(n))
    folder = _index_folder(tmp_path / "m", '{"weight_map":{' + pairs + "}}")
    assert MAX_INDEX - 8 * n < (folder / "model.safetensors.index.json").stat().st_size <= MAX_INDEX
    tracemalloc.start()
    (model,) = scan([str(folder)])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert model.index is not None and model.index.tensors == n
    assert any(f"more than the cap of {MAX_SHARDS:,}" in m for _, m in model.problems)
    assert peak < 200_000_000


def test_an_index_of_a_384_expert_fp8_model_is_read(tmp_path):
    """61 layers of 384 experts, each projection with its scale: about 145,000 names."""
    weight_map = {
        f"model.layers.{layer}.mlp.experts.{e}.{proj}_proj.{kind}": (
            f"model-{layer + 1:05d}-of-000062.safetensors"
        )
        for layer in range(61)
        for e in range(384)
        for proj in ("gate", "up", "down")
        for kind in ("weight", "weight_scale_inv")
    }
    folder = _index_folder(tmp_path / "m", json.dumps({"weight_map": weight_map}, indent=2))
    (model,) = scan([str(folder)])
    assert model.index is not None and model.index.tensors == len(weight_map) > 140_000
    assert model.index.scale_inv == len(weight_map) // 2
    assert not [m for _, m in model.problems if "limit" in m]
