"""The repository's layout: every package of dtkguard ships in the wheel."""

from __future__ import annotations

from pathlib import Path

import tomlkit

REPO = Path(__file__).resolve().parents[1]


def test_every_dtkguard_package_is_listed_for_the_wheel():
    listed = set(
        tomlkit.parse((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(p.parent.relative_to(REPO).parts)
        for p in (REPO / "dtkguard").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert found - listed == set()
