"""Subcommands: each module has ``register(subparsers, name)`` and ``run(args) -> int``."""
