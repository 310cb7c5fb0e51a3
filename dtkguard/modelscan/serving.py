"""Serving commands that ask for FP8: parse argv and environment, and find them in ``/proc``.

Covers vLLM (``vllm serve``, ``python -m vllm.entrypoints...``), SGLang, LMDeploy, TGI and plain
python launchers; flags in ``--flag value``, ``--flag=value``, ``-q value`` and underscore
spellings. ``/proc`` is only read; vanished or unreadable processes are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from dtkguard.lightclass import field, record

WEIGHT_FLAGS = frozenset(
    {"--quantization", "-q", "--quantize", "--model-format", "--modelopt-quant", "--quant-dtype"}
)
KV_FLAGS = frozenset({"--kv-cache-dtype"})
DTYPE_FLAGS = frozenset({"--dtype", "--torch-dtype"})
#: LMDeploy: 16 = fp8 (e4m3), 17 = fp8_e5m2; 4 and 8 are integer KV caches
LMDEPLOY_KV_FLAGS = frozenset({"--quant-policy"})
LMDEPLOY_FP8_POLICIES = frozenset({"16", "17", "fp8", "fp8_e4m3", "fp8_e5m2"})
MODEL_FLAGS = frozenset(
    {"--model", "--model-path", "--model-id", "--model-name-or-path", "--model-dir"}
)
WEIGHT_ENV = ("QUANTIZE", "VLLM_QUANTIZATION")
KV_ENV = ("KV_CACHE_DTYPE",)
MODEL_ENV = ("MODEL_ID", "MODEL_PATH", "MODEL")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


@record(frozen=True)
class EnvSwitch:
    """An environment variable that turns FP8/FP4 compute on in an engine by itself.

    ``default_on``: the engine treats it as on when unset; ``requires``: it acts only when this
    master switch is on (vLLM's AITER kernels need ``VLLM_ROCM_USE_AITER=1``).
    """

    name: str
    kind: str = "weights"
    default_on: bool = False
    requires: str | None = None
    scope: str | None = None

    def on(self, environ: Mapping[str, str]) -> bool:
        if self.requires and environ.get(self.requires, "").strip().lower() not in _TRUE:
            return False
        value = environ.get(self.name)
        if value is None:
            return self.default_on
        return value.strip().lower() in _TRUE


#: per engine, the variables that really turn FP8 on for a model that is not FP8. Knobs that only
#: pick kernels for FP8 checkpoints (VLLM_ROCM_FP8_PADDING, on by default; VLLM_USE_DEEP_GEMM;
#: VLLM_USE_FLASHINFER_MOE_FP8; SGLANG_USE_FP8_W8A8_MOE) are not requests: the model scan
#: decides those. Sources in docs/fp8.md.
FP8_ENV: dict[str, tuple[EnvSwitch, ...]] = {
    "vllm": (
        # MLA: W_K/W_V re-quantised to FP8 (FP4) for a batched matmul; default on under AITER
        EnvSwitch("VLLM_ROCM_USE_AITER_FP8BMM", "weights", True, "VLLM_ROCM_USE_AITER", "mla"),
        EnvSwitch("VLLM_ROCM_USE_AITER_FP4BMM", "weights", True, "VLLM_ROCM_USE_AITER", "mla"),
    ),
    "sglang": (),
    "lmdeploy": (),
    "tgi": (),
}
_ENGINES = (
    ("text-generation", "tgi"),
    ("text_generation", "tgi"),
    ("sglang", "sglang"),
    ("lmdeploy", "lmdeploy"),
    ("vllm", "vllm"),
)
_LMDEPLOY_SUB = frozenset({"api_server", "gradio", "chat", "proxy"})
MAX_ARGS = 4096
_VALUED = WEIGHT_FLAGS | KV_FLAGS | DTYPE_FLAGS | LMDEPLOY_KV_FLAGS | MODEL_FLAGS | {"--config"}
#: engines that read a YAML ``--config`` file of their long options
CONFIG_ENGINES = frozenset({"vllm", "sglang"})


@record(frozen=True)
class Request:
    """One FP8/FP4 request: ``kind`` is ``weights`` or ``kv_cache``; ``text`` as written."""

    kind: str
    source: str
    text: str
    value: str
    #: the request acts only on models of this kind (``mla``: multi-head latent attention)
    scope: str | None = None


@record
class ServingCommand:
    argv: list[str]
    engine: str | None = None
    model: str | None = None
    requests: list[Request] = field(default_factory=list)
    #: the ``--config`` YAML file (vLLM, SGLang), as given
    config: str | None = None
    #: files named by the command that could not be read (``--config``)
    problems: list[str] = field(default_factory=list)


@record
class ServingProcess:
    pid: int
    command: ServingCommand
    cwd: str | None = None
    model_path: str | None = None
    environ_readable: bool = True


def is_fp_value(value: str) -> bool:
    """A --quantization/--quantize/--model-format value that means FP8 or FP4 weights."""
    v = value.strip().lower()
    if v.startswith("bitsandbytes"):  # bitsandbytes-fp4 is a 4-bit int-like format, not FP4 HW
        return False
    return any(t in v for t in ("fp8", "float8", "fp4", "nvfp4", "mxfp")) or v in {
        "modelopt",
        "modelopt_mixed",
        "fp_quant",
        "fouroversix",
    }


def is_fp_kv(value: str) -> bool:
    v = value.strip().lower()
    return any(t in v for t in ("fp8", "fp4", "mxfp", "nvfp4"))


def _engine(argv: Sequence[str]) -> tuple[str | None, int]:
    """The engine and the index where its own arguments start."""
    if not argv:
        return None, 0
    exe = os.path.basename(argv[0])
    start = 1
    target = exe
    if exe.startswith("python"):
        i = 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-m":
            i += 2 if argv[i] in ("-X", "-W") else 1
        if i < len(argv) and argv[i] == "-m" and i + 1 < len(argv):
            target, start = argv[i + 1], i + 2
        elif i < len(argv):
            target, start = os.path.basename(argv[i]), i + 1
        else:
            return "python", len(argv)
    low = target.lower()
    for needle, engine in _ENGINES:
        if needle in low:
            return engine, start
    return ("python" if exe.startswith("python") else None), start


def _option(token: str) -> tuple[str, str | None]:
    name, eq, value = token.partition("=")
    if not name.startswith("--"):
        return name, (value if eq else None)
    return "--" + name[2:].replace("_", "-"), (value if eq else None)


def parse_command(
    argv: Sequence[str], environ: Mapping[str, str] | None = None, cwd: str | None = None
) -> ServingCommand:
    """What a serving command line (and its environment) asks for.

    ``cwd``: the folder relative paths are read from; with it, a vLLM or SGLang ``--config``
    YAML file is read and its keys judged like flags (a flag on the command line wins).
    """
    argv = list(argv[:MAX_ARGS])
    engine, start = _engine(argv)
    cmd = ServingCommand(argv=argv, engine=engine)
    positionals: list[str] = []
    given: set[str] = set()
    i = start
    while i < len(argv):
        token = argv[i]
        if not token.startswith("-") or token == "-":
            positionals.append(token)
            i += 1
            continue
        name, value = _option(token)
        if (
            value is None
            and name in _VALUED
            and i + 1 < len(argv)
            and not argv[i + 1].startswith("-")
        ):
            value = argv[i + 1]
            i += 1
        i += 1
        if value is not None:
            given.add(name)
            _apply(cmd, name, value, f"{token} {value}" if "=" not in token else token)
    if cmd.model is None:
        cmd.model = _positional_model(engine, positionals)
    if cwd is not None and engine in CONFIG_ENGINES and cmd.config:
        _apply_config(cmd, os.path.join(cwd, cmd.config), given)
    if environ:
        _parse_environ(cmd, environ)
    return cmd


def _apply(cmd: ServingCommand, name: str, value: str, text: str) -> None:
    """One ``--name value`` of the command line or of its --config file."""
    kind = _request_kind(name, value)
    if kind:
        cmd.requests.append(Request(kind, "flag", text, value))
    elif name in MODEL_FLAGS and cmd.model is None:
        cmd.model = value
    elif name == "--config" and cmd.config is None:
        cmd.config = value


def _apply_config(cmd: ServingCommand, path: str, given: set[str]) -> None:
    """The keys of a ``--config`` YAML file, as flags the command line did not give."""
    from dtkguard.modelscan.engine_config import EngineConfigError, read_engine_config

    try:
        entries = read_engine_config(path)
    except EngineConfigError as exc:
        cmd.problems.append(f"{path}: {exc}")
        return
    for name, value in entries:
        if name not in given and name != "--config":
            _apply(cmd, name, value, f"{name[2:]}: {value} ({cmd.config})")


def _request_kind(name: str, value: str) -> str | None:
    if name in WEIGHT_FLAGS and is_fp_value(value):
        return "weights"
    if name in DTYPE_FLAGS and "float8" in value.lower():
        return "weights"
    if name in KV_FLAGS and is_fp_kv(value):
        return "kv_cache"
    if name in LMDEPLOY_KV_FLAGS and value.strip().lower() in LMDEPLOY_FP8_POLICIES:
        return "kv_cache"
    return None


def _positional_model(engine: str | None, positionals: list[str]) -> str | None:
    if engine == "vllm" and len(positionals) >= 2 and positionals[0] == "serve":
        return positionals[1]
    if engine == "lmdeploy":
        for i, word in enumerate(positionals[:-1]):
            if word in _LMDEPLOY_SUB:
                return positionals[i + 1]
    return None


def _parse_environ(cmd: ServingCommand, environ: Mapping[str, str]) -> None:
    for key in WEIGHT_ENV:
        if key in environ and is_fp_value(environ[key]):
            cmd.requests.append(Request("weights", "env", f"{key}={environ[key]}", environ[key]))
    for key in KV_ENV:
        if key in environ and is_fp_kv(environ[key]):
            cmd.requests.append(Request("kv_cache", "env", f"{key}={environ[key]}", environ[key]))
    if "float8" in environ.get("DTYPE", "").lower():
        cmd.requests.append(Request("weights", "env", f"DTYPE={environ['DTYPE']}", "float8"))
    for switch in env_switches(cmd.engine):
        if switch.on(environ):
            value = environ.get(switch.name)
            text = f"{switch.name}={value}" if value is not None else f"{switch.name} (default on)"
            if switch.requires:
                text += f" with {switch.requires}={environ[switch.requires]}"
            req = Request(switch.kind, "env", text, value or "default", switch.scope)
            cmd.requests.append(req)
    if cmd.model is None and cmd.engine == "tgi":
        cmd.model = next((environ[k] for k in MODEL_ENV if environ.get(k)), None)


def is_hub_id(model: str) -> bool:
    """``org/name``: a Hugging Face hub id (also tried as a path relative to the cwd)."""
    return model.count("/") == 1 and not model.startswith((".", "/", "~"))


def env_switches(engine: str | None) -> tuple[EnvSwitch, ...]:
    """The FP8 switches of ``engine``; for a wrapper (python, unknown) those of every engine."""
    if engine in FP8_ENV:
        return FP8_ENV[engine]
    return tuple(s for switches in FP8_ENV.values() for s in switches)


def resolve_model(
    model: str | None,
    cwd: str | None = None,
    environ: Mapping[str, str] | None = None,
    root: str = "",
) -> str | None:
    """A local folder for ``model``: a path (relative to ``cwd``) or an HF cache repo id."""
    if not model:
        return None
    env = environ or {}
    candidates = []
    if os.path.isabs(model):
        candidates.append(model)
    elif cwd:
        candidates.append(os.path.join(cwd, model))
    if is_hub_id(model):
        hub = (
            env.get("HF_HUB_CACHE")
            or (os.path.join(env["HF_HOME"], "hub") if env.get("HF_HOME") else None)
            or (
                os.path.join(env["HOME"], ".cache", "huggingface", "hub")
                if env.get("HOME")
                else None
            )
        )
        if hub:
            candidates.append(os.path.join(hub, "models--" + model.replace("/", "--")))
    for path in candidates:
        for full in (path, root + path if root else None):
            if full and os.path.exists(full):
                return full
    return None


SERVING_ENGINES = frozenset({"vllm", "sglang", "lmdeploy", "tgi"})


def unresolved(cmd: ServingCommand, model_path: str | None) -> str | None:
    """Why the model a serving command names could not be found, or None when it was."""
    if model_path:
        return None
    if cmd.model:
        if is_hub_id(cmd.model):
            return (
                f"{cmd.model}: not a local path, and not in the local Hugging Face cache "
                "(HF_HUB_CACHE, HF_HOME/hub or ~/.cache/huggingface/hub)"
            )
        return f"{cmd.model}: no such file or folder"
    if cmd.engine in SERVING_ENGINES:
        return f"the {cmd.engine} command names no model dtkguard can read"
    return None


def read_process(pid: int, proc_root: str = "/proc") -> ServingProcess | None:
    """The serving command of ``pid``, or None when it is gone or not readable."""
    from dtkguard.env import procfiles

    base = os.path.join(proc_root, str(pid))
    argv = procfiles.cmdline(base)
    if not argv:
        return None
    env = procfiles.environ(base)
    environ = env or {}
    cwd = procfiles.link(base, "cwd")
    cmd = parse_command(argv, environ)
    proc = ServingProcess(pid=pid, command=cmd, cwd=cwd, environ_readable=env is not None)
    proc.model_path = resolve_model(cmd.model, cwd, environ, root=os.path.join(base, "root"))
    return proc


def scan_processes(proc_root: str = "/proc") -> list[ServingProcess]:
    """Serving processes (known engines, or any process asking for FP8), sorted by pid."""
    try:
        pids = sorted(int(n) for n in os.listdir(proc_root) if n.isdigit())
    except OSError:
        return []
    out = []
    for pid in pids:
        if pid == os.getpid():
            continue
        proc = read_process(pid, proc_root)
        if proc is None:
            continue
        cmd = proc.command
        if (
            cmd.engine in ("vllm", "sglang", "lmdeploy", "tgi")
            or cmd.requests
            or (cmd.engine == "python" and cmd.model)
        ):
            out.append(proc)
    return out
