"""The baseline check on an image root: found under the venv's prefix, compared inside the root."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.cli.test_cli import dtkguard
from tests.sitetree import vendor_site


def _entry(site: Path, inner_site: str, rels: list[str]) -> dict:
    def st(rel: str) -> dict:
        path = site / rel
        s = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        return {"size": s.st_size, "mtime_ns": s.st_mtime_ns, "sha256": digest}

    dist_info = "torch-2.4.1+das.opt1.dtk25041.dist-info"
    record = st(f"{dist_info}/RECORD")
    return {
        "name": "torch",
        "version": "2.4.1+das.opt1.dtk25041",
        "site": inner_site,
        "dist_info": dist_info,
        "top_level": ["torch"],
        "record": record,
        "files": {rel: st(rel) for rel in rels},
    }


def image_with_baseline(tmp_path: Path) -> tuple[Path, Path, dict]:
    root = tmp_path / "img"
    venv = root / "opt" / "venv"
    (venv / "pyvenv.cfg").parent.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    inner_site = "/opt/venv/lib/python3.10/site-packages"
    site = vendor_site(root / inner_site.lstrip("/"))
    data = {
        "format": "dtkguard-baseline/1",
        "created": "2026-11-30T00:00:00Z",
        "python": "/opt/venv/bin/python",
        "prefix": "/opt/venv",
        "policy": "dtk-25.04.1",
        "restore": "dtkguard restore --python /opt/venv/bin/python",
        "dists": {},
        "vendor": {"torch": _entry(site, inner_site, ["torch/__init__.py", "torch/version.py"])},
        "lock": None,
    }
    (venv / "dtkguard").mkdir()
    (venv / "dtkguard" / "baseline.json").write_text(json.dumps(data))
    return root, site, data


def findings(root: Path) -> dict[tuple[str, str], dict]:
    proc = dtkguard("check", "--root", str(root), "-f", "json")
    assert proc.returncode in (0, 1), proc.stderr
    return {(f["rule"], f["subject"]): f for f in json.loads(proc.stdout)["findings"]}


def test_check_under_root_uses_the_image_baseline(tmp_path: Path) -> None:
    root, site, _ = image_with_baseline(tmp_path)
    assert findings(root) == {}
    (site / "torch" / "version.py").write_text("cuda = '12.4'\nhip = None\n")
    found = findings(root)
    changed = found[("vendor-files-changed", "torch")]
    assert "torch/version.py (modified)" in changed["message"]
    assert changed["remediation"].endswith("dtkguard restore --python /opt/venv/bin/python")
    assert changed["location"] == "/opt/venv/lib/python3.10/site-packages/" + (
        "torch-2.4.1+das.opt1.dtk25041.dist-info"
    )


def test_baseline_paths_resolve_inside_the_root(tmp_path: Path) -> None:
    """A baseline naming files outside the root (absolute, ``..``, a symlink) reads only
    inside it: the host's files are never stat'ed or hashed."""
    root, site, data = image_with_baseline(tmp_path)
    secret = tmp_path / "host-secret"
    secret.write_text("s3cret\n")
    entry = data["vendor"]["torch"]
    digest = hashlib.sha256(b"s3cret\n").hexdigest()
    host = secret.stat()
    recorded = {"size": host.st_size, "mtime_ns": host.st_mtime_ns, "sha256": digest}
    entry["files"][f"../../../../../../..{secret}"] = recorded
    (site / "torch" / "link.py").symlink_to(secret)
    entry["files"]["torch/link.py"] = recorded
    path = root / "opt" / "venv" / "dtkguard" / "baseline.json"
    path.write_text(json.dumps(data))
    changed = findings(root)[("vendor-files-changed", "torch")]
    files = {f["path"]: f["change"] for f in changed["evidence"]["files"]}
    assert files == {f"../../../../../../..{secret}": "missing", "torch/link.py": "missing"}


def test_a_tampered_or_broken_baseline_is_a_finding(tmp_path: Path) -> None:
    root, _, _ = image_with_baseline(tmp_path)
    path = root / "opt" / "venv" / "dtkguard" / "baseline.json"
    inner = "/opt/venv/dtkguard/baseline.json"
    good = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest = path.parent / "manifest.json"
    manifest.write_text(json.dumps({"files": {inner: {"layer": "baseline", "sha256": good}}}))
    assert findings(root) == {}
    manifest.write_text(json.dumps({"files": {inner: {"layer": "baseline", "sha256": "0" * 64}}}))
    found = findings(root)
    assert "differs from the guard's manifest" in found[("baseline-tampered", inner)]["message"]
    path.write_text("{not json")
    found = findings(root)
    assert found[("baseline-tampered", inner)]["severity"] == "high"
