"""Where the guard keeps its files inside an interpreter's prefix: ``<prefix>/dtkguard/`` holds
the compiled policy, the baseline, the override log, the journal and the vault."""

from __future__ import annotations

#: the folder of the guard's files inside an interpreter's prefix
STATE_DIR = "dtkguard"
