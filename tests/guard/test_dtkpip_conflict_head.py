"""dtkpip explains a resolution that failed on the vendor pins from what the hook found of the
request without them (`dtkpip._requested_head`), where that holds every requested package."""

from __future__ import annotations

from dtkguard.guard.dtkpip import _requested_head
from dtkguard.guard.pipargs import split_pip


def _report(*dists: tuple[str, str]) -> dict:
    return {
        "environment": {"python_version": "3.11"},
        "install": [
            {
                "metadata": {"name": n, "version": v, "requires_dist": [f"torch=={v}"]},
                "download_info": {"url": f"file:///w/{n}-{v}-py3-none-any.whl"},
            }
            for n, v in dists
        ],
    }


def _head(args: list[str], report: dict):
    return _requested_head(split_pip(["install", *args]), report)


def test_exact_pins_found_make_the_head() -> None:
    report = _report(("vllm", "0.9.2"), ("pins-torch", "2.0"), ("other", "1.0"))
    head = _head(["--no-index", "-f", "/w", "vLLM==0.9.2", "pins_torch==2.0"], report)
    assert head is not None and head.ok and head.environment == {"python_version": "3.11"}
    assert sorted((p.key, p.version, p.requested) for p in head.install) == [
        ("pins-torch", "2.0", True),
        ("vllm", "0.9.2", True),
    ]
    assert head.install[0].url.startswith("file:///w/")


def test_anything_else_is_planned_again() -> None:
    report = _report(("vllm", "0.9.2"), ("vllm", "0.9.2+cu1"))
    for args in (
        ["vllm"],  # no exact version: the release pip picks is not known
        ["vllm>=0.9.2"],
        ["vllm==0.9.*"],
        ["vllm[audio]==0.9.2"],
        ["vllm==0.9.2; python_version>'3'"],
        ["vllm==0.9.2", "rich==13.0"],  # rich is not in the report
        ["vllm==0.9.2", "-r", "reqs.txt"],
        ["-r", "reqs.txt"],
        ["./vllm-0.9.2-py3-none-any.whl"],
    ):
        assert _head(args, report) is None, args
    # two releases match ==0.9.2 (a local label): which one pip picks is not known
    assert _head(["vllm==0.9.2"], report) is None
    assert _head(["vllm==0.9.2"], {}) is None
    assert _head(["vllm==0.9.2"], _report(("vllm", "0.9.1"))) is None
