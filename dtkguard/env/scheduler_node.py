"""Which node a report comes from, as the scheduler names it.

Host names do not tell nodes apart where several share one (containers, test clusters, slurmd
``-N`` nodes on one host), so a report carries the scheduler's node name and `report merge` keys
on it, with the host name only as the fallback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: where the node name comes from, first match wins: the Kubernetes manifests set
#: ``DTKGUARD_NODE`` from the downward API (``spec.nodeName``); Slurm sets ``SLURMD_NODENAME``
NODE_VARIABLES: tuple[str, ...] = ("DTKGUARD_NODE", "SLURMD_NODENAME")


def scheduler_node(environ: Mapping[str, str] | None = None) -> str:
    """The scheduler's name of this node, or "" outside a scheduler."""
    env = os.environ if environ is None else environ
    return next((env[v].strip() for v in NODE_VARIABLES if env.get(v, "").strip()), "")
