"""`Names` counts in C what a loop over the names would count, name by name."""

from __future__ import annotations

import random

from dtkguard.modelscan.names import Names

PARTS = ("model", "layers", "0", "scaled_fp8", "weight", "k_scale", "", "scale", "fp8")


def _names(rng: random.Random) -> list[str]:
    out = []
    for _ in range(rng.randint(0, 6)):
        name = ".".join(rng.choice(PARTS) for _ in range(rng.randint(1, 4)))
        out.append(name + ("\n" if rng.random() < 0.05 else ""))
    return out


def test_has_leaf_and_ending_agree_with_a_loop() -> None:
    rng = random.Random(30)
    seen = set()
    for _ in range(2000):
        names = _names(rng)
        found = Names(names)
        for leaf in ("scaled_fp8", "weight", "", "scale", "fp8", "k_scale"):
            want = any(n.rpartition(".")[2] == leaf for n in names)
            assert found.has_leaf(leaf) is want, (names, leaf)
            seen.add(want)
        for suffix in ("_scale", ".weight", "scale", ("_scale", ".k_scale"), ("8", ".scaled_fp8")):
            assert found.ending(suffix) == sum(n.endswith(suffix) for n in names), (names, suffix)
    assert seen == {True, False}
