"""The ``--config FILE.yaml`` of ``vllm serve`` and ``sglang.launch_server``, read as flags.

Both engines load a YAML mapping whose keys are the long option names (``kv-cache-dtype``, or
``kv_cache_dtype``) and add them to the command line; a flag given on the command line wins
over the file. Only top-level ``key: value`` scalars are read (the options that ask for FP8 and
name the model are scalars); nested blocks and lists are skipped. No YAML library: the file is
capped, read as UTF-8, never evaluated.
"""

from __future__ import annotations

import os

#: a serving config is a few hundred bytes; a larger file is refused, not parsed
MAX_CONFIG = 1 << 20
MAX_KEYS = 4096


class EngineConfigError(ValueError):
    """A --config file that cannot be read (one line)."""


def _scalar(text: str) -> str | None:
    """The value of ``key: VALUE``: quotes removed, a trailing comment dropped; None for a
    block, list or flow value."""
    text = text.strip()
    if not text or text[0] in "|>[{&*!":
        return None
    if text[0] in "'\"":
        end = text.find(text[0], 1)
        return text[1:end] if end > 0 else None
    return text.split(" #", 1)[0].strip() or None


def read_engine_config(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """``(--option, value)`` for every top-level scalar of the YAML file at ``path``."""
    from dtkguard.util.safe_read import TooLarge, read_capped, reason

    try:
        text = read_capped(path, MAX_CONFIG, what="serving config").decode("utf-8")
    except TooLarge as exc:
        raise EngineConfigError(str(exc)) from None
    except OSError as exc:
        raise EngineConfigError(reason(exc)) from None
    except UnicodeDecodeError:
        raise EngineConfigError("not UTF-8") from None
    out: list[tuple[str, str]] = []
    for line in text.splitlines()[: MAX_KEYS * 4]:
        if not line or line[0] in " \t#-" or ":" not in line or line.startswith("---"):
            continue
        key, _, rest = line.partition(":")
        key = key.strip().strip("'\"")
        value = _scalar(rest)
        if key and value is not None and " " not in key:
            out.append(("--" + key.replace("_", "-"), value))
    return out[:MAX_KEYS]
