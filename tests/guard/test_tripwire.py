"""The import tripwire's module on its own: its file format, a missing file, the .pth names."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import replace
from pathlib import Path

import pytest

from dtkguard.env.interpreter import Interpreter
from dtkguard.guard import baseline as baselines
from dtkguard.guard import layers
from dtkguard.policy.compiled import CompiledPolicy

REPO = Path(__file__).resolve().parents[2]


def tripwire_module():
    spec = importlib.util.spec_from_file_location(
        "_dtkguard_tripwire_t", REPO / "plugins" / "pip" / "_dtkguard_tripwire.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def a_baseline(site: Path) -> dict:
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("x = 1\n")
    (site / "torch-1+das.dist-info").mkdir()
    (site / "torch-1+das.dist-info" / "RECORD").write_text("torch/__init__.py,,\n")

    def st(rel: str) -> dict:
        s = (site / rel).stat()
        return {"size": s.st_size, "mtime_ns": s.st_mtime_ns, "sha256": "0" * 64}

    return {
        "restore": "dtkguard restore --python /p/bin/python",
        "vendor": {
            "torch": {
                "name": "torch",
                "version": "1+das",
                "site": str(site),
                "dist_info": "torch-1+das.dist-info",
                "top_level": ["torch"],
                "record": st("torch-1+das.dist-info/RECORD"),
                "files": {"torch/__init__.py": st("torch/__init__.py")},
            }
        },
    }


def test_a_changed_file_is_named_and_only_once(tmp_path: Path, capsys, monkeypatch) -> None:
    data = a_baseline(tmp_path)
    # as in a guarded env, import finds torch in the vendor's site first (the test venv may
    # have a torch of its own further down sys.path)
    monkeypatch.syspath_prepend(str(tmp_path))
    text_file = tmp_path / "tripwire.txt"
    text_file.write_text(baselines.tripwire_text(data, "warn"))
    trip = tripwire_module()
    assert trip.tripwire("torch", str(text_file)) is None
    assert capsys.readouterr().err == ""
    trip = tripwire_module()
    (tmp_path / "torch" / "__init__.py").write_text("x = 22\n")
    trip.tripwire("torch", str(text_file))
    err = capsys.readouterr().err
    assert "torch 1+das changed since the guard recorded it: torch/__init__.py (modified)" in err
    assert "dtkguard restore --python /p/bin/python" in err
    trip.tripwire("torch", str(text_file))  # a second import attempt stays quiet
    assert capsys.readouterr().err == ""


def test_error_mode_raises_every_time(tmp_path: Path, monkeypatch) -> None:
    data = a_baseline(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    text_file = tmp_path / "tripwire.txt"
    text_file.write_text(baselines.tripwire_text(data, "error"))
    os.unlink(tmp_path / "torch" / "__init__.py")
    trip = tripwire_module()
    for _ in range(2):
        with pytest.raises(ImportError, match=r"torch/__init__.py \(missing\)"):
            trip.tripwire("torch", str(text_file))


def test_a_missing_tripwire_file_warns(tmp_path: Path, capsys) -> None:
    tripwire_module().tripwire("torch", str(tmp_path / "nothing.txt"))
    assert "missing or unreadable" in capsys.readouterr().err


def test_the_finder_names_the_vendor_modules_unless_off(tmp_path: Path) -> None:
    data = a_baseline(tmp_path / "site")
    interp = Interpreter("py", tmp_path, tmp_path, tmp_path / "site", tmp_path / "lib", "3.10")
    policy = CompiledPolicy(name="p")

    def planned(p: CompiledPolicy) -> dict[str, str]:
        return {
            layer.name: layer.content
            for layer in layers.planned_layers(interp, p, {}, baseline=data)
        }

    finder = planned(policy)["finder"]
    assert "frozenset(('torch',))" in finder
    assert repr(str(interp.policy_file)) in finder
    assert "frozenset(())" in planned(replace(policy, on_import="off"))["finder"]
    # the .pth is one line, the same in every environment: it only imports the finder
    line = planned(policy)["hook.pth"]
    assert line.count("\n") == 1 and line.endswith("import _dtkguard_finder\n")
    assert line == planned(replace(policy, on_import="off"))["hook.pth"]
