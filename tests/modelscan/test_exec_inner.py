"""`exec` judges what would really run: the commands of ``sh -c``/``bash -lc`` scripts, and the
keys of a vLLM or SGLang ``--config`` YAML file as if they were flags."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from modelkit import deepseek_model

from tests.support.cli import dtkguard

BASE = ("exec", "--policy", "dtk-25.04.1", "--card", "K100_AI", "--")


def _server(tmp_path: Path, name: str = "vllm") -> tuple[Path, Path]:
    """A stand-in server named like the engine; it records that it started."""
    marker = tmp_path / "started"
    script = tmp_path / "bin" / name
    script.parent.mkdir(exist_ok=True)
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    return script, marker


@pytest.fixture
def models(tmp_path: Path) -> dict[str, Path]:
    return {
        "fp8": deepseek_model(tmp_path / "DeepSeek-V3", layers=1, shards=1),
        "clean": deepseek_model(tmp_path / "bf16", layers=1, shards=1, fp8=False),
    }


@pytest.mark.parametrize(
    ("shell", "flags", "script", "rule"),
    [
        ("sh", "-c", "{vllm} serve {clean} --quantization fp8", "fp8-serving"),
        ("bash", "-lc", "cd {tmp} && exec {vllm} serve bf16 --kv-cache-dtype=fp8", "fp8-serving"),
        ("dash", "-ec", "echo starting; {vllm} serve {fp8}", "fp8-weights"),
        ("bash", "-o pipefail -c", "env A=1 {vllm} serve {fp8} | tee log", "fp8-weights"),
        ("sh", "-c", "QUANTIZE=fp8 {tgi} --model-id {clean}", "fp8-serving"),
        ("sh", "-c", "sh -c '{vllm} serve {fp8}'", "fp8-weights"),
        ("sh", "-c", "{vllm} serve >log 2>&1 {fp8} </dev/null &", "fp8-weights"),
    ],
    ids=["sh-c", "bash-lc-cd-exec", "dash-ec-model", "pipefail-env-pipe", "assignment", "nested",
         "redirects"],
)  # fmt: skip
def test_the_inner_command_of_a_shell_is_judged(tmp_path, models, shell, flags, script, rule):
    vllm, marker = _server(tmp_path)
    tgi, _ = _server(tmp_path, "text-generation-launcher")
    text = script.format(vllm=vllm, tgi=tgi, tmp=tmp_path, **models)
    out = dtkguard(*BASE, shell, *flags.split(), text, cwd=tmp_path)  # a started script writes here
    assert out.returncode == 1 and not marker.exists(), out.stderr
    assert rule in out.stderr and f"veto: not starting {shell}" in out.stderr


def test_a_shell_running_a_clean_command_or_no_server_starts(tmp_path, models):
    vllm, marker = _server(tmp_path)
    out = dtkguard(*BASE, "bash", "-lc", f"cd {tmp_path} && exec {vllm} serve bf16")
    assert out.returncode == 0 and marker.exists(), out.stderr
    assert "not checked" not in out.stderr
    out = dtkguard(*BASE, "sh", "-c", "echo hello from the shell")
    assert out.returncode == 0 and out.stdout == "hello from the shell\n", out.stderr
    # a script file is not a script string: the shell itself is what runs
    (tmp_path / "serve.sh").write_text("echo ran\n")
    out = dtkguard(*BASE, "sh", str(tmp_path / "serve.sh"))
    assert out.returncode == 0 and out.stdout == "ran\n", out.stderr


def test_a_script_that_cannot_be_split_is_an_unchecked_model(tmp_path):
    vllm, marker = _server(tmp_path)
    text = f'{vllm} serve "unbalanced'
    out = dtkguard(*BASE, "sh", "-c", text)
    assert "warning: model not checked for FP8: shell script: No closing quotation" in out.stderr
    policy = tmp_path / "deny.toml"
    policy.write_text('[policy]\nextends = ["dtk-25.04.1"]\n\n[fp8]\nunresolved-model = "deny"\n')
    out = dtkguard("exec", "--policy", policy, "--card", "K100_AI", "--", "sh", "-c", text)
    assert out.returncode == 1 and "veto" in out.stderr and not marker.exists()


VLLM_YAML = """\
# config.yaml
model: {model}
host: "127.0.0.1"
port: 6379
uvicorn-log-level: "info"
{extra}"""
SGLANG_YAML = """\
model-path: {model}
host: 0.0.0.0
port: 30000
tensor-parallel-size: 2
enable-metrics: true
log-requests: true
{extra}"""


@pytest.mark.parametrize(
    ("engine", "extra", "model", "cli", "rule"),
    [
        ("vllm", "quantization: fp8\n", "clean", (), "fp8-serving"),
        ("vllm", 'kv_cache_dtype: "fp8_e4m3"  # FP8 KV cache\n', "clean", (), "fp8-serving"),
        ("vllm", "", "fp8", (), "fp8-weights"),
        ("vllm", "quantization: fp8\n", "clean", ("--quantization", "awq"), None),
        ("sglang", "quantization: fp8\n", "clean", (), "fp8-serving"),
        ("sglang", "kv-cache-dtype: fp8_e5m2\n", "clean", (), "fp8-serving"),
        ("sglang", "", "fp8", (), "fp8-weights"),
        ("sglang", "dtype: bfloat16\n", "clean", (), None),
    ],
    ids=["vllm-quant", "vllm-kv-underscore", "vllm-model", "vllm-cli-wins",
         "sglang-quant", "sglang-kv", "sglang-model", "sglang-clean"],
)  # fmt: skip
def test_config_file_keys_are_judged_like_flags(tmp_path, models, engine, extra, model, cli, rule):
    vllm, marker = _server(tmp_path)
    text = (VLLM_YAML if engine == "vllm" else SGLANG_YAML).format(model=models[model], extra=extra)
    (tmp_path / "serve.yaml").write_text(text)
    if engine == "vllm":
        argv = (str(vllm), "serve", "--config", "serve.yaml", *cli)
    else:  # the stand-in runs as `python -m sglang.launch_server`
        (tmp_path / "sglang").mkdir()
        (tmp_path / "sglang" / "__init__.py").write_text("")
        (tmp_path / "sglang" / "launch_server.py").write_text(f"open({str(marker)!r}, 'w')\n")
        argv = ("python3", "-m", "sglang.launch_server", "--config", "serve.yaml", *cli)
    out = dtkguard(*BASE, *argv, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)})
    if rule is None:
        assert out.returncode == 0 and marker.exists(), out.stderr
    else:
        assert out.returncode == 1 and not marker.exists(), out.stderr
        assert rule in out.stderr
    if rule == "fp8-serving":
        assert "(serve.yaml)" in out.stderr  # the request names the file it came from


def test_an_unreadable_config_file_is_a_warning(tmp_path, models):
    vllm, marker = _server(tmp_path)
    out = dtkguard(
        *BASE, vllm, "serve", str(models["clean"]), "--config", "missing.yaml", cwd=tmp_path
    )
    assert out.returncode == 0 and marker.exists(), out.stderr
    assert f"warning: {tmp_path / 'missing.yaml'}: No such file" in out.stderr


def test_a_hostile_config_file_is_one_warning_line(tmp_path, models):
    """A FIFO, a directory or a 2 MiB file named as --config is refused, never read or hung on."""
    vllm, marker = _server(tmp_path)
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "dir.yaml").mkdir()
    (tmp_path / "big.yaml").write_text("quantization: fp8\n" + "#" * (2 << 20))
    for name, why in (
        ("fifo.yaml", "not a regular file (a FIFO)"),
        ("dir.yaml", "not a regular file (a directory)"),
        ("big.yaml", "serving config larger than the limit of 1 MiB"),
    ):
        argv = (vllm, "serve", str(models["clean"]), "--config", name)
        out = dtkguard(*BASE, *argv, cwd=tmp_path, timeout=60)
        assert out.returncode == 0 and marker.exists(), out.stderr
        assert f"warning: {tmp_path / name}: {why}" in out.stderr
        assert "Traceback" not in out.stderr
        marker.unlink()


def test_variables_of_the_environment_are_expanded_as_the_shell_would(tmp_path, models):
    """``sh -c 'vllm serve "$MODEL" --quantization $QUANT'`` in a container: the values come
    from the environment the shell starts with; single quotes keep ``$`` literal."""
    vllm, marker = _server(tmp_path)
    script = f'{vllm} serve "$MODEL" --quantization ${{QUANT}}'
    env = {"MODEL": str(models["clean"]), "QUANT": "fp8"}
    out = dtkguard(*BASE, "sh", "-c", script, env=env)
    assert out.returncode == 1 and not marker.exists(), out.stderr
    assert "--quantization fp8" in out.stderr
    out = dtkguard(*BASE, "sh", "-c", f'{vllm} serve "$MODEL"', env={"MODEL": str(models["fp8"])})
    assert out.returncode == 1 and "fp8-weights" in out.stderr, out.stderr
    # '$QUANT' in single quotes is not expanded (the server gets the literal text): no request
    out = dtkguard(*BASE, "sh", "-c", f"{vllm} serve \"$MODEL\" -q '$QUANT'", env=env)
    assert out.returncode == 0 and marker.exists(), out.stderr
