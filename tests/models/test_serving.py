from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from modelkit import deepseek_model

from dtkguard.models.serving import parse_command, read_process, scan_processes


def asks(argv, env=None):
    return [(r.kind, r.text) for r in parse_command(argv, env or {}).requests]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["vllm", "serve", "/m", "--quantization", "fp8"], [("weights", "--quantization fp8")]),
        (["vllm", "serve", "/m", "-q", "fp8"], [("weights", "-q fp8")]),
        (["vllm", "serve", "/m", "--quantization=fp8"], [("weights", "--quantization=fp8")]),
        (
            ["vllm", "serve", "/m", "--kv-cache-dtype", "fp8_e4m3"],
            [("kv_cache", "--kv-cache-dtype fp8_e4m3")],
        ),
        (
            ["vllm", "serve", "/m", "--kv_cache_dtype", "fp8"],
            [("kv_cache", "--kv_cache_dtype fp8")],
        ),
        (
            [
                "python3",
                "-m",
                "sglang.launch_server",
                "--model-path",
                "/m",
                "--quantization",
                "w8a8_fp8",
                "--kv-cache-dtype",
                "fp8_e4m3",
            ],
            [("weights", "--quantization w8a8_fp8"), ("kv_cache", "--kv-cache-dtype fp8_e4m3")],
        ),
        (
            ["lmdeploy", "serve", "api_server", "/m", "--quant-policy", "16"],
            [("kv_cache", "--quant-policy 16")],
        ),
        (["lmdeploy", "serve", "api_server", "/m", "--quant-policy", "8"], []),
        (
            ["lmdeploy", "serve", "api_server", "/m", "--model-format", "fp8"],
            [("weights", "--model-format fp8")],
        ),
        (
            ["text-generation-launcher", "--model-id", "/m", "--quantize", "fp8"],
            [("weights", "--quantize fp8")],
        ),
        (["text-generation-launcher", "--quantize", "bitsandbytes-fp4"], []),
        (["vllm", "serve", "/m", "--dtype", "bfloat16", "--kv-cache-dtype", "auto"], []),
    ],
)
def test_flag_spellings(argv, expected):
    assert asks(argv) == expected


def test_environment_requests():
    env = {
        "QUANTIZE": "fp8",
        "KV_CACHE_DTYPE": "fp8_e5m2",
        "SGLANG_USE_FP8_W8A8_MOE": "1",
        "VLLM_USE_FP8_THING": "0",
        "PATH": "/bin",
    }
    assert asks(["text-generation-launcher"], env) == [
        ("weights", "QUANTIZE=fp8"),
        ("kv_cache", "KV_CACHE_DTYPE=fp8_e5m2"),
    ]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        # on by default in vLLM, pads FP8 weights on ROCm; turns nothing on for a BF16 model
        ({"VLLM_ROCM_FP8_PADDING": "1", "VLLM_ROCM_MOE_PADDING": "1"}, []),
        ({"VLLM_USE_DEEP_GEMM": "1", "VLLM_USE_FLASHINFER_MOE_FP8": "1"}, []),
        ({"SGLANG_USE_FP8_W8A8_MOE": "1"}, []),
        # AITER on: the FP8/FP4 batched matmuls of MLA are on unless switched off
        (
            {"VLLM_ROCM_USE_AITER": "1"},
            [
                "VLLM_ROCM_USE_AITER_FP8BMM (default on) with VLLM_ROCM_USE_AITER=1",
                "VLLM_ROCM_USE_AITER_FP4BMM (default on) with VLLM_ROCM_USE_AITER=1",
            ],
        ),
        (
            {
                "VLLM_ROCM_USE_AITER": "true",
                "VLLM_ROCM_USE_AITER_FP8BMM": "0",
                "VLLM_ROCM_USE_AITER_FP4BMM": "False",
            },
            [],
        ),
        ({"VLLM_ROCM_USE_AITER": "0", "VLLM_ROCM_USE_AITER_FP8BMM": "1"}, []),
    ],
)
def test_only_variables_that_turn_fp8_on_are_requests(env, expected):
    got = [text for _, text in asks(["vllm", "serve", "/m"], env)]
    assert got == expected
    # SGLang has none of vLLM's switches
    assert asks(["python", "-m", "sglang.launch_server", "--model-path", "/m"], env) == []


@pytest.mark.parametrize(
    ("argv", "engine", "model"),
    [
        (["vllm", "serve", "org/name", "--port", "8000"], "vllm", "org/name"),
        (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"], "vllm", "/m"),
        (
            ["/usr/bin/python3.10", "-u", "-m", "sglang.launch_server", "--model-path", "/m"],
            "sglang",
            "/m",
        ),
        (["lmdeploy", "serve", "api_server", "/m"], "lmdeploy", "/m"),
        (["text-generation-launcher", "--model-id=/m"], "tgi", "/m"),
        (["python", "serve.py", "--model_name_or_path", "/m"], "python", "/m"),
        (["bash", "-c", "sleep 1"], None, None),
    ],
)
def test_engine_and_model(argv, engine, model):
    cmd = parse_command(argv)
    assert (cmd.engine, cmd.model) == (engine, model)


SCRIPT = textwrap.dedent(
    """\
    #!{python}
    import sys, time
    print("ready", flush=True)
    time.sleep(120)
    """
)


@pytest.fixture
def launch(tmp_path):
    procs = []

    def start(name, args, env=None, argv0=None):
        script = tmp_path / name
        script.write_text(SCRIPT.format(python=sys.executable))
        script.chmod(0o755)
        full_env = {**os.environ, **(env or {})}
        if argv0:  # like `exec -a vllm python -c ...`: argv[0] is the server's name
            cmd = ["bash", "-c", f'exec -a {argv0} {sys.executable} "$0" "$@"', str(script), *args]
        else:
            cmd = [str(script), *args]
        proc = subprocess.Popen(cmd, env=full_env, stdout=subprocess.PIPE, cwd=tmp_path)
        procs.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def test_finds_real_serving_processes(tmp_path, launch):
    model = deepseek_model(tmp_path / "DeepSeek-V3", layers=1, shards=1)
    vllm = launch(
        "vllm", ["serve", "DeepSeek-V3", "--quantization", "fp8", "--kv_cache_dtype=fp8_e4m3"]
    )
    sglang = launch(
        "srv",
        ["--model-path", str(model)],
        env={"KV_CACHE_DTYPE": "fp8_e4m3"},
        argv0="sglang.launch_server",
    )
    tgi = launch("text-generation-launcher", ["--model-id", str(model)], env={"QUANTIZE": "fp8"})
    found = {p.pid: p for p in scan_processes()}
    assert {vllm.pid, sglang.pid, tgi.pid} <= set(found)
    v = found[vllm.pid]
    assert v.command.engine == "vllm"
    assert [r.text for r in v.command.requests] == [
        "--quantization fp8",
        "--kv_cache_dtype=fp8_e4m3",
    ]
    assert v.cwd == str(tmp_path)
    assert v.model_path is not None and os.path.samefile(v.model_path, model)  # relative to cwd
    s = found[sglang.pid]
    assert s.command.engine == "sglang" and s.command.argv[0] == "sglang.launch_server"
    assert [r.text for r in s.command.requests] == ["KV_CACHE_DTYPE=fp8_e4m3"]
    t = found[tgi.pid]
    assert t.command.engine == "tgi" and [r.text for r in t.command.requests] == ["QUANTIZE=fp8"]


def test_vanished_and_unreadable_processes(tmp_path):
    assert read_process(2**22 + 12345) is None
    fake = tmp_path / "proc"
    (fake / "42").mkdir(parents=True)
    (fake / "42" / "cmdline").write_bytes(b"vllm\0serve\0/nowhere\0--quantization\0fp8\0")
    (fake / "43").mkdir()  # cmdline missing: vanished
    (fake / "44").mkdir()
    (fake / "44" / "cmdline").write_bytes(b"")  # a kernel thread
    (fake / "self").mkdir()
    found = scan_processes(str(fake))
    assert [p.pid for p in found] == [42]
    assert found[0].environ_readable is False and found[0].model_path is None
    assert scan_processes(str(tmp_path / "no-proc")) == []
