"""Skip a test for something this machine lacks, naming it; fail instead under ``.ci/run``.

``.ci/run`` installs or starts everything the tests need (chromium, strace, Docker, Slurm) and runs
as root, so there a missing tool is a broken CI, not a reason to skip: it sets
``DTKGUARD_TEST_STRICT=1`` and `missing` fails the test.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(what: str, *, module: bool = False) -> NoReturn:
    """Skip (or, with ``DTKGUARD_TEST_STRICT`` set, fail) naming ``what`` is missing."""
    if os.environ.get("DTKGUARD_TEST_STRICT"):
        pytest.fail(f"{what} (DTKGUARD_TEST_STRICT is set: .ci/run provides it)", pytrace=False)
    pytest.skip(what, allow_module_level=module)


def root(why: str) -> None:
    """`missing` unless this process runs as root."""
    if os.geteuid() != 0:
        missing(f"{why} needs root")
