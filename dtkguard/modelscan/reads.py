"""What each model reader reads, in bytes, and what it never reads: the one text that
``scan-model --help`` prints and docs/fp8.md repeats (a test keeps them equal)."""

from __future__ import annotations

#: (reader as in the JSON facts' ``read``, files, what is read, what is never read)
WHAT_IS_READ: tuple[tuple[str, str, str, str], ...] = (
    (
        "config",
        "config.json of the model folder",
        "the whole file, at most 16 MiB",
        "a config.json in a subfolder",
    ),
    (
        "sidecar",
        "hf_quant_config.json, quantization_config.json (model folder), dtypes.json",
        "the whole file, at most 16 MiB",
        "other JSON files (tokenizer, generation config)",
    ),
    (
        "index",
        "*.safetensors.index.json",
        "the whole file, at most 32 MiB (the first index of a model)",
        "more than the file (the shards are read as safetensors)",
    ),
    (
        "safetensors",
        "*.safetensors",
        "8 bytes, then the JSON header of the length they give (at most 16 MiB)",
        "tensor data",
    ),
    (
        "pickle",
        "*.bin, *.pt, *.pth, *.ckpt (zip)",
        "4 bytes, the zip directory, and each */data.pkl (at most 16, 256 MiB each)",
        "tensor storages (data/N); nothing is unpickled",
    ),
    (
        "pickle",
        "*.bin, *.pt, *.pth, *.ckpt (legacy)",
        "4 bytes, then the first 4 pickles (at most 256 MiB) and the byte after them",
        "the storages after them; nothing is unpickled",
    ),
    (
        "gguf",
        "*.gguf",
        "magic, version, counts, keys and values, tensor infos",
        "tensor data, and arrays of fixed-size values (skipped by seeking)",
    ),
)


def help_text() -> str:
    """The ``scan-model --help`` epilog: one paragraph per format."""
    import textwrap

    def para(text: str) -> str:
        return textwrap.fill(text, 98, initial_indent="  ", subsequent_indent="      ")

    lines = ["what is read, per file (the JSON facts' read and bytes_read count it per reader):"]
    for reader, files, read, never in WHAT_IS_READ:
        lines.append(para(f"{files} [{reader}]: {read}; never {never}"))
    lines.append(para(CONFIG_ONLY))
    return "\n".join(lines)


#: what a folder without weights gets (README, docs/fp8.md and --help say the same)
CONFIG_ONLY = (
    "A folder of config files only (weights not downloaded) is judged by them: declared "
    "FP8/FP4 is a finding, anything else passes (exit 0) with a note; a path where nothing "
    "could be read is exit 3."
)
